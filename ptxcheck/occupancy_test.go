package ptxcheck

import (
	"strings"
	"testing"
)

// gridbarHarness launches testdata/gridbar.ptx twice, a grid of 6 blocks
// of 64 threads (each block with 40960 bytes of static shared memory), with
// OCC as its occupancy field and WAIT as the kernel's wait parameter.
const gridbarHarness = `{OCC
  "buffers": [{"name": "count", "kind": "plain", "bytes": 4, "init": {"dtype": "u32", "value": 0}}],
  "steps": [
    {"repeat": {"times": 2, "steps": [
      {"launch": {"entry": "gridbar", "grid": 6, "block": 64, "params": [{"ptr": "count"}, {"u32": "iter + 1"}, {"u32": WAIT}]}}]}},
    {"check": {"buffer": "count", "dtype": "u32", "value": 12}}
  ]}`

// gridbar runs gridbarHarness at world 2, one seed, and returns its
// findings, one string each.
func gridbar(t *testing.T, occ string, wait bool) []string {
	t.Helper()
	h := strings.Replace(gridbarHarness, "WAIT", map[bool]string{true: "1", false: "0"}[wait], 1)
	if occ != "" {
		occ = `"occupancy": ` + occ + ","
	}
	h = strings.Replace(h, "OCC", occ, 1)
	rep, err := RunProgram(program(t, h), load(t, "testdata/gridbar.ptx"), Options{Worlds: []int{2}, Seeds: 1})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range rep.Findings {
		out = append(out, f.Kind+": "+f.Title+"\n"+strings.Join(f.Details, "\n"))
	}
	return out
}

// TestOccupancyField: a grid barrier over 6 blocks hangs, as a hang naming
// the occupancy, exactly when the harness's device cannot hold the 6 at
// once: not on the default H200 (132 SMs), nor on one SM given 300000
// bytes of shared memory (7 blocks of 41984 bytes); on one SM (5 blocks),
// on one SM whose threads have 255 registers (8192 a warp: 2 warps in each
// sub-partition's 16384, 8 an SM, 4 blocks of 2 warps) and under a given
// limit of 3 blocks, it hangs. Without the wait every block runs (the
// count is 12 after two launches) under each.
func TestOccupancyField(t *testing.T) {
	for _, c := range []struct {
		name string
		occ  string
		want []string // the hang's title says these; none: no finding
	}{
		{"H200 default", "", nil},
		{"larger shared memory", `{"sms": 1, "shared_per_sm": 300000}`, nil},
		{"shared memory", `{"sms": 1}`, []string{"in gridbar, blocks 0-4 (resident) wait for block 5, which never started",
			"5 of the grid's 6 blocks can be resident at once (1 SM x 5 blocks, bounded by shared memory (41984 bytes a block of 233472 an SM)); they spin at PTX line 39"}},
		{"registers", `{"sms": 1, "registers": 255, "shared_per_sm": 300000}`, []string{"blocks 0-3 (resident) wait for blocks 4-5, which never started",
			"4 of the grid's 6 blocks can be resident at once (1 SM x 4 blocks, bounded by registers (255 a thread (given), 16384 a block of 65536 an SM))"}},
		{"given limit", `{"resident_blocks": 3}`, []string{"blocks 0-2 (resident) wait for blocks 3-5", "(the given limit of 3 resident blocks)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := gridbar(t, c.occ, true)
			switch {
			case c.want == nil && len(got) > 0:
				t.Errorf("%q, want no finding", got)
			case c.want != nil:
				if len(got) != 1 || !strings.HasPrefix(got[0], "hang: hang: blocks wait for blocks that cannot be resident: ") {
					t.Fatalf("%q, want one hang naming the occupancy", got)
				}
				for _, w := range c.want {
					if !strings.Contains(got[0], w) {
						t.Errorf("%q does not say %q", got[0], w)
					}
				}
			}
			if got := gridbar(t, c.occ, false); len(got) > 0 {
				t.Errorf("without the wait: %q, want no finding", got)
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
	h := strings.Replace(strings.Replace(gridbarHarness, "WAIT", "1", 1), "OCC", `"occupancy": {"sms": 1, "shared_per_block": 40000},`, 1)
	_, err = RunProgram(program(t, h), load(t, "testdata/gridbar.ptx"), Options{Worlds: []int{2}, Seeds: 1})
	if err == nil || !strings.Contains(err.Error(), "launch gridbar: 40960 bytes of shared memory a block (40960 static, 0 dynamic), more than a block may have (40000)") {
		t.Errorf("a block larger than the device's: %v", err)
	}
}
