package rank

import "math"

// EstimateSimMemory is about how many bytes of host memory a simulated job
// of world ranks uses at its peak when every rank all-reduces a tensor of
// tensorBytes and the host checks the results, as `symmem allreduce` and
// `symmem bench` do on the simulator: each rank's symmetric buffer and
// output in simulated device memory, the host's copies of every input and
// output, and the float64 reference. That is about 9 x world x tensorBytes,
// plus 8 x tensorBytes for the reference, 4 MiB per rank and 64 MiB for the
// process.
//
// It errs on the high side: measured peak resident sizes of `symmem
// allreduce` (bf16, the dtype with the largest reference per byte) stay
// 14-20% below it, from 1 rank x 64 MiB to 72 ranks x 1 MiB. Saturates at
// math.MaxUint64.
func EstimateSimMemory(world int, tensorBytes uint64) uint64 {
	const perRank, base = 4 << 20, 64 << 20
	if world < 1 {
		world = 1
	}
	w := uint64(world)
	if tensorBytes > (math.MaxUint64-base)/(9*w+8)-perRank {
		return math.MaxUint64
	}
	return 9*w*tensorBytes + 8*tensorBytes + w*perRank + base
}
