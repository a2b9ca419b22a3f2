package conformance

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

// SubgroupForms are the forms subgroupForms runs: Forms, the one-shot out
// form, and the out forms with their output in the input's symmetric
// buffer, past the input.
var SubgroupForms = []string{"one-shot", "one-shot-out", "one-shot-copy", "one-shot-out-symmetric",
	"two-shot", "two-shot-out", "two-shot-out-symmetric"}

// subgroupForms splits the world into the groups "even" and "odd" (by rank
// parity). Each group allocates a buffer of its own, rendezvouses on its
// group alone and runs every form of SubgroupForms for float32, bfloat16
// and float16 at a 4-byte offset, 1,028 elements, sum, reading each result
// back. The groups run at the same time, so on ranks that share a GPU one
// group's host calls (reads of results, frees, stream destroys) fall
// between the other group's kernels: the scenario that hung under the
// driver's lazy module loading.
func subgroupForms(seed uint64) rank.Program {
	return func(r *rank.Rank) error {
		name, members := "even", []int(nil)
		if r.ID()%2 == 1 {
			name = "odd"
		}
		for i := r.ID() % 2; i < r.World(); i += 2 {
			members = append(members, i)
		}
		pos := (r.ID() - r.ID()%2) / 2
		if err := r.NewGroup(name, members); err != nil {
			return err
		}
		const off, numel = 4, 1028
		const bufSize = 4 * (2*numel + 8)
		buf, err := r.Alloc(bufSize)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
			for _, form := range SubgroupForms {
				where := fmt.Sprintf("group %q %v %s", name, dt, form)
				inputs := workload.Spec{World: len(members), Bytes: numel * uint64(dt.Size()), DType: dt, Seed: seed + uint64(len(form))}.Inputs()
				want, err := oracle.AllReduce(dt, device.Sum, inputs)
				if err != nil {
					return err
				}
				in := rank.Tensor{Ptr: buf.Add(off), DType: dt, Numel: numel}
				if err := r.Write(in, inputs[pos]); err != nil {
					return err
				}
				got, err := runGroupForm(r, form, in, name)
				if err != nil {
					return fmt.Errorf("%s: %w", where, err)
				}
				if !bytes.Equal(got, want) {
					return fmt.Errorf("%s: rank %d's result differs from the reference", where, r.ID())
				}
			}
		}
		return nil
	}
}

// runGroupForm runs form on in over group and returns the result's bytes:
// the forms of [Forms] through runFormOn, and the out forms here. The
// symmetric out forms write to the bytes right after in (4-byte aligned
// but off the kernels' vectors, so the result is staged).
func runGroupForm(r *rank.Rank, form string, in rank.Tensor, group string) ([]byte, error) {
	var out rank.Tensor
	switch form {
	case "one-shot-out-symmetric", "two-shot-out-symmetric":
		out = rank.Tensor{Ptr: in.Ptr.Add((in.Bytes() + 7) &^ 3), DType: in.DType, Numel: in.Numel}
	case "one-shot-out":
		var err error
		if out, err = r.Empty(in.Numel, in.DType); err != nil {
			return nil, err
		}
		defer r.FreeTensor(out)
	default:
		return runFormOn(r, form, in, device.Sum, group)
	}
	var err error
	if strings.HasPrefix(form, "one-shot") {
		err = r.OneShotAllReduceOut(in, device.Sum, group, out)
	} else {
		err = r.TwoShotAllReduceOut(in, device.Sum, group, out)
	}
	if err != nil {
		return nil, err
	}
	return r.Read(out)
}
