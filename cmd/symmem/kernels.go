package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/simjob"
)

// kernelsFlag adds --kernels, which chooses what simulated kernels run.
func kernelsFlag(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "kernels", "go", "simulated kernels: go (the Go twins) or ptx (the kernels' PTX, interpreted with the converged lanes of a warp together and each thread on its own past divergence and strong accesses)")
}

// parseKernels parses --kernels.
func parseKernels(s string) (sim.Kernels, error) {
	switch s {
	case "go":
		return sim.Kernels{}, nil
	case "ptx":
		return sim.Kernels{PTX: true}, nil
	}
	return sim.Kernels{}, fmt.Errorf("--kernels %q: want go or ptx", s)
}

// simKernels parses --kernels into the adjustment of a simulated job
// (backend.Options.Sim).
func simKernels(s string) (func(*simjob.Config), error) {
	k, err := parseKernels(s)
	if err != nil {
		return nil, err
	}
	return func(c *simjob.Config) { c.Device.Kernels = k }, nil
}

// checkKernels checks --kernels.
func checkKernels(s string) error {
	_, err := parseKernels(s)
	return err
}

// kernelImageEnv names a kernel image (fatbin) that GPU runs load instead
// of the embedded one (see backend.OpenGPU).
const kernelImageEnv = "SYMMEM_KERNEL_IMAGE"

// checkKernelImage fails when SYMMEM_KERNEL_IMAGE names a file that cannot
// be read, on every device: the simulator does not load the image, but a
// misspelt path should not go unnoticed until the same command runs on a
// GPU.
func checkKernelImage() error {
	path := os.Getenv(kernelImageEnv)
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", kernelImageEnv, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s=%s: not a regular file", kernelImageEnv, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", kernelImageEnv, err)
	}
	return f.Close()
}
