package ptxcheck

import (
	"strings"
	"testing"
)

// runPair runs the harness of examples/bugs/grid_barrier_not_resident
// (kind "bug" or "fixed": a grid of 6 blocks of 64 threads, each with
// 41088 bytes of static shared memory) at world 2 on 64 elements with occ
// as its occupancy field, and returns its findings, one string each.
func runPair(t *testing.T, kind string, occ *Occupancy) []string {
	t.Helper()
	p, err := LoadHarness("../examples/bugs/grid_barrier_not_resident/" + kind + ".json")
	if err != nil {
		t.Fatal(err)
	}
	p.Occupancy = occ
	rep, err := RunProgram(p, load(t, p.PTX), Options{Worlds: []int{2}, Seeds: 1, Vars: map[string]Expr{"n": "64"}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range rep.Findings {
		out = append(out, f.Kind+": "+f.Title+"\n"+strings.Join(f.Details, "\n"))
	}
	return out
}

// TestOccupancyField: the grid barrier of the pair hangs, as a hang naming
// the occupancy, exactly when the harness's device cannot hold its 6
// blocks at once: not on the default H200 (132 SMs), nor on one SM given
// 300000 bytes of shared memory (7 blocks of 42112 bytes); on one SM whose
// threads were given 255 registers each (4 blocks of 2 warps of 8192
// registers a warp: 2 warps in each sub-partition's 16384) and under a
// given limit of 3 blocks, it hangs. Its fix is clean under each.
func TestOccupancyField(t *testing.T) {
	for _, c := range []struct {
		name string
		occ  *Occupancy
		want []string // the hang's title says these; none: no finding
	}{
		{"H200 default", nil, nil},
		{"larger shared memory", &Occupancy{SMs: 1, SharedPerSM: 300000}, nil},
		{"registers", &Occupancy{SMs: 1, Registers: 255}, []string{"blocks 0-3 (resident) wait for blocks 4-5, which never started",
			"4 of the grid's 6 blocks can be resident at once (1 SM x 4 blocks, bounded by registers (255 a thread (given), 16384 a block of 65536 an SM))"}},
		{"given limit", &Occupancy{ResidentBlocks: 3}, []string{"blocks 0-2 (resident) wait for blocks 3-5",
			"(the given limit of 3 resident blocks)", "grid_barrier_not_resident/bug.cu:20 (inlined at /examples/bugs/grid_barrier_not_resident/bug.cu:61)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := runPair(t, "bug", c.occ)
			switch {
			case c.want == nil && len(got) > 0:
				t.Errorf("bug: %q, want no finding", got)
			case c.want != nil:
				if len(got) != 1 || !strings.HasPrefix(got[0], "hang: hang: blocks wait for blocks that cannot be resident") {
					t.Fatalf("bug: %q, want one hang naming the occupancy", got)
				}
				for _, w := range c.want {
					if !strings.Contains(got[0], w) {
						t.Errorf("bug: %q does not say %q", got[0], w)
					}
				}
			}
			if got := runPair(t, "fixed", c.occ); len(got) > 0 {
				t.Errorf("fixed: %q, want no finding", got)
			}
		})
	}
}

// TestBadOccupancy: negative limits and a register count no thread has
// are refused with the harness, naming the field; a launch whose block
// does not fit on a multiprocessor of the harness's device ends the check
// with an error naming the launch, as the launch fails on a GPU.
func TestBadOccupancy(t *testing.T) {
	p := program(t, `{"occupancy": {"sms": -1, "shared_per_sm": -5, "registers": 300},
	  "buffers": [{"name": "out", "kind": "plain", "bytes": 64}], "steps": [{"sync": true}]}`)
	err := Validate(p, load(t, "testdata/steps.ptx"))
	for _, want := range []string{"occupancy: sms: negative (-1)", "occupancy: shared_per_sm: negative (-5)",
		"occupancy: registers: 300, more than a thread may have (255)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not say %q", err, want)
		}
	}
	pp, err := LoadHarness("../examples/bugs/grid_barrier_not_resident/fixed.json")
	if err != nil {
		t.Fatal(err)
	}
	pp.Occupancy = &Occupancy{SMs: 1, SharedPerBlock: 40000}
	_, err = RunProgram(pp, load(t, pp.PTX), Options{Worlds: []int{2}, Seeds: 1, Vars: map[string]Expr{"n": "64"}})
	if err == nil || !strings.Contains(err.Error(), "launch allreduce_normalize: 41089 bytes of shared memory a block (41089 static, 0 dynamic), more than a block may have (40000)") {
		t.Errorf("a block larger than the device's: %v", err)
	}
}
