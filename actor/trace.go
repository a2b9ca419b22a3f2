package actor

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"strings"
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
//
// Events are hashed as binary records. An event added with [Trace.Addf]
// is hashed as its format and its arguments' values; its text is only
// formatted when the trace keeps its events, so that recording costs no
// string formatting in runs that only want the hash.
type Trace struct {
	h      hash.Hash
	n      int64
	keep   bool
	events []Event
	buf    []byte // records not yet written to h
}

// traceFlush is how many bytes of records the trace buffers before it
// hashes them.
const traceFlush = 4 << 10

// Record tags: the first byte of every hashed record.
const (
	recText   = 't' // Add: kind and detail text
	recFormat = 'f' // Addf: kind, format and typed arguments
)

// Argument tags of an Addf record.
const (
	argInt    = 'i'
	argUint   = 'u'
	argString = 's'
	argFalse  = 'F'
	argTrue   = 'T'
)

// NewTrace returns an empty trace; keep retains events for [Trace.Events].
func NewTrace(keep bool) *Trace {
	return &Trace{h: sha256.New(), keep: keep, buf: make([]byte, 0, traceFlush+256)}
}

// Add appends an event.
func (t *Trace) Add(step int64, task int, kind, detail string) {
	b := t.header(recText, step, task, kind)
	b = appendString(b, detail)
	t.done(b)
	if t.keep {
		t.events = append(t.events, Event{Step: step, Task: task, Kind: kind, Detail: detail})
	}
}

// Addf appends an event whose detail is format applied to args, as
// fmt.Sprintf would write it. The hash covers format and the arguments'
// values, not the text, which is only formatted when the trace keeps its
// events. The arguments must be of type int, int64, uint64, uint32, uint,
// string or bool (convert named types to one of those); any other type
// panics.
func (t *Trace) Addf(step int64, task int, kind, format string, args ...any) {
	// Lanes record on deep stacks: this frame stays small (the keeping
	// and the panic are calls), so that a record seldom grows a stack.
	b := t.header(recFormat, step, task, kind)
	b = appendString(b, format)
	b = binary.AppendUvarint(b, uint64(len(args)))
	for i, a := range args {
		switch v := a.(type) {
		case int:
			b = binary.AppendVarint(append(b, argInt), int64(v))
		case int64:
			b = binary.AppendVarint(append(b, argInt), v)
		case uint64:
			b = binary.AppendUvarint(append(b, argUint), v)
		case uint32:
			b = binary.AppendUvarint(append(b, argUint), uint64(v))
		case uint:
			b = binary.AppendUvarint(append(b, argUint), uint64(v))
		case string:
			b = appendString(append(b, argString), v)
		case bool:
			if v {
				b = append(b, argTrue)
			} else {
				b = append(b, argFalse)
			}
		default:
			badArg(format, i)
		}
	}
	t.done(b)
	if t.keep {
		t.keepf(step, task, kind, format, args)
	}
}

// badArg panics for the argument i of an Addf with format, of a type
// Addf does not take.
//
//go:noinline
func badArg(format string, i int) {
	panic("actor: Trace.Addf: argument " + strconv.Itoa(i) + " of " + strconv.Quote(format) + " has an unsupported type")
}

// keepf keeps an event of Addf, formatting its text.
//
//go:noinline
func (t *Trace) keepf(step int64, task int, kind, format string, args []any) {
	t.events = append(t.events, Event{Step: step, Task: task, Kind: kind, Detail: sprintf(format, args)})
}

// sprintf formats args, already checked by Addf, without letting them
// escape (so that callers' arguments stay on their stacks): each is copied
// into a fresh interface value.
func sprintf(format string, args []any) string {
	copies := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case int:
			copies[i] = v
		case int64:
			copies[i] = v
		case uint64:
			copies[i] = v
		case uint32:
			copies[i] = v
		case uint:
			copies[i] = v
		case string:
			copies[i] = strings.Clone(v)
		case bool:
			copies[i] = v
		}
	}
	return fmt.Sprintf(format, copies...)
}

// header starts a record in the buffer.
func (t *Trace) header(tag byte, step int64, task int, kind string) []byte {
	b := append(t.buf, tag)
	b = binary.AppendVarint(b, step)
	b = binary.AppendVarint(b, int64(task))
	return appendString(b, kind)
}

// done ends a record, hashing the buffer once it is full enough.
func (t *Trace) done(b []byte) {
	t.n++
	if len(b) >= traceFlush {
		t.h.Write(b)
		b = b[:0]
	}
	t.buf = b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Len is the number of events added.
func (t *Trace) Len() int64 { return t.n }

// Hash is the hex SHA-256 of every event added so far, in order.
func (t *Trace) Hash() string {
	t.h.Write(t.buf)
	t.buf = t.buf[:0]
	return hex.EncodeToString(t.h.Sum(nil))
}

// Events returns the kept events (nil unless the trace keeps them).
func (t *Trace) Events() []Event { return t.events }
