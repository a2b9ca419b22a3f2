// Package barriermut breaks one barrier of a simulated kernel on purpose,
// for tests that check the protocol's safety nets (the race detector, the
// mutant suite) catch the breakage. A block wrapper counts a block's
// barriers (its calls of Lanes) and rewrites one of them.
package barriermut

import (
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/signal"
)

// Mutation says which barrier of which kernel breaks, and how.
type Mutation struct {
	Kernel   string
	Barrier  int           // which Lanes call of a block, counted from 1
	Skip     bool          // the barrier does nothing
	SkipWait bool          // waits report success without consuming the signal
	Put      *signal.Order // the order of the barrier's puts, when set
	Wait     *signal.Order // the order of its waits, when set
	Scope    *signal.Scope // the scope of both, when set
}

// Order returns a pointer to o, for Mutation's fields.
func Order(o signal.Order) *signal.Order { return &o }

// Scope returns a pointer to s, for Mutation's fields.
func Scope(s signal.Scope) *signal.Scope { return &s }

// Wrap returns b with m applied when b runs m's kernel, b itself otherwise
// (a sim.Config WrapBlock).
func (m Mutation) Wrap(b kernels.Block) kernels.Block {
	if b.Kernel() != m.Kernel {
		return b
	}
	return &block{Block: b, m: m}
}

type block struct {
	kernels.Block
	m     Mutation
	calls int
}

func (b *block) Lanes(n int, fn func(kernels.Block) error) error {
	b.calls++
	if b.calls != b.m.Barrier {
		return b.Block.Lanes(n, fn)
	}
	if b.m.Skip {
		return nil
	}
	return b.Block.Lanes(n, func(l kernels.Block) error { return fn(&lane{Block: l, m: b.m}) })
}

type lane struct {
	kernels.Block
	m Mutation
}

// CAS32 rewrites the barrier's puts (Idle -> Raised) and waits (Raised ->
// Idle).
func (l *lane) CAS32(p device.Ptr, old, new uint32, o signal.Order, s signal.Scope) (uint32, error) {
	if old == signal.Raised && l.m.SkipWait {
		return signal.Raised, nil
	}
	if old == signal.Idle && l.m.Put != nil {
		o = *l.m.Put
	}
	if old == signal.Raised && l.m.Wait != nil {
		o = *l.m.Wait
	}
	if l.m.Scope != nil {
		s = *l.m.Scope
	}
	return l.Block.CAS32(p, old, new, o, s)
}
