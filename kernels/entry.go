package kernels

import (
	"slices"

	"github.com/symmem/symmem/device"
)

// Entry is the name of the CUDA function that runs a launch of kernel with
// args. The one-shot and two-shot all-reduce kernels have entry points
// compiled for one dtype and world size (2, 4 or 8) with 16-byte vectors,
// named <kernel>_<dtype>_w<world> (e.g. two_shot_all_reduce_bf16_w4): they
// skip the generic entry's run-time dispatch on dtype, vector width and
// world size, and their registers are allotted for that one case. Every
// other launch runs the kernel's generic entry, whose name is kernel. Both
// compute the same result; the simulator runs one Go twin per kernel and
// ignores entries.
func Entry(kernel string, args any) string {
	if kernel != OneShotAllReduce && kernel != TwoShotAllReduce {
		return kernel
	}
	a, err := asAllReduceArgs(kernel, args)
	if err != nil {
		return kernel
	}
	var dt string
	switch a.DType {
	case device.Float32:
		dt = "f32"
	case device.BFloat16:
		dt = "bf16"
	case device.Float16:
		dt = "f16"
	default:
		return kernel
	}
	var world string
	switch a.World {
	case 2:
		world = "w2"
	case 4:
		world = "w4"
	case 8:
		world = "w8"
	default:
		return kernel
	}
	size := uint64(a.DType.Size())
	if a.Numel == 0 || a.Numel > ^uint64(0)/size || a.Offset%16 != 0 || a.Numel*size%16 != 0 {
		return kernel
	}
	return kernel + "_" + dt + "_" + world
}

// Entries lists every CUDA function a launch can run: each kernel's generic
// entry and every specialised one [Entry] can return, sorted. The CUDA
// device resolves them all when it opens, so that no kernel is loaded
// while another one spins (see device/cuda).
func Entries() []string {
	names := Names()
	for _, k := range []string{OneShotAllReduce, TwoShotAllReduce} {
		for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
			for _, w := range []int32{2, 4, 8} {
				names = append(names, Entry(k, AllReduceArgs{World: w, DType: dt, Numel: 64}))
			}
		}
	}
	slices.Sort(names)
	return names
}
