package rank

import (
	"errors"
	"fmt"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// LowLatencyMaxBytes is the default largest tensor of a [LowLatency]
// instance.
const LowLatencyMaxBytes = 256 << 10

// LowLatency is an all-reduce for small tensors that needs no barrier and
// reads no peer memory: every rank writes its input, word by word with the
// call's number as a flag, into every rank's workspace, and reduces once
// all words of the call have arrived. One kernel, no round trip: its
// latency is one NVLink write. Calls alternate between two workspace
// halves, so consecutive calls may be queued back to back.
//
// Every member of the group must make the same calls in the same order;
// the instance is collective like the group itself. A rank holds one
// workspace of 4 x world x maxBytes bytes per instance.
type LowLatency struct {
	r         *Rank
	group     string
	buf       device.Ptr
	h         *SymmetricMemory
	maxBytes  uint64
	slotBytes uint64
}

// NewLowLatency creates an instance for tensors of up to maxBytes bytes (0:
// LowLatencyMaxBytes) on group: it allocates and rendezvouses the
// workspace, zeroes it and synchronises with every member, so that no
// peer's first packets can land before the zeroes. Collective.
func (r *Rank) NewLowLatency(group string, maxBytes uint64) (*LowLatency, error) {
	if maxBytes == 0 {
		maxBytes = LowLatencyMaxBytes
	}
	if maxBytes%4 != 0 || maxBytes > 1<<30 {
		return nil, fmt.Errorf("rank %d: low-latency all-reduce on %q: largest tensor of %d bytes (want a multiple of 4, at most 1 GiB)", r.id, group, maxBytes)
	}
	fail := func(err error) (*LowLatency, error) {
		return nil, fmt.Errorf("rank %d: low-latency all-reduce on %q: %w", r.id, group, err)
	}
	members, err := r.group(group)
	if err != nil {
		return fail(err)
	}
	slot, total := kernels.LowLatencyWorkspace(maxBytes, len(members))
	l := &LowLatency{r: r, group: group, maxBytes: maxBytes, slotBytes: slot}
	if l.buf, err = r.alloc.alloc(total, ""); err != nil {
		return fail(fmt.Errorf("alloc %d bytes: %w", total, err))
	}
	fail = func(err error) (*LowLatency, error) {
		err = errors.Join(err, r.alloc.free(l.buf))
		return nil, fmt.Errorf("rank %d: low-latency all-reduce on %q: %w", r.id, group, err)
	}
	if err := r.dev.Memset(r.stream, l.buf, 0, total); err != nil {
		return fail(fmt.Errorf("zero the workspace: %w", err))
	}
	if l.h, err = r.rendezvous(l.buf, group); err != nil {
		return fail(fmt.Errorf("rendezvous: %w", err))
	}
	if err := l.h.Barrier(0, r.timeout); err != nil {
		return fail(fmt.Errorf("barrier after zeroing the workspace: %w", err))
	}
	return l, nil
}

// MaxBytes is the largest tensor the instance reduces.
func (l *LowLatency) MaxBytes() uint64 { return l.maxBytes }

// Group is the group the instance reduces over.
func (l *LowLatency) Group() string { return l.group }

// AllReduce reduces in across the group into out. Both are device tensors
// of this rank (plain or symmetric, 4-byte aligned, a multiple of 4 bytes
// long, at most MaxBytes) of one dtype and length; out may be in itself.
// Collective; asynchronous when the rank is (see [Rank.SetAsync]).
func (l *LowLatency) AllReduce(in Tensor, op device.ReduceOp, out Tensor) error {
	r := l.r
	if err := l.allReduce(in, op, out); err != nil {
		return fmt.Errorf("rank %d: low-latency all-reduce on %q: %w", r.id, l.group, err)
	}
	return nil
}

func (l *LowLatency) allReduce(in Tensor, op device.ReduceOp, out Tensor) error {
	r := l.r
	if l.h == nil {
		return errors.New("the instance is closed")
	}
	if err := checkOp(in, op); err != nil {
		return err
	}
	if out.DType != in.DType || out.Numel != in.Numel {
		return fmt.Errorf("output %v does not match input %v", out, in)
	}
	bytes := in.Bytes()
	if bytes > l.maxBytes {
		return fmt.Errorf("input %v has %d bytes, above the instance's %d (use one-shot or two-shot)", in, bytes, l.maxBytes)
	}
	if bytes == 0 {
		return nil
	}
	if _, err := kernels.CheckAlignment(0, bytes, in.DType); err != nil {
		return fmt.Errorf("input %v: %w", in, err)
	}
	if in.Ptr == 0 || out.Ptr == 0 || in.Ptr%4 != 0 || out.Ptr%4 != 0 {
		return fmt.Errorf("input %v and output %v must be non-null and 4-byte aligned", in, out)
	}
	world := len(l.h.members)
	blocks, threads := kernels.ShapeMax(kernels.LowLatencyAllReduce, in.Numel, in.DType, world, l.h.smBudget(), r.maxBlocks)
	args := kernels.AllReduceArgs{
		Rank: int32(l.h.rank), World: int32(world), DType: in.DType, Op: op,
		BufferPtrs: l.h.BufferPtrsDev(), PadPtrs: l.h.SignalPadPtrsDev(), PadBytes: l.h.padSize,
		Numel: in.Numel, Input: in.Ptr, Output: out.Ptr, TimeoutNs: int64(r.timeout),
		SlotBytes: l.slotBytes,
	}
	launch := device.Launch{Kernel: kernels.LowLatencyAllReduce, Blocks: blocks, Threads: threads, Args: args, Group: l.h.label}
	r.logLaunch(l.group, launch)
	err := r.enqueue(launch)
	r.logFailure(launch.Kernel, l.group, err)
	return err
}

// Close frees the workspace. Collective only in that every member should
// close its instance; a closed instance refuses further calls.
func (l *LowLatency) Close() error {
	if l.h == nil {
		return nil
	}
	l.h = nil
	if err := l.r.alloc.free(l.buf); err != nil {
		return fmt.Errorf("rank %d: low-latency all-reduce on %q: close: %w", l.r.id, l.group, err)
	}
	return nil
}
