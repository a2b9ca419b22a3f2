package ptxcheck

import (
	"strings"
	"testing"
)

// TestNonCoherentLoad: a kernel that reads its peer's buffer by
// ld.global.nc after a flag says the peer wrote it, while the peer's
// kernel runs, is reported, naming the load's line and the peer's store's
// line; the same kernel with ld.global is clean (the flag orders the two),
// and so is an ld.global.nc of bytes written only before the launch. A
// thread's own store, read back by ld.global.nc in the same kernel, is a
// finding as well.
func TestNonCoherentLoad(t *testing.T) {
	src := load(t, "testdata/nc.ptx")
	const exch = `{"buffers": [
	    {"name": "data", "kind": "symmetric", "bytes": 4},
	    {"name": "flag", "kind": "signal", "bytes": 4},
	    {"name": "out", "kind": "plain", "bytes": 4}],
	  "steps": [
	    {"barrier": true},
	    {"launch": {"entry": "ENTRY", "grid": 1, "block": 1, "params": [
	      {"ptr": "data"}, {"ptr": "data", "rank": "(rank + 1) % world"}, {"ptr": "flag", "rank": "(rank + 1) % world"},
	      {"ptr": "flag"}, {"ptr": "out"}, {"u32": "rank + 7"}]}},
	    {"sync": true},
	    {"check": {"buffer": "out", "dtype": "u32", "value": "(rank + 1) % world + 7"}}
	  ]}`
	rep, err := RunProgram(program(t, strings.Replace(exch, "ENTRY", "exch", 1)), src, Options{Worlds: []int{2}, Seeds: 4})
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("ld.global after the flag: %v %+v, want no finding", err, rep.Findings)
	}
	rep, err = RunProgram(program(t, strings.Replace(exch, "ENTRY", "exch_nc", 1)), src, Options{Worlds: []int{2}, Seeds: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != "nc" {
		t.Fatalf("ld.global.nc after the flag: %+v, want one nc finding", rep.Findings)
	}
	f := rep.Findings[0]
	want := "non-coherent load: the load at PTX line 82 (ld.global.nc) reads bytes written during its kernel by the store at PTX line 75"
	if f.Title != want || !strings.Contains(strings.Join(f.Details, "\n"), "device 1 exch_nc") {
		t.Errorf("finding %q\n%s\nwant %q, naming both devices' accesses", f.Title, strings.Join(f.Details, "\n"), want)
	}
	// In a world of one the thread reads back, by ld.global.nc, what it
	// wrote itself during the kernel: a finding too.
	rep, err = RunProgram(program(t, strings.Replace(exch, "ENTRY", "exch_nc", 1)), src, Options{Worlds: []int{1}, Seeds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Title != want {
		t.Fatalf("ld.global.nc of the thread's own store: %+v, want %q", rep.Findings, want)
	}
	const copyNC = `{"buffers": [
	    {"name": "data", "kind": "symmetric", "bytes": 4, "init": {"dtype": "u32", "value": "rank + 7"}},
	    {"name": "out", "kind": "plain", "bytes": 4}],
	  "steps": [
	    {"write": {"buffer": "data", "dtype": "u32", "value": "rank + 9"}},
	    {"barrier": true},
	    {"launch": {"entry": "copy_nc", "grid": 1, "block": 1, "params": [{"ptr": "data", "rank": "(rank + 1) % world"}, {"ptr": "out"}]}},
	    {"sync": true},
	    {"check": {"buffer": "out", "dtype": "u32", "value": "(rank + 1) % world + 9"}}
	  ]}`
	rep, err = RunProgram(program(t, copyNC), src, Options{Worlds: []int{2, 3}, Seeds: 3})
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("ld.global.nc of bytes written before the launch: %v %+v, want no finding", err, rep.Findings)
	}
}
