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
	return nil
}

// prepare resolves a symmetric input: its allocation's handle on group (a
// rendezvous on first use, collective like the reduction itself) and its
// byte offset inside the buffer, checked for alignment.
func (r *Rank) prepare(in Tensor, op device.ReduceOp, group string) (*SymmetricMemory, uint64, error) {
	if err := checkOp(in, op); err != nil {
		return nil, 0, err
	}
	if _, err := r.alloc.find(in.Ptr, in.Bytes()); err != nil {
		return nil, 0, fmt.Errorf("input %v: %w", in, err)
	}
	h, err := r.rendezvous(in.Ptr, group)
	if err != nil {
		r.logFailure("rendezvous", group, err)
		return nil, 0, err
	}
	offset := uint64(in.Ptr - h.blk.data)
	if _, err := kernels.CheckAlignment(offset, in.Bytes(), in.DType); err != nil {
		return nil, 0, fmt.Errorf("input %v: %w", in, err)
	}
	return h, offset, nil
}

func (r *Rank) checkOutput(in, out Tensor) error {
	if out.DType != in.DType || out.Numel != in.Numel {
		return fmt.Errorf("output %v does not match input %v", out, in)
	}
	if out.Numel > 0 && out.Ptr%4 != 0 {
		return fmt.Errorf("output %v is not 4-byte aligned", out)
	}
	if out.Numel > 0 && r.alloc.lookup(out.Ptr, out.Bytes()) != nil {
		return fmt.Errorf("output %v lies in a symmetric buffer; use a plain tensor", out)
	}
	return nil
}

// launch queues an all-reduce kernel on the rank's stream and, unless the
// rank is asynchronous, waits for it.
func (r *Rank) launch(kernel string, h *SymmetricMemory, args kernels.AllReduceArgs) error {
	world := len(h.members)
	blocks, threads := kernels.ShapeMax(kernel, args.Numel, args.DType, world, h.smBudget(), r.maxBlocks)
	blocks = min(blocks, signal.Channels(h.padSize, world))
	args.Rank, args.World = int32(h.rank), int32(world)
	args.BufferPtrs, args.PadPtrs, args.PadBytes = h.BufferPtrsDev(), h.SignalPadPtrsDev(), h.padSize
	args.TimeoutNs = int64(r.timeout)
	l := device.Launch{Kernel: kernel, Blocks: blocks, Threads: threads, Args: args}
	r.logLaunch(h.group, l)
	err := r.enqueue(l)
	r.logFailure(kernel, h.group, err)
	return err
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
	out, err := r.Empty(in.Numel, in.DType)
	if err != nil {
		return Tensor{}, fmt.Errorf("rank %d: one-shot all-reduce: %w", r.id, err)
	}
	if err := r.OneShotAllReduceOut(in, op, group, out); err != nil {
		_ = r.FreeTensor(out)
		return Tensor{}, err
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

// OneShotAllReduceCopy first copies local (a plain tensor) into buf (a
// view of a symmetric buffer of the same shape), then reduces buf into out.
func (r *Rank) OneShotAllReduceCopy(buf, local Tensor, op device.ReduceOp, group string, out Tensor) error {
	if local.DType != buf.DType || local.Numel != buf.Numel {
		return fmt.Errorf("rank %d: one-shot all-reduce copy: local %v does not match buffer %v", r.id, local, buf)
	}
	if local.Numel > 0 && local.Ptr == 0 {
		return fmt.Errorf("rank %d: one-shot all-reduce copy: local input is a null pointer", r.id)
	}
	if err := r.oneShot(buf, local, op, group, out); err != nil {
		return fmt.Errorf("rank %d: one-shot all-reduce copy on %q: %w", r.id, group, err)
	}
	return nil
}

func (r *Rank) oneShot(in, local Tensor, op device.ReduceOp, group string, out Tensor) error {
	if err := checkOp(in, op); err != nil {
		return err
	}
	if err := r.checkOutput(in, out); err != nil {
		return err
	}
	if in.Numel == 0 {
		return nil
	}
	h, offset, err := r.prepare(in, op, group)
	if err != nil {
		return err
	}
	return r.launch(kernels.OneShotAllReduce, h, kernels.AllReduceArgs{
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
	if err := r.checkOutput(in, out); err != nil {
		return fmt.Errorf("rank %d: two-shot all-reduce on %q: %w", r.id, group, err)
	}
	if out.Numel > 0 && out.Ptr == 0 {
		return fmt.Errorf("rank %d: two-shot all-reduce on %q: output is a null pointer", r.id, group)
	}
	if err := r.twoShot(in, op, group, out); err != nil {
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
	h, offset, err := r.prepare(in, op, group)
	if err != nil {
		return err
	}
	return r.launch(kernels.TwoShotAllReduce, h, kernels.AllReduceArgs{
		DType: in.DType, Op: op, Offset: offset, Numel: in.Numel, Output: out.Ptr,
	})
}
