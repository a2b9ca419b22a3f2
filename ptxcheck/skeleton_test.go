package ptxcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fillTODOs replaces every "TODO..." string of the harness text b with a
// value that fits its field, chosen by the field's name (first is the
// buffer a write or check names); it fails the test on a TODO it has no
// value for.
func fillTODOs(t *testing.T, b []byte, first string) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("skeleton is not JSON: %v\n%s", err, b)
	}
	values := map[string]string{"worlds": "2,4", "kind": "symmetric", "bytes": "4096", "buffer": first, "dtype": "u32",
		"value": "rank + i", "grid": "2", "block": "64"}
	for f := range scalarForms {
		values[f] = "rank + 1"
	}
	var walk func(key string, v any) any
	walk = func(key string, v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(k, e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(key, e)
			}
		case string:
			if strings.HasPrefix(x, "TODO") {
				val, ok := values[key]
				if !ok {
					t.Fatalf("no value for the TODO of %q: %s", key, x)
				}
				return val
			}
		}
		return v
	}
	out, err := json.Marshal(walk("", v))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSkeletons: the skeleton of every entry of every example PTX is
// JSON whose TODOs the loader refuses, naming them; with each TODO
// replaced by a value it loads and validates against the PTX.
func TestSkeletons(t *testing.T) {
	files, err := filepath.Glob("../examples/kernels/*.ptx")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example PTX: %v", err)
	}
	n := 0
	for _, f := range files {
		src := load(t, f)
		for _, e := range src.Entries() {
			sk, err := Skeleton(src, e, f)
			if err != nil {
				t.Fatalf("%s %s: %v", f, e, err)
			}
			n++
			if !json.Valid([]byte(sk)) {
				t.Fatalf("%s %s: not JSON:\n%s", f, e, sk)
			}
			_, err = ParseHarness([]byte(sk))
			if err == nil || !strings.Contains(err.Error(), `worlds: "TODO`) || !strings.Contains(err.Error(), `.launch.grid: "TODO: blocks"`) {
				t.Fatalf("%s %s: the skeleton with its TODOs loads, or the error does not name them: %v", f, e, err)
			}
			var names struct{ Buffers []struct{ Name string } }
			if err := json.Unmarshal([]byte(sk), &names); err != nil || len(names.Buffers) == 0 {
				t.Fatalf("%s %s: no buffers: %v", f, e, err)
			}
			filled := fillTODOs(t, []byte(sk), names.Buffers[0].Name)
			p, err := ParseHarness(filled)
			if err != nil {
				t.Fatalf("%s %s: filled skeleton does not load: %v\n%s", f, e, err, filled)
			}
			if p.PTX != filepath.Base(f) {
				t.Errorf("%s %s: ptx %q, want the file's base name", f, e, p.PTX)
			}
			sig, _ := src.Signature(e)
			if l := p.Steps[0].Repeat.Steps[1].Launch; l == nil || l.Entry != e || len(l.Params) != len(sig.Params) {
				t.Fatalf("%s %s: the launch does not take the entry's %d parameters: %+v", f, e, len(sig.Params), l)
			}
			if err := Validate(p, src); err != nil {
				t.Fatalf("%s %s: filled skeleton does not validate: %v\n%s", f, e, err, filled)
			}
		}
	}
	if n < 6 {
		t.Errorf("only %d entries in the examples", n)
	}
}

// TestSkeletonTODOLeft: a harness with one TODO left is refused with an
// error that names its place and its text, and only that one.
func TestSkeletonTODOLeft(t *testing.T) {
	src := load(t, "../examples/kernels/onestage_bf16.ptx")
	sk, err := Skeleton(src, "onestage_bf16", "onestage_bf16.ptx")
	if err != nil {
		t.Fatal(err)
	}
	// The .b8[64] parameter is offered as a pointer array of 8, the
	// pointers as buffers, the u32s as scalars.
	for _, want := range []string{`{"ptrarray": "p0", "len": 8`, `{"ptr": "p1"`, `{"u32": "TODO`} {
		if !strings.Contains(sk, want) {
			t.Errorf("skeleton lacks %s:\n%s", want, sk)
		}
	}
	filled := string(fillTODOs(t, []byte(sk), "p0"))
	left := strings.Replace(filled, `"grid":"2"`, `"grid":"TODO: blocks"`, 1)
	if left == filled {
		t.Fatalf("no grid in %s", filled)
	}
	_, err = ParseHarness([]byte(left))
	want := "TODOs left to fill (1):\n  steps[0].repeat.steps[1].launch.grid: \"TODO: blocks\""
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// TestPeerSkeletons: the skeleton of every entry of every PTX file under
// ../shared/peers, read for its signatures alone, compiles against its
// entry once its TODOs are filled (the checks of a harness but for the
// refusal of what the interpreter cannot run).
func TestPeerSkeletons(t *testing.T) {
	files, _ := filepath.Glob("../../shared/peers/ptx/*.ptx")
	if len(files) == 0 {
		t.Skip("../shared/peers is absent: no peer kernels to make skeletons for")
	}
	n := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// The signatures alone: what the interpreter cannot parse yet
		// gets a skeleton too.
		src := ParseSignatures(f, string(text))
		for _, e := range src.Entries() {
			sk, err := Skeleton(src, e, f)
			if err != nil {
				t.Fatalf("%s %s: %v", f, e, err)
			}
			var names struct{ Buffers []struct{ Name string } }
			if err := json.Unmarshal([]byte(sk), &names); err != nil {
				t.Fatalf("%s %s: %v", f, e, err)
			}
			p, err := ParseHarness(fillTODOs(t, []byte(sk), names.Buffers[0].Name))
			if err != nil {
				t.Fatalf("%s %s: %v", f, e, err)
			}
			if _, err := compile(p, src); err != nil {
				t.Fatalf("%s %s: the filled skeleton does not compile: %v", f, e, err)
			}
			n++
		}
	}
	t.Logf("%d entries of %d files", n, len(files))
}
