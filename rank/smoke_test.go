package rank

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

func TestSmokeOneShot(t *testing.T) {
	const world, numel = 4, 64
	outs := make([][]byte, world)
	ins := make([][]byte, world)
	for i := range ins {
		vals := make([]float32, numel)
		for j := range vals {
			vals[j] = float32(i*100 + j)
		}
		ins[i], _ = kernels.Encode(device.Float32, vals)
	}
	res, err := Simulate(SimConfig{World: world, Seed: 1}, func(r *Rank) error {
		p, err := r.Alloc(numel * 4)
		if err != nil {
			return err
		}
		in := Tensor{Ptr: p, DType: device.Float32, Numel: numel}
		if err := r.Write(in, ins[r.ID()]); err != nil {
			return err
		}
		out, err := r.OneShotAllReduce(in, device.Sum, WorldGroup)
		if err != nil {
			return err
		}
		outs[r.ID()], err = r.Read(out)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	want, _ := kernels.Reference(device.Float32, device.Sum, ins)
	for i, o := range outs {
		if !bytes.Equal(o, want) {
			t.Fatalf("rank %d: got %v", i, o[:16])
		}
	}
	fmt.Println(res.Trace, res.Steps)
}
