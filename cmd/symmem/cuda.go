package main

import (
	"fmt"
	"os"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/cuda"
	"github.com/symmem/symmem/rank"
)

// openCUDA opens the device of the rank with local index local: GPU local
// modulo the GPUs the driver sees, so that ranks beyond the GPU count share
// GPUs round-robin (which needs SYMMEM_ALLOW_OVERLAPPING_DEVICES, see
// checkCUDA). SYMMEM_KERNEL_IMAGE names a kernel image (fatbin) to load
// instead of the embedded one: a GPU machine can try freshly built kernels
// without rebuilding the command.
func openCUDA(local int) (device.Device, error) {
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("cuda: the driver sees no GPU")
	}
	var opts cuda.Options
	if path := os.Getenv("SYMMEM_KERNEL_IMAGE"); path != "" {
		img, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("SYMMEM_KERNEL_IMAGE: %w", err)
		}
		opts.Module = img
	}
	return cuda.Open(local%n, opts)
}

// checkCUDA fails at once without a driver, or with fewer GPUs than ranks
// unless overlapping devices are allowed (the ranks then share the GPUs
// round-robin and split their multiprocessors).
func checkCUDA(world int) error {
	n, err := cuda.DeviceCount()
	if err != nil {
		return fmt.Errorf("--device cuda: %w", err)
	}
	if n < 1 {
		return fmt.Errorf("--device cuda: the driver sees no GPU")
	}
	if world > n && !rank.AllowOverlappingFromEnv() {
		return fmt.Errorf("--device cuda: %d ranks on %d GPUs: set SYMMEM_ALLOW_OVERLAPPING_DEVICES=1 to place them round-robin, sharing GPUs", world, n)
	}
	return nil
}
