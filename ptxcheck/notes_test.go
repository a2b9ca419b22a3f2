package ptxcheck

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// withNotes returns v, a decoded JSON value, with a "note" added to every
// object but the vars (a map of names, where "note" would be a var).
func withNotes(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = withNotes(e, k)
		}
		if _, has := x["note"]; !has && key != "vars" {
			x["note"] = "a note"
		}
	case []any:
		for i, e := range x {
			x[i] = withNotes(e, key)
		}
	}
	return v
}

var noteField = regexp.MustCompile(`,?"[Nn]ote":"a note"`)

// TestNotesAnywhere: every example harness (kernels, bug pairs, peers)
// still loads, as the same program, with a "note" on each of its objects
// (the program, buffers, fills, steps and each kind of step, parameters,
// tables), as docs/check.md promises.
func TestNotesAnywhere(t *testing.T) {
	files, err := filepath.Glob("../examples/*/*.json")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../examples/bugs/*/*.json")
	files = append(files, more...)
	kinds := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := ParseHarness(b)
		if err != nil {
			continue // not a harness
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber() // numbers keep their text
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		noted, err := json.Marshal(withNotes(v, ""))
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParseHarness(noted)
		if err != nil {
			t.Errorf("%s with notes: %v", f, err)
			continue
		}
		var walk func([]Step)
		walk = func(steps []Step) {
			for _, s := range steps {
				for k, set := range map[string]bool{"write": s.Write != nil, "memset": s.Memset != nil, "graph": s.Graph != nil,
					"wait": s.Wait != nil, "launch": s.Launch != nil, "check": s.Check != nil, "repeat": s.Repeat != nil} {
					kinds[k] = kinds[k] || set
				}
				if s.Repeat != nil {
					walk(s.Repeat.Steps)
				}
				if s.Graph != nil {
					walk(s.Graph.Steps)
				}
			}
		}
		walk(p.Steps)
		a, _ := json.Marshal(plain)
		c, _ := json.Marshal(p)
		if got, want := noteField.ReplaceAllString(string(c), ""), string(a); got != want {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			from := max(i-60, 0)
			t.Errorf("%s with notes decodes to another program, from byte %d:\n%s\nwant\n%s", f, i, got[from:min(i+60, len(got))], want[from:min(i+60, len(want))])
		}
	}
	for _, k := range []string{"write", "memset", "wait", "launch", "check", "repeat"} {
		if !kinds[k] {
			t.Errorf("no example has a %s step: the test covers less than it says", k)
		}
	}
}
