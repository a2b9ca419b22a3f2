package simjob_test

import (
	"fmt"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// Four simulated ranks each contribute rank+1 and all-reduce in place with
// the two-shot algorithm: every element becomes 1+2+3+4. The same seed
// gives the same schedule, and the same trace hash, on every run.
func ExampleSimulate() {
	res, err := simjob.Simulate(simjob.Config{World: 4, Seed: 1}, func(r *rank.Rank) error {
		buf, err := r.Alloc(4096) // symmetric: a signal pad, then 4096 data bytes
		if err != nil {
			return err
		}
		defer r.Free(buf)
		in := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: 1024}
		vals := make([]float32, in.Numel)
		for i := range vals {
			vals[i] = float32(r.ID() + 1)
		}
		data, err := kernels.Encode(device.Float32, vals)
		if err != nil {
			return err
		}
		if err := r.Write(in, data); err != nil {
			return err
		}
		if err := r.TwoShotAllReduce(in, device.Sum, rank.WorldGroup); err != nil { // rendezvous on first use
			return err
		}
		out, err := r.Read(in)
		if err != nil {
			return err
		}
		if r.ID() == 0 {
			got, err := kernels.Decode(device.Float32, out)
			if err != nil {
				return err
			}
			fmt.Println("rank 0 holds", got[0], "to", got[len(got)-1])
		}
		return nil
	})
	if err == nil {
		err = res.Err()
	}
	fmt.Println("error:", err)
	fmt.Println("trace of", len(res.Trace), "hex digits")
	// Output:
	// rank 0 holds 10 to 10
	// error: <nil>
	// trace of 64 hex digits
}
