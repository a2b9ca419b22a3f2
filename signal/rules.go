package signal

import "fmt"

// The values a slot holds under the protocol.
const (
	Idle   uint32 = 0 // no signal pending
	Raised uint32 = 1 // one signal pending
)

// Op is a signal operation.
type Op int

// The signal operations.
const (
	Put  Op = iota // raise the slot in the destination's pad
	Wait           // consume the slot in the waiter's own pad
)

// Valid reports whether op is Put or Wait.
func (op Op) Valid() bool { return op == Put || op == Wait }

func (op Op) String() string {
	switch op {
	case Put:
		return "put"
	case Wait:
		return "wait"
	}
	return fmt.Sprintf("Op(%d)", int(op))
}

// Swap is the compare-and-swap op performs: put swaps Idle for Raised, wait
// swaps Raised for Idle.
func (op Op) Swap() (old, new uint32) {
	if op == Put {
		return Idle, Raised
	}
	return Raised, Idle
}

// Outcome is what a signal operation does after one compare-and-swap.
type Outcome int

// The outcomes of one compare-and-swap attempt.
const (
	// Done: the swap happened; the operation is complete.
	Done Outcome = iota
	// Retry: the slot holds the value op would write (put: the previous
	// signal is not consumed yet; wait: no signal yet). Wait for the slot to
	// change and try again.
	Retry
	// Corrupt: the slot holds a value the protocol never writes.
	Corrupt
)

func (o Outcome) String() string {
	switch o {
	case Done:
		return "done"
	case Retry:
		return "retry"
	case Corrupt:
		return "corrupt"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Next classifies the value prev that a compare-and-swap by op found in the
// slot.
func (op Op) Next(prev uint32) Outcome {
	old, new := op.Swap()
	switch prev {
	case old:
		return Done
	case new:
		return Retry
	}
	return Corrupt
}

// Ready reports whether a slot holding v would let op's compare-and-swap
// succeed: what a blocked operation waits for.
func (op Op) Ready(v uint32) bool {
	old, _ := op.Swap()
	return v == old
}

// HostOrder is the order of a signal operation issued on its own (the
// put_signal, wait_signal and barrier kernels): puts release, waits acquire,
// so data written before a put is visible after the matching wait.
func (op Op) HostOrder() Order {
	if op == Put {
		return Release
	}
	return Acquire
}

// CorruptError reports a slot that holds a value no signal operation writes.
type CorruptError struct {
	Slot  Slot
	Value uint32
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%v holds 0x%08x, want %d or %d (pad not zeroed or overwritten)",
		e.Slot, e.Value, Idle, Raised)
}
