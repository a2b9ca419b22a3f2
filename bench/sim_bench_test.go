package bench

import (
	"fmt"
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

// BenchmarkSimAllReduce measures what one all-reduce costs the simulator,
// by world size, tensor size and algorithm: ns/op and MB/s of tensor bytes
// reduced per second of CPU (b.SetBytes), scheduler steps per all-reduce
// and scheduler steps per second. Set-up (allocation, rendezvous) is
// outside the timed region.
//
//	go test -run '^$' -bench SimAllReduce -benchtime 20x ./bench/
func BenchmarkSimAllReduce(b *testing.B) {
	for _, world := range []int{2, 4, 8} {
		for _, size := range []uint64{4 << 10, 64 << 10, 1 << 20} {
			for _, algo := range []workload.Algo{workload.OneShot, workload.TwoShot} {
				name := fmt.Sprintf("world=%d/bytes=%s/%v", world, FormatSize(size), algo)
				b.Run(name, func(b *testing.B) { simAllReduce(b, world, size, algo) })
			}
		}
	}
}

func simAllReduce(b *testing.B, world int, size uint64, algo workload.Algo) {
	dt := device.BFloat16
	b.SetBytes(int64(size))
	var steps int64
	program := func(r *rank.Rank) error {
		buf, err := r.Alloc(size)
		if err != nil {
			return err
		}
		in := rank.Tensor{Ptr: buf, DType: dt, Numel: size / uint64(dt.Size())}
		out, err := r.Empty(in.Numel, dt)
		if err != nil {
			return err
		}
		if err := fill(r, in, 1); err != nil {
			return err
		}
		h, err := r.Rendezvous(buf, rank.WorldGroup)
		if err != nil {
			return err
		}
		if err := h.Barrier(barrierChannel, r.Timeout()); err != nil {
			return err
		}
		sched := r.Runtime().(*actor.Scheduler)
		if r.ID() == 0 {
			// Control passes to this task through the scheduler, which
			// orders these calls after the benchmark goroutine's.
			b.ResetTimer()
			steps = -sched.Steps()
		}
		for range b.N {
			if algo == workload.OneShot {
				err = r.OneShotAllReduceOut(in, device.Sum, rank.WorldGroup, out)
			} else {
				err = r.TwoShotAllReduce(in, device.Sum, rank.WorldGroup)
			}
			if err != nil {
				return err
			}
		}
		if err := h.Barrier(barrierChannel, r.Timeout()); err != nil {
			return err
		}
		if r.ID() == 0 {
			b.StopTimer()
			steps += sched.Steps()
		}
		return nil
	}
	res, err := simjob.Simulate(simjob.Config{World: world, Seed: 1}, program)
	if err != nil {
		b.Fatal(err)
	}
	if err := res.Err(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(steps)/s, "steps/s")
	}
}
