package rank

import (
	"fmt"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/signal"
)

// checkOp validates what every collective takes.
func checkOp(in Tensor, op device.ReduceOp) error {
	if !in.DType.Valid() {
		return fmt.Errorf("unsupported dtype %v (want float32, bfloat16 or float16)", in.DType)
	}
	if !op.Valid() {
		return fmt.Errorf("unsupported reduce op %v (want sum, avg, max or min)", op)
	}
	return in.checkSize()
}

// prepare resolves a symmetric input: its allocation's handle on group (a
// rendezvous on first use, collective like the reduction itself), its byte
// offset inside the buffer, checked for alignment, and the width of the
// kernel's vectors for it.
func (r *Rank) prepare(in Tensor, op device.ReduceOp, group string) (h *SymmetricMemory, offset uint64, vec device.Ptr, err error) {
	if err := checkOp(in, op); err != nil {
		return nil, 0, 0, err
	}
	if _, err := r.alloc.find(in.Ptr, in.Bytes()); err != nil {
		return nil, 0, 0, fmt.Errorf("input %v: %w", in, err)
	}
	if h, err = r.rendezvous(in.Ptr, group); err != nil {
		r.logFailure("rendezvous", group, err)
		return nil, 0, 0, err
	}
	offset = uint64(in.Ptr - h.blk.data)
	v, err := kernels.CheckAlignment(offset, in.Bytes(), in.DType)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("input %v: %w", in, err)
	}
	return h, offset, device.Ptr(v), nil
}

// checkPlain checks a tensor the kernel writes or reads only locally (an
// output, or the local input of a copy form) against the symmetric input:
// the same dtype and length and 4-byte aligned. 4 bytes is the whole
// alignment rule: a tensor that is not aligned to the kernel's vector is
// staged (see [Rank.launch]). It may lie in a symmetric buffer, this one or
// another, but not where peers reach during the collective: on the input's
// own view (peers read it, and two-shot writes its reduced chunks there),
// nor on a signal pad.
func (r *Rank) checkPlain(what string, in, t Tensor) error {
	if t.DType != in.DType || t.Numel != in.Numel {
		return fmt.Errorf("%s %v does not match input %v", what, t, in)
	}
	if t.Numel > 0 && t.Ptr == 0 {
		return fmt.Errorf("%s is a null pointer", what)
	}
	if t.Numel > 0 && t.Ptr%4 != 0 {
		return fmt.Errorf("%s %v is not 4-byte aligned", what, t)
	}
	if t.Numel == 0 {
		return nil
	}
	if overlaps(t.Ptr, t.Bytes(), in.Ptr, in.Bytes()) {
		return fmt.Errorf("%s %v overlaps the input %v, which peers read during the collective", what, t, in)
	}
	for _, b := range r.alloc.blocks {
		if overlaps(t.Ptr, t.Bytes(), b.base, uint64(b.data-b.base)) {
			return fmt.Errorf("%s %v overlaps the signal pads of the symmetric buffer at %v", what, t, b.data)
		}
	}
	return nil
}

// overlaps reports whether [p, p+n) and [q, q+m) share a byte.
func overlaps(p device.Ptr, n uint64, q device.Ptr, m uint64) bool {
	if n == 0 || m == 0 {
		return false
	}
	if p >= q {
		return uint64(p-q) < m
	}
	return uint64(q-p) < n
}

// launch queues an all-reduce kernel on the rank's stream and, unless the
// rank is asynchronous, waits for it. The kernels move vectors of vec bytes
// and need their local input and output aligned to them: a local input
// that is not is first copied into the symmetric buffer (as the copy form
// would), and an output that is not receives the result through the rank's
// staging tensor, copied after the kernel on the same stream.
func (r *Rank) launch(kernel string, h *SymmetricMemory, vec device.Ptr, in Tensor, args kernels.AllReduceArgs) error {
	world := len(h.members)
	blocks, threads := kernels.ShapeMax(kernel, args.Numel, args.DType, world, h.smBudget(), r.maxBlocks)
	blocks = min(blocks, signal.Channels(h.padSize, world))
	args.Rank, args.World = int32(h.rank), int32(world)
	args.BufferPtrs, args.PadPtrs, args.PadBytes = h.BufferPtrsDev(), h.SignalPadPtrsDev(), h.padSize
	args.TimeoutNs = int64(r.timeout)
	bytes := in.Bytes()
	if args.Input != 0 && args.Input%vec != 0 {
		if err := r.dev.Copy(r.stream, in.Ptr, args.Input, bytes); err != nil {
			return fmt.Errorf("copy the local input into the buffer: %w", err)
		}
		args.Input = 0
	}
	out := args.Output
	if out != 0 && out%vec != 0 {
		var err error
		if args.Output, err = r.staging(bytes); err != nil {
			return err
		}
	}
	l := device.Launch{Kernel: kernel, Blocks: blocks, Threads: threads, Args: args, Group: h.label}
	r.logLaunch(h.group, l)
	err := r.launchStaged(l, args.Output, out, bytes)
	r.logFailure(kernel, h.group, err)
	return err
}

// launchStaged enqueues l, whose output is staged, and when that is not
// out, the copy of the result to out; unless the rank is asynchronous it
// then waits.
func (r *Rank) launchStaged(l device.Launch, staged, out device.Ptr, bytes uint64) error {
	if staged == out {
		return r.enqueue(l)
	}
	if err := r.dev.Launch(r.stream, l); err != nil {
		return err
	}
	if err := r.dev.Copy(r.stream, out, staged, bytes); err != nil {
		return fmt.Errorf("copy the result to the output: %w", err)
	}
	if r.async {
		return nil
	}
	return r.waitStream()
}

