package ptxcheck

import (
	"strings"
	"testing"
)

// findings runs a harness on testdata/steps.ptx at world 2 and returns
// its findings' titles and details, one string each.
func findings(t *testing.T, harness string, seeds int) []string {
	t.Helper()
	rep, err := RunProgram(program(t, harness), load(t, "testdata/steps.ptx"), Options{Worlds: []int{2}, Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range rep.Findings {
		out = append(out, f.Kind+": "+f.Title+"\n"+strings.Join(f.Details, "\n"))
	}
	return out
}

// TestGraphFreezesParameters: a launch captured in a graph keeps the
// parameters of its capture: a graph captured in each of 2 iterations of
// a repeat and replayed 3 times writes iter's value at capture 3 times
// (0 0 0 1 1 1), where the same launch repeated writes 0 1 2.
func TestGraphFreezesParameters(t *testing.T) {
	const harness = `{"buffers": [{"name": "out", "kind": "plain", "bytes": 64, "init": {"dtype": "u32", "value": 0}}],
	  "steps": [
	    {"repeat": {"times": 2, "steps": [
	      {"graph": {"stream": 1, "replays": 3, "steps": [
	        {"launch": {"entry": "append", "grid": 1, "block": 1, "params": [{"ptr": "out"}, {"u32": "iter"}]}}]}}]}},
	    {"wait": {"streams": [1]}},
	    {"repeat": {"times": 3, "steps": [
	      {"launch": {"entry": "append", "grid": 1, "block": 1, "stream": 1, "params": [{"ptr": "out"}, {"u32": "iter"}]}}]}},
	    {"wait": {"streams": [1]}},
	    {"check": {"buffer": "out", "dtype": "u32", "count": 1, "value": 9}},
	    {"check": {"buffer": "out", "dtype": "u32", "offset": 4, "count": 9, "value": "floor(i/3) * (i < 6) + (i - 6) * (i >= 6)"}}
	  ]}`
	if got := findings(t, harness, 2); len(got) != 0 {
		t.Fatalf("findings: %q", got)
	}
	// The oracle is not the harness's own arithmetic: a check that wants
	// every replay to see a new value fails.
	wrong := strings.Replace(harness, `"floor(i/3) * (i < 6) + (i - 6) * (i >= 6)"`, `"i % 3 * (i < 6) + (i - 6) * (i >= 6)"`, 1)
	got := findings(t, wrong, 1)
	if len(got) != 1 || !strings.HasPrefix(got[0], "result:") || !strings.Contains(got[0], "element 1 is 0, want 1") {
		t.Fatalf("a check wanting fresh values per replay: %q, want one result finding at element 1", got)
	}
}

// TestUnorderedMemset: a memset of rank 1's signal pad on rank 1's stream
// is ordered with nothing rank 0 does, so rank 0's kernel storing into
// that pad races with it, and the race names the host's memset by the
// harness step that made it; after a sync and a barrier (the harness's own
// ordering) the same two are clean. The steps differ by rank through
// "when".
func TestUnorderedMemset(t *testing.T) {
	const harness = `{"buffers": [{"name": "pad", "kind": "signal", "bytes": 64}],
	  "steps": [
	    {"when": "rank == 1", "memset": {"buffer": "pad", "value": 0, "bytes": 4}},
	    ORDER
	    {"when": "rank == 0", "launch": {"entry": "set", "grid": 1, "block": 1, "params": [{"ptr": "pad", "rank": 1}]}},
	    {"sync": true}
	  ]}`
	got := findings(t, strings.Replace(harness, "ORDER", "", 1), 4)
	if len(got) != 1 || !strings.HasPrefix(got[0], "race:") || !strings.Contains(got[0], "the host's memset (store) of step 1 (memset pad)") ||
		!strings.Contains(got[0], "PTX line 43") {
		t.Fatalf("unordered memset: %q, want one race between the host's memset of step 1 and the store at PTX line 43", got)
	}
	if got := findings(t, strings.Replace(harness, "ORDER", `{"sync": true}, {"barrier": true},`, 1), 4); len(got) != 0 {
		t.Fatalf("memset ordered by a sync and a barrier: %q, want none", got)
	}
	// A memset captured in a graph is its replay's: the graph step's.
	graph := strings.Replace(harness, `{"when": "rank == 1", "memset": {"buffer": "pad", "value": 0, "bytes": 4}}`,
		`{"when": "rank == 1", "graph": {"steps": [{"memset": {"buffer": "pad", "value": 0, "bytes": 4}}]}}`, 1)
	got = findings(t, strings.Replace(graph, "ORDER", "", 1), 4)
	if len(got) != 1 || !strings.Contains(got[0], "the host's memset (store) of step 1 (graph)") {
		t.Fatalf("unordered memset of a graph: %q, want one race naming the host's memset of step 1 (graph)", got)
	}
}

// TestStreamsOverlap: two streams of one rank run their kernels at once:
// a kernel on stream 1 that waits for a flag the kernel on stream 2 sets
// finishes; on one stream the same two kernels hang (the waiter never
// lets the setter start).
func TestStreamsOverlap(t *testing.T) {
	const harness = `{"timeout": "1ms", "buffers": [{"name": "flag", "kind": "signal", "bytes": 4}],
	  "steps": [
	    {"launch": {"entry": "spin", "grid": 1, "block": 1, "stream": 1, "params": [{"ptr": "flag"}]}},
	    {"launch": {"entry": "set", "grid": 1, "block": 1, "stream": SETTER, "params": [{"ptr": "flag"}]}},
	    {"wait": {"streams": [1, 2]}},
	    {"check": {"buffer": "flag", "dtype": "u32", "value": 1}}
	  ]}`
	if got := findings(t, strings.Replace(harness, "SETTER", "2", 1), 2); len(got) != 0 {
		t.Fatalf("two streams: %q, want none", got)
	}
	got := findings(t, strings.Replace(harness, "SETTER", "1", 1), 1)
	if len(got) != 1 || !strings.HasPrefix(got[0], "hang:") {
		t.Fatalf("one stream: %q, want one hang", got)
	}
}

// TestWhenSelects: a step with "when" runs on the ranks where it is not 0,
// and a check may differ by rank the same way.
func TestWhenSelects(t *testing.T) {
	const harness = `{"worlds": "3", "buffers": [{"name": "out", "kind": "plain", "bytes": 16}],
	  "steps": [
	    {"write": {"buffer": "out", "dtype": "u32", "value": 3}},
	    {"when": "rank == world - 1", "write": {"buffer": "out", "dtype": "u32", "value": 7}},
	    {"when": "rank != world - 1", "check": {"buffer": "out", "dtype": "u32", "value": 3}},
	    {"when": "rank == world - 1", "check": {"buffer": "out", "dtype": "u32", "value": 7}},
	    {"check": {"buffer": "out", "dtype": "u32", "value": "3 + 4*(rank == 2)"}}
	  ]}`
	rep, err := RunProgram(program(t, harness), load(t, "testdata/steps.ptx"), Options{Seeds: 1})
	if err != nil || len(rep.Findings) != 0 || len(rep.Runs) != 1 {
		t.Fatalf("%v %+v", err, rep)
	}
	rep, err = RunProgram(program(t, strings.Replace(harness, `"when": "rank == world - 1", "write"`, `"write"`, 1)),
		load(t, "testdata/steps.ptx"), Options{Seeds: 1})
	if err != nil || len(rep.Findings) != 2 || rep.Findings[0].Kind != "result" || rep.Findings[1].Kind != "result" {
		t.Fatalf("every rank writing 7: %v %+v, want two result findings (steps 3 and 5)", err, rep)
	}
}

// TestBadNewSteps: the new steps' mistakes are named, each by its field.
func TestBadNewSteps(t *testing.T) {
	p := program(t, `{"buffers": [{"name": "out", "kind": "plain", "bytes": 64}],
	  "steps": [
	    {"graph": {"stream": 1, "replays": "2 +", "steps": [
	      {"check": {"buffer": "out", "dtype": "u32", "value": 0}},
	      {"launch": {"entry": "set", "grid": 1, "block": 1, "stream": 2, "params": [{"ptr": "out"}]}},
	      {"memset": {"buffer": "out", "stream": 3}}]}},
	    {"graph": {"steps": []}},
	    {"memset": {"buffer": "out", "rank": 1, "value": "x +"}},
	    {"memset": {"buffer": "nope", "stream": 99}},
	    {"wait": {"streams": []}},
	    {"wait": {"streams": [65]}},
	    {"when": "rank =", "sync": true},
	    {"write": {"buffer": "out", "dtype": "u32", "value": 0, "stream": -1}}
	  ]}`)
	err := Validate(p, load(t, "testdata/steps.ptx"))
	if err == nil {
		t.Fatal("a bad harness validated")
	}
	for _, want := range []string{
		`step 1 (graph): replays: expression "2 +"`,
		"step 1.1: a graph captures only launch and memset steps",
		"step 1.2 (launch set): stream 2: a graph's steps run on the graph's stream 1",
		"step 1.3 (memset out): stream 3: a graph's steps run on the graph's stream 1",
		"step 2 (graph): steps: none given",
		`step 3 (memset out): rank of plain buffer "out"`,
		`step 3 (memset out): value: expression "x +"`,
		`step 4 (memset nope): no buffer "nope"`,
		"step 4 (memset nope): stream 99 out of range",
		"step 5 (wait): streams: none given",
		"step 6 (wait): stream 65 out of range",
		`step 7: when: expression "rank ="`,
		"step 8 (write out): stream -1 out of range",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	// What only a run can evaluate is the harness's mistake, named by
	// its step.
	_, err = RunProgram(program(t, `{"buffers": [{"name": "pad", "kind": "signal", "bytes": 64}],
	  "steps": [{"memset": {"buffer": "pad", "value": 256}}]}`), load(t, "testdata/steps.ptx"), Options{Seeds: 1})
	if err == nil || !strings.Contains(err.Error(), "step 1 (memset pad): value 256 out of the range of a byte") {
		t.Errorf("a memset of 256: %v", err)
	}
	_, err = RunProgram(program(t, `{"buffers": [{"name": "pad", "kind": "signal", "bytes": 64}],
	  "steps": [{"memset": {"buffer": "pad", "offset": 60, "bytes": 8}}]}`), load(t, "testdata/steps.ptx"), Options{Seeds: 1})
	if err == nil || !strings.Contains(err.Error(), "8 bytes at offset 60 overrun the 64-byte buffer pad") {
		t.Errorf("a memset past the end: %v", err)
	}
}

// TestGraphCapturesMemsetsAndWhen: a graph captures memsets as well as
// launches, each with its value evaluated at capture, and a when inside a
// graph selects per rank at capture: rank 1's graphs fill m with iter + 5
// of their capture (the last, 6), rank 0's leave it alone; both ranks'
// append launches run every replay.
func TestGraphCapturesMemsetsAndWhen(t *testing.T) {
	const harness = `{"buffers": [
	    {"name": "out", "kind": "plain", "bytes": 64, "init": {"dtype": "u32", "value": 0}},
	    {"name": "m", "kind": "plain", "bytes": 8, "init": {"dtype": "u8", "value": 0}}],
	  "steps": [
	    {"repeat": {"times": 2, "steps": [
	      {"graph": {"stream": 3, "replays": 2, "steps": [
	        {"when": "rank == 1", "memset": {"buffer": "m", "value": "iter + 5", "bytes": 4}},
	        {"launch": {"entry": "append", "grid": 1, "block": 1, "params": [{"ptr": "out"}, {"u32": "10 + iter"}]}}]}}]}},
	    {"wait": {"streams": [3]}},
	    {"check": {"buffer": "m", "dtype": "u8", "count": 4, "value": "6 * (rank == 1)"}},
	    {"check": {"buffer": "m", "dtype": "u8", "offset": 4, "value": 0}},
	    {"check": {"buffer": "out", "dtype": "u32", "count": 5, "value": "(i == 0)*4 + (i > 0)*(10 + (i > 2))"}}
	  ]}`
	if got := findings(t, harness, 2); len(got) != 0 {
		t.Fatalf("findings: %q", got)
	}
	if got := findings(t, strings.Replace(harness, `"value": "iter + 5"`, `"value": 5`, 1), 1); len(got) != 1 || !strings.Contains(got[0], "rank 1 step 3 (check m)") {
		t.Fatalf("a memset of 5: %q, want rank 1's check of m to fail", got)
	}
}
