package conformance

import (
	"bytes"
	"fmt"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

// Forms are the all-reduce entry points the table covers.
var Forms = []string{"one-shot", "one-shot-copy", "two-shot", "two-shot-out"}

// allReduceTable ports the reference table: every dtype x form x view
// offset {4, 8, 16 bytes} x size {4, 8192, 8196 bytes}, in a zeroed
// symmetric buffer. Each rank checks its result equals the reference
// bitwise and that the bytes around the view stayed zero.
func allReduceTable(seed uint64) rank.Program {
	return func(r *rank.Rank) error {
		const bufSize = 16 << 10
		buf, err := r.Alloc(bufSize)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		whole := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: bufSize / 4}
		zero := make([]byte, bufSize)
		for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
			for _, form := range Forms {
				for _, off := range []uint64{4, 8, 16} {
					for _, size := range []uint64{4, 8192, 8196} {
						where := fmt.Sprintf("%v %s offset %d size %d", dt, form, off, size)
						inputs := workload.Spec{World: r.World(), Bytes: size, DType: dt, Seed: seed + off*size}.Inputs()
						want, err := oracle.AllReduce(dt, device.Sum, inputs)
						if err != nil {
							return err
						}
						if err := r.Write(whole, zero); err != nil {
							return err
						}
						in := rank.Tensor{Ptr: buf.Add(off), DType: dt, Numel: size / uint64(dt.Size())}
						if err := r.Write(in, inputs[r.ID()]); err != nil {
							return err
						}
						got, err := RunForm(r, form, in, device.Sum)
						if err != nil {
							return fmt.Errorf("%s: %w", where, err)
						}
						if !bytes.Equal(got, want) {
							return fmt.Errorf("%s: rank %d's result differs from the reference", where, r.ID())
						}
						after, err := r.Read(whole)
						if err != nil {
							return err
						}
						if nz := nonZero(after[:off]); nz >= 0 {
							return fmt.Errorf("%s: byte %d before the view changed", where, nz)
						}
						if nz := nonZero(after[off+size:]); nz >= 0 {
							return fmt.Errorf("%s: byte %d after the view changed", where, int(off+size)+nz)
						}
					}
				}
			}
		}
		return nil
	}
}

// RunForm runs one all-reduce form on in over the world and returns the
// result's bytes.
func RunForm(r *rank.Rank, form string, in rank.Tensor, op device.ReduceOp) ([]byte, error) {
	return runFormOn(r, form, in, op, rank.WorldGroup)
}

// runFormOn runs one all-reduce form on in over group and returns the
// result's bytes.
func runFormOn(r *rank.Rank, form string, in rank.Tensor, op device.ReduceOp, group string) ([]byte, error) {
	switch form {
	case "one-shot":
		out, err := r.OneShotAllReduce(in, op, group)
		if err != nil {
			return nil, err
		}
		defer r.FreeTensor(out)
		return r.Read(out)
	case "one-shot-copy":
		local, err := r.Empty(in.Numel, in.DType)
		if err != nil {
			return nil, err
		}
		defer r.FreeTensor(local)
		data, err := r.Read(in)
		if err != nil {
			return nil, err
		}
		if err := r.Write(local, data); err != nil {
			return nil, err
		}
		// Scribble over the symmetric view: the copy form must refill it.
		if err := r.Write(in, bytes.Repeat([]byte{0x7f}, len(data))); err != nil {
			return nil, err
		}
		out, err := r.Empty(in.Numel, in.DType)
		if err != nil {
			return nil, err
		}
		defer r.FreeTensor(out)
		if err := r.OneShotAllReduceCopy(in, local, op, group, out); err != nil {
			return nil, err
		}
		return r.Read(out)
	case "two-shot":
		if err := r.TwoShotAllReduce(in, op, group); err != nil {
			return nil, err
		}
		return r.Read(in)
	case "two-shot-out":
		out, err := r.Empty(in.Numel, in.DType)
		if err != nil {
			return nil, err
		}
		defer r.FreeTensor(out)
		if err := r.TwoShotAllReduceOut(in, op, group, out); err != nil {
			return nil, err
		}
		return r.Read(out)
	}
	return nil, fmt.Errorf("unknown form %q", form)
}

func nonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}
