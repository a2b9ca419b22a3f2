package main

import (
	"fmt"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/cuda"
)

// openCUDA opens GPU local as a rank's device.
func openCUDA(local int) (device.Device, error) {
	return cuda.Open(local, cuda.Options{})
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
