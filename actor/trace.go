package actor

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
)

// Event is one entry of a [Trace].
type Event struct {
	Step   int64  // scheduling step at which it happened
	Task   int    // task ID, -1 for the scheduler itself
	Kind   string // "run", "spawn", "store", "signal", ...
	Detail string
}

func (e Event) String() string {
	return fmt.Sprintf("%d t%d %s %s", e.Step, e.Task, e.Kind, e.Detail)
}

// Trace is an append-only event log. Its hash identifies a run: two runs
// with the same hash took the same decisions and saw the same interactions.
type Trace struct {
	h      hash.Hash
	n      int64
	keep   bool
	events []Event
	buf    []byte
}

// NewTrace returns an empty trace; keep retains events for [Trace.Events].
func NewTrace(keep bool) *Trace {
	return &Trace{h: sha256.New(), keep: keep}
}

// Add appends an event.
func (t *Trace) Add(step int64, task int, kind, detail string) {
	b := t.buf[:0]
	b = binary.AppendVarint(b, step)
	b = binary.AppendVarint(b, int64(task))
	b = binary.AppendUvarint(b, uint64(len(kind)))
	b = append(b, kind...)
	b = binary.AppendUvarint(b, uint64(len(detail)))
	b = append(b, detail...)
	t.h.Write(b)
	t.buf = b
	t.n++
	if t.keep {
		t.events = append(t.events, Event{Step: step, Task: task, Kind: kind, Detail: detail})
	}
}

// Len is the number of events added.
func (t *Trace) Len() int64 { return t.n }

// Hash is the hex SHA-256 of every event added so far, in order.
func (t *Trace) Hash() string { return hex.EncodeToString(t.h.Sum(nil)) }

// Events returns the kept events (nil unless the trace keeps them).
func (t *Trace) Events() []Event { return t.events }
