package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/symmem/symmem/device/sim"
)

// kernelsFlag adds --kernels, which chooses what simulated kernels run.
func kernelsFlag(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "kernels", "go", "simulated kernels: go (the Go twins) or ptx (the kernels' PTX, interpreted thread by thread)")
}

// simKernels parses --kernels.
func simKernels(s string) (sim.Kernels, error) {
	switch s {
	case "go":
		return sim.Kernels{}, nil
	case "ptx":
		return sim.Kernels{PTX: true}, nil
	}
	return sim.Kernels{}, fmt.Errorf("--kernels %q: want go or ptx", s)
}
