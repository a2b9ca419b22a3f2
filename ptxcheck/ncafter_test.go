package ptxcheck

import (
	"strings"
	"testing"
)

// TestWriteAfterNonCoherentLoad: a write to bytes a kernel loaded by
// ld.global.nc, made after the load (ordered after it by a flag) while
// the loading kernel may still run, is an nc finding naming both lines;
// the same write made by a kernel launched after every rank's loading
// kernel completed is clean.
func TestWriteAfterNonCoherentLoad(t *testing.T) {
	src := load(t, "testdata/nc.ptx")
	const during = `{"buffers": [
	    {"name": "data", "kind": "symmetric", "bytes": 4, "init": {"dtype": "u32", "value": "rank + 7"}},
	    {"name": "flag", "kind": "signal", "bytes": 4},
	    {"name": "out", "kind": "plain", "bytes": 4}],
	  "steps": [
	    {"barrier": true},
	    {"launch": {"entry": "nc_then_put", "grid": 1, "block": 1, "params": [
	      {"ptr": "data"}, {"ptr": "data", "rank": "(rank + 1) % world"}, {"ptr": "flag", "rank": "(rank + 1) % world"},
	      {"ptr": "flag"}, {"ptr": "out"}, {"u32": "rank + 9"}]}},
	    {"sync": true},
	    {"check": {"buffer": "out", "dtype": "u32", "value": "rank + 7"}}
	  ]}`
	rep, err := RunProgram(program(t, during), src, Options{Worlds: []int{2}, Seeds: 4})
	if err != nil {
		t.Fatal(err)
	}
	want := "non-coherent load: the load at PTX line 132 (ld.global.nc) reads bytes that the store at PTX line 140 writes later during the load's kernel"
	found := false
	for _, f := range rep.Findings {
		if f.Kind != "nc" || f.Title != want {
			t.Errorf("finding %s: %q\n%s", f.Kind, f.Title, strings.Join(f.Details, "\n"))
			continue
		}
		found = true
		if d := strings.Join(f.Details, "\n"); !strings.Contains(d, "nc load: ") || !strings.Contains(d, "write: ") {
			t.Errorf("the details do not name both accesses:\n%s", d)
		}
	}
	if !found {
		t.Fatalf("no finding %q in %+v", want, rep.Findings)
	}
	const after = `{"buffers": [
	    {"name": "data", "kind": "symmetric", "bytes": 4, "init": {"dtype": "u32", "value": "rank + 7"}},
	    {"name": "out", "kind": "plain", "bytes": 4}],
	  "steps": [
	    {"barrier": true},
	    {"launch": {"entry": "copy_nc", "grid": 1, "block": 1, "params": [{"ptr": "data"}, {"ptr": "out"}]}},
	    {"sync": true},
	    {"barrier": true},
	    {"launch": {"entry": "put", "grid": 1, "block": 1, "params": [{"ptr": "data", "rank": "(rank + 1) % world"}, {"u32": "rank + 9"}]}},
	    {"sync": true},
	    {"check": {"buffer": "out", "dtype": "u32", "value": "rank + 7"}}
	  ]}`
	rep, err = RunProgram(program(t, after), src, Options{Worlds: []int{2, 3}, Seeds: 3})
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("a write after the loading kernels completed: %v %+v, want no finding", err, rep.Findings)
	}
}
