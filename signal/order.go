package signal

import "fmt"

// Order is the memory order of an atomic operation, as in C++ and PTX.
type Order int

// The memory orders. Relaxed orders nothing; a Release makes the issuing
// thread's earlier accesses visible to whoever acquires the value it wrote;
// an Acquire makes what the matching release published visible to the
// issuing thread's later accesses; AcqRel does both.
const (
	Relaxed Order = iota
	Acquire
	Release
	AcqRel
)

// Valid reports whether o is one of the defined orders.
func (o Order) Valid() bool { return o >= Relaxed && o <= AcqRel }

// Releases reports whether o has release semantics (Release or AcqRel).
func (o Order) Releases() bool { return o == Release || o == AcqRel }

// Acquires reports whether o has acquire semantics (Acquire or AcqRel).
func (o Order) Acquires() bool { return o == Acquire || o == AcqRel }

func (o Order) String() string {
	switch o {
	case Relaxed:
		return "relaxed"
	case Acquire:
		return "acquire"
	case Release:
		return "release"
	case AcqRel:
		return "acq_rel"
	}
	return fmt.Sprintf("Order(%d)", int(o))
}

// Scope is the set of threads an atomic operation is coherent with, as in
// PTX: .cta (the threads of one block), .gpu (one device) and .sys (every
// device and the host).
type Scope int

// The scopes, narrowest first.
const (
	Block Scope = iota
	GPU
	System
)

// Valid reports whether s is one of the defined scopes.
func (s Scope) Valid() bool { return s >= Block && s <= System }

func (s Scope) String() string {
	switch s {
	case Block:
		return "block"
	case GPU:
		return "gpu"
	case System:
		return "system"
	}
	return fmt.Sprintf("Scope(%d)", int(s))
}

// Needed is the narrowest scope that covers two threads: Block when they run
// in the same block, GPU when on the same device, System otherwise.
func Needed(sameDevice, sameBlock bool) Scope {
	switch {
	case sameDevice && sameBlock:
		return Block
	case sameDevice:
		return GPU
	}
	return System
}

// Synchronizes reports whether an atomic write with order rel at scope rs,
// read by an atomic read with order acq at scope as, creates a
// happens-before edge between two threads whose relation needs scope need
// (see [Needed]). Both operations must be atomic (plain loads and stores never
// synchronise), the write must release, the read must acquire, and both
// scopes must include the other thread: a GPU- or block-scoped release never
// synchronises with another device.
func Synchronizes(rel Order, rs Scope, acq Order, as Scope, need Scope) bool {
	return rel.Releases() && acq.Acquires() && rs >= need && as >= need
}