// staging returns the rank's staging tensor, at least bytes long and
// aligned to every vector width; it grows as needed and lives until Close.
// Work queued on the stream uses it in order, so one tensor serves every
// call, asynchronous ones included.
func (r *Rank) staging(bytes uint64) (device.Ptr, error) {
	if r.stage.Bytes() < bytes {
		if r.stage.Ptr != 0 {
			if err := r.alloc.plainFree(r.stage.Ptr); err != nil {
				return 0, fmt.Errorf("staging tensor: %w", err)
			}
			r.stage = Tensor{}
		}
		t, err := r.empty((bytes+3)/4, device.Float32)
		if err != nil {
			return 0, fmt.Errorf("staging tensor: %w", err)
		}
		r.stage = t
	}
	return r.stage.Ptr, nil
}

// enqueue launches l on the rank's stream and, unless the rank is
// asynchronous, waits for it and returns the kernel's error.
func (r *Rank) enqueue(l device.Launch) error {
	if err := r.dev.Launch(r.stream, l); err != nil {
		return err
	}
	if r.async {
		return nil
	}
	return r.waitStream()
}

// OneShotAllReduce reduces in (a view of a symmetric buffer, at the same
// offset on every member of group) and returns the result in a new plain
// tensor. Every member reads every peer's whole tensor. Collective.
func (r *Rank) OneShotAllReduce(in Tensor, op device.ReduceOp, group string) (Tensor, error) {
	out, err := r.empty(in.Numel, in.DType)
	if err == nil {
		if err = r.oneShot(in, Tensor{}, op, group, out); err != nil {
			_ = r.alloc.plainFree(out.Ptr)
		}
	}
	if err != nil {
		return Tensor{}, fmt.Errorf("rank %d: one-shot all-reduce on %q: %w", r.id, group, err)
	}
	return out, nil
}

// OneShotAllReduceOut is OneShotAllReduce writing into out.
func (r *Rank) OneShotAllReduceOut(in Tensor, op device.ReduceOp, group string, out Tensor) error {
	if err := r.oneShot(in, Tensor{}, op, group, out); err != nil {
		return fmt.Errorf("rank %d: one-shot all-reduce on %q: %w", r.id, group, err)
	}
	return nil
}

// OneShotAllReduceCopy first copies local (a plain tensor of the same
// shape, 4-byte aligned) into buf (a view of a symmetric buffer), then
// reduces buf into out.
func (r *Rank) OneShotAllReduceCopy(buf, local Tensor, op device.ReduceOp, group string, out Tensor) error {
	if err := r.oneShotCopy(buf, local, op, group, out); err != nil {
		return fmt.Errorf("rank %d: one-shot all-reduce copy on %q: %w", r.id, group, err)
	}
	return nil
}

func (r *Rank) oneShotCopy(buf, local Tensor, op device.ReduceOp, group string, out Tensor) error {
	if err := r.checkPlain("local input", buf, local); err != nil {
		return err
	}
	return r.oneShot(buf, local, op, group, out)
}

func (r *Rank) oneShot(in, local Tensor, op device.ReduceOp, group string, out Tensor) error {
	if err := checkOp(in, op); err != nil {
		return err
	}
	if err := r.checkPlain("output", in, out); err != nil {
		return err
	}
	if in.Numel == 0 {
		return nil
	}
	h, offset, vec, err := r.prepare(in, op, group)
	if err != nil {
		return err
	}
	return r.launch(kernels.OneShotAllReduce, h, vec, in, kernels.AllReduceArgs{
		DType: in.DType, Op: op, Offset: offset, Numel: in.Numel, Input: local.Ptr, Output: out.Ptr,
	})
}

// TwoShotAllReduce reduces in place: afterwards every member's view holds
// the result. Member r reduces the r-th chunk and writes it to every peer.
func (r *Rank) TwoShotAllReduce(in Tensor, op device.ReduceOp, group string) error {
	if err := r.twoShot(in, op, group, Tensor{}); err != nil {
		return fmt.Errorf("rank %d: two-shot all-reduce on %q: %w", r.id, group, err)
	}
	return nil
}

// TwoShotAllReduceOut reduces into out, leaving in's other elements as the
// reduction of this rank's chunk only.
func (r *Rank) TwoShotAllReduceOut(in Tensor, op device.ReduceOp, group string, out Tensor) error {
	err := r.checkPlain("output", in, out)
	if err == nil {
		err = r.twoShot(in, op, group, out)
	}
	if err != nil {
		return fmt.Errorf("rank %d: two-shot all-reduce on %q: %w", r.id, group, err)
	}
	return nil
}

func (r *Rank) twoShot(in Tensor, op device.ReduceOp, group string, out Tensor) error {
	if err := checkOp(in, op); err != nil {
		return err
	}
	if in.Numel == 0 {
		return nil
	}
	h, offset, vec, err := r.prepare(in, op, group)
	if err != nil {
		return err
	}
	return r.launch(kernels.TwoShotAllReduce, h, vec, in, kernels.AllReduceArgs{
		DType: in.DType, Op: op, Offset: offset, Numel: in.Numel, Output: out.Ptr,
	})
}
