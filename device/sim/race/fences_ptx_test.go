package race_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/internal/longtest"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/simjob"
)

// TestFencedSignalsPTX rewrites the kernels' signal operations with fences
// in place of their release or acquire order and runs the two-shot
// all-reduce (whose barriers order the data exchanged) in PTX mode: a
// fence before a relaxed put releases the data; a fence after a relaxed
// wait acquires it; a fence before a relaxed wait acquires nothing (it is
// not an acquire read-modify-write); a fence after a relaxed put releases
// nothing to the peer; a fence of cta or gpu scope orders nothing for a
// peer on another device.
func TestFencedSignalsPTX(t *testing.T) {
	text, err := kernels.PTX()
	if err != nil {
		t.Fatal(err)
	}
	put := regexp.MustCompile(`(?m)^(\s*)atom\.release\.sys\.global\.cas(\.b32 [^\n]*)$`)
	wait := regexp.MustCompile(`(?m)^(\s*)atom\.acquire\.sys\.global\.cas(\.b32 [^\n]*)$`)
	before := "${1}membar.sys;\n${1}atom.relaxed.sys.global.cas$2"
	after := "${1}atom.relaxed.sys.global.cas$2\n${1}membar.sys;"
	for _, c := range []struct {
		name string
		re   *regexp.Regexp
		repl string
		race bool
		long bool // left to the long sweeps
	}{
		{"fence, then relaxed put", put, before, false, false},
		{"relaxed wait, then fence", wait, after, false, false},
		{"fence, then relaxed wait", wait, before, true, false},
		{"relaxed put, then fence", put, after, true, true},
		{"fence.acq_rel.sys, then relaxed put", put, "${1}fence.acq_rel.sys;\n${1}atom.relaxed.sys.global.cas$2", false, true},
		{"fence.acq_rel.cta, then relaxed put", put, "${1}fence.acq_rel.cta;\n${1}atom.relaxed.sys.global.cas$2", true, false},
		{"relaxed wait, then fence.acq_rel.gpu", wait, "${1}atom.relaxed.sys.global.cas$2\n${1}fence.acq_rel.gpu;", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.long {
				longtest.Require(t, "a fenced-signal variant")
			}
			mod, err := ptx.Parse(c.re.ReplaceAllString(text, c.repl))
			if err != nil {
				t.Fatal(err)
			}
			dev := sim.Config{Kernels: sim.Kernels{PTX: true, Module: mod}}
			if !c.race {
				clean(t, c.name, simulate(t, simjob.Config{World: 2, Seed: 2, Device: dev}, reduceLoop(twoShot, 1, 256)))
				return
			}
			// A race shows in the schedules that take its path (a wait
			// whose first swap succeeds, with no spin load before it
			// that the fence would make an acquire): some seed of up to 38.
			var res simjob.Result
			for seed := uint64(2); seed < 40 && res.Races == nil; seed++ {
				res = simulate(t, simjob.Config{World: 2, Seed: seed, Device: dev}, reduceLoop(twoShot, 1, 256))
			}
			races(t, fmt.Sprintf("%s (a race)", c.name), res)
		})
	}
}
