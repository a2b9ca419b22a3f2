package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/simjob"
)

// kernelsFlag adds --kernels, which chooses what simulated kernels run.
func kernelsFlag(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "kernels", "go", "simulated kernels: go (the Go twins) or ptx (the kernels' PTX, interpreted thread by thread)")
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
