package main

import (
	"fmt"
	"os"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/cuda"
)

// openCUDA opens GPU local as a rank's device. SYMMEM_KERNEL_IMAGE names a
// kernel image (fatbin) to load instead of the embedded one: a GPU machine
// can try freshly built kernels without rebuilding the command.
func openCUDA(local int) (device.Device, error) {
	var opts cuda.Options
	if path := os.Getenv("SYMMEM_KERNEL_IMAGE"); path != "" {
		img, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("SYMMEM_KERNEL_IMAGE: %w", err)
		}
		opts.Module = img
	}
	return cuda.Open(local, opts)
}

// checkCUDA fails at once without a driver or with fewer GPUs than ranks.
func checkCUDA(world int) error {
	n, err := cuda.DeviceCount()
	if err != nil {
		return fmt.Errorf("--device cuda: %w", err)
	}
	if world > n {
		return fmt.Errorf("--device cuda: %d ranks need %d GPUs, the driver sees %d", world, world, n)
	}
	return nil
}
