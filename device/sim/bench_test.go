package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// BenchmarkOneShot4KiB is one world-4 one-shot all-reduce of 4 KiB of
// float32 per iteration (the simulator's cost per small collective).
func BenchmarkOneShot4KiB(b *testing.B) {
	h := newHarness(b, 4, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	c := reduceCase{v: variants[0], dt: device.Float32, op: device.Sum, numel: 1024}
	inputs := make([][]byte, 4)
	for r := range inputs {
		inputs[r] = randomInput(rng, c.dt, int(c.numel))
	}
	for i := 0; i < b.N; i++ {
		if _, err := h.allReduce(c, inputs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKernelOnly4KiB launches the world-4 one-shot kernel alone.
func BenchmarkKernelOnly4KiB(b *testing.B) {
	h := newHarness(b, 4, 1)
	blocks, threads := kernels.Shape(kernels.OneShotAllReduce, 1024, device.Float32, 4, DefaultSMCount)
	for i := 0; i < b.N; i++ {
		h.ranks(func(r int) error {
			a := h.allReduceArgs(r, device.Float32, device.Sum, 0, 1024)
			a.Output = h.local[r] + outOff
			return h.launch(r, kernels.OneShotAllReduce, blocks, threads, a)
		})
	}
}
