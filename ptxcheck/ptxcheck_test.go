package ptxcheck

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symmem/symmem/internal/longtest"
)

// program parses a harness given as JSON text.
func program(t *testing.T, text string) *Program {
	t.Helper()
	var p Program
	if err := json.Unmarshal([]byte(text), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func load(t testing.TB, path string) *Source {
	t.Helper()
	src, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

const stampHarness = `{
  "vars": {"n": "5*96"},
  "buffers": [
    {"name": "in", "kind": "symmetric", "bytes": "4*n", "init": {"dtype": "f32", "value": "rank*1000 + i"}},
    {"name": "out", "kind": "plain", "bytes": 131072}
  ],
  "steps": [
    {"launch": {"entry": "stamp", "grid": 5, "block": 96, "params": [
      {"ptrarray": "in", "len": 8},
      {"ptr": "out"},
      {"struct": [{"u8": "rank"}, {"u16": "world"}, {"f32": 0.5}, {"u32": "n"}, {"u64": "1234567 + rank"}]},
      {"f32": 2}
    ]}},
    {"sync": true},
    {"check": {"buffer": "out", "dtype": "f32", "count": "n", "value": "2*(((rank + 1) % world)*1000 + i) + 0.5"}},
    {"check": {"buffer": "out", "dtype": "u64", "offset": 65536, "count": "n", "value": "1234567 + rank"}}
  ]
}`

// TestUnseenSignature: a kernel whose signature the project never saw (a
// by-value array of peer pointers, a by-value struct of u8, u16, f32, u32
// and u64 fields, a float) runs from a harness at worlds 2, 5 and 8 (2 to
// 8 with SYMMEM_LONG=1) with the grid it asks for (5 blocks of 96
// threads: three warps), and every element that every thread wrote is
// checked.
func TestUnseenSignature(t *testing.T) {
	src := load(t, "testdata/stamp.ptx")
	rep, err := RunProgram(program(t, stampHarness), src, Options{Worlds: []int{2, 5, 8}, Seeds: 1})
	if longtest.Enabled() {
		rep, err = RunProgram(program(t, stampHarness), src, Options{Worlds: []int{2, 3, 4, 5, 6, 7, 8}, Seeds: 3})
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("finding: %s\n%s", f.Title, strings.Join(f.Details, "\n"))
	}
	if len(rep.Runs) != 3 && len(rep.Runs) != 21 {
		t.Errorf("%d runs, want 3 (21 with SYMMEM_LONG=1)", len(rep.Runs))
	}
	if want := []string{"stamp: grid 5 x block 96"}; strings.Join(rep.Shapes, ";") != want[0] || rep.Cap != "none" {
		t.Errorf("shapes %q with cap %q, want %q uncapped", rep.Shapes, rep.Cap, want)
	}
}

// TestWrongResultAndCap: an expectation the kernel does not meet is a
// finding naming the rank, the element and both values; a cap on the
// launch shape shows in the report and leaves elements unwritten.
func TestWrongResultAndCap(t *testing.T) {
	src := load(t, "testdata/stamp.ptx")
	p := program(t, strings.Replace(stampHarness, `+ 0.5"`, `+ 1.5"`, 1))
	rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Seeds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != "result" ||
		!strings.Contains(rep.Findings[0].Title, "rank 0 step 3 (check out): 480 of 480 elements differ; first: element 0 is 2000.5, want 2001.5") {
		t.Fatalf("findings %+v, want one wrong result", rep.Findings)
	}
	rep, err = RunProgram(program(t, stampHarness), src, Options{Worlds: []int{2}, Seeds: 1, MaxBlocks: 2, MaxThreads: 64})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cap != "2 blocks x 64 threads" || len(rep.Shapes) != 1 || !strings.Contains(rep.Shapes[0], "ran 2 x 64: capped") {
		t.Errorf("cap %q shapes %q", rep.Cap, rep.Shapes)
	}
	if len(rep.Findings) == 0 || rep.Findings[0].Kind != "result" {
		t.Errorf("a capped launch left no element unwritten: %+v", rep.Findings)
	}
}

// TestHangs: a thread spinning on a flag nobody raises, with a load or
// with a compare-and-swap, on two flags a round (loaded or swapped), on
// a flag whose pointer it reloads every round, or with a fence each
// round, is a hang naming the PTX line of the flag's load (and the loop's
// other reads).
func TestHangs(t *testing.T) {
	src := load(t, "testdata/hang.ptx")
	for entry, line := range map[string]string{"wait_load": "PTX line 20", "wait_cas": "PTX line 39", "wait_two": "PTX line 58",
		"wait_reload": "PTX line 119", "wait_cas_two": "PTX line 172", "wait_fence": "PTX line 278"} {
		param := "ptr"
		if entry == "wait_reload" {
			param = "ptrs"
		}
		p := program(t, `{"timeout": "1ms", "buffers": [{"name": "flag", "kind": "signal", "bytes": 64}],
			"steps": [{"launch": {"entry": "`+entry+`", "grid": 1, "block": 2, "params": [{"`+param+`": "flag"}]}}, {"sync": true}]}`)
		rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Seeds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Findings) != 1 || rep.Findings[0].Kind != "hang" {
			t.Fatalf("%s: findings %+v, want one hang", entry, rep.Findings)
		}
		if d := strings.Join(rep.Findings[0].Details, "\n"); !strings.Contains(d, line) || !strings.Contains(d, "spun for 1ms") {
			t.Errorf("%s: the hang does not name %s after 1ms:\n%s", entry, line, d)
		}
		also := map[string]string{"wait_two": "flag+0x4 of rank 0 (00 00 00 00)", "wait_reload": ", and on ", "wait_cas_two": "flag+0x4 of rank 0 (00 00 00 00)"}[entry]
		if d := strings.Join(rep.Findings[0].Details, "\n"); also != "" && !strings.Contains(d, also) {
			t.Errorf("%s: the hang does not name the loop's other read (%q):\n%s", entry, also, d)
		}
	}
}

// TestSpinThatGivesUp: a wait that gives up after a count of unchanged
// polls of its own is taken for a spin, but polls on after the launch's
// timeout long enough to give up: no hang, and its own result. Its count
// changes every round, so even 5,000 polls, more rounds than a loop whose
// state repeats polls on past the timeout, end by themselves.
func TestSpinThatGivesUp(t *testing.T) {
	src := load(t, "testdata/hang.ptx")
	for _, polls := range []int{100, 5000} {
		p := program(t, fmt.Sprintf(`{"timeout": "1ms", "buffers": [{"name": "flag", "kind": "signal", "bytes": 64},
			{"name": "out", "kind": "plain", "bytes": 4}],
			"steps": [{"launch": {"entry": "wait_count", "grid": 1, "block": 1,
				"params": [{"ptr": "flag"}, {"ptr": "out"}, {"u32": "%d"}]}},
			{"sync": true}, {"check": {"buffer": "out", "dtype": "u32", "count": 1, "value": 57005}}]}`, polls))
		rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Seeds: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Findings) != 0 {
			t.Fatalf("%d polls: findings %+v, want none: the loop gives up by itself", polls, rep.Findings)
		}
	}
}

// TestSpinCountingForever: a wait that counts its polls without a bound
// changes its state every round, yet is a hang, named at its flag's load,
// once it polled maxRoundsPastTimeout rounds past the launch's timeout
// (rather than a hang only at the step limit, which names no line).
func TestSpinCountingForever(t *testing.T) {
	src := load(t, "testdata/hang.ptx")
	p := program(t, `{"timeout": "1ms", "buffers": [{"name": "flag", "kind": "signal", "bytes": 64}],
		"steps": [{"launch": {"entry": "wait_count_forever", "grid": 1, "block": 1, "params": [{"ptr": "flag"}]}}, {"sync": true}]}`)
	rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Seeds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != "hang" {
		t.Fatalf("findings %+v, want one hang", rep.Findings)
	}
	if d := strings.Join(rep.Findings[0].Details, "\n"); !strings.Contains(d, "PTX line 194") || !strings.Contains(d, "spun for") {
		t.Errorf("the hang does not name PTX line 194 and how long it spun:\n%s", d)
	}
}

// TestLivelockNamesItsLoop: a wait that writes every round is no spin, so
// only the step limit ends it: the hang names the loop's backward branch,
// each thread with the line it was at (grouped by place when many), and
// the tasks that waited for them. No thread sleeps as a spin, not even
// in a round whose store ran before its load.
func TestLivelockNamesItsLoop(t *testing.T) {
	src := load(t, "testdata/hang.ptx")
	p := program(t, `{"timeout": "1ms", "buffers": [{"name": "flag", "kind": "signal", "bytes": 64}],
		"steps": [{"launch": {"entry": "wait_beating", "grid": 1, "block": 2, "params": [{"ptr": "flag"}]}}, {"sync": true}]}`)
	rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Seeds: 2, MaxSteps: 20000})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != "hang" || rep.Findings[0].Runs != 2 {
		t.Fatalf("findings %+v, want one hang found by both runs", rep.Findings)
	}
	f := rep.Findings[0]
	if !strings.Contains(f.Title, "step limit") || !strings.HasSuffix(f.Title, "PTX lines 220)") {
		t.Errorf("title %q does not name the step limit and the loop's branch, PTX line 220", f.Title)
	}
	d := strings.Join(f.Details, "\n")
	for _, want := range []string{"dev0 wait_beating#1 block 0 lane 1", "in the loop of PTX line 220 `@%p1 bra",
		"rank1 waits for device 1 stream 1"} {
		if !strings.Contains(d, want) {
			t.Errorf("details lack %q:\n%s", want, d)
		}
	}
	threads := 0 // named at the loop's load and store, one by one or by places
	for _, l := range f.Details {
		var n int
		switch {
		case !strings.Contains(l, "at PTX line 216") && !strings.Contains(l, "at PTX line 218"):
		case strings.Contains(l, " was at "):
			threads++
		default:
			if _, err := fmt.Sscanf(l, "%d threads were at", &n); err != nil {
				t.Errorf("detail %q: %v", l, err)
			}
			threads += n
		}
	}
	if threads != 4 {
		t.Errorf("%d threads named at the loop's lines, want all 4:\n%s", threads, d)
	}

	// 384 threads: a line a place, eight names each, eight waiters.
	p = program(t, `{"timeout": "1ms", "buffers": [{"name": "flag", "kind": "signal", "bytes": 64}],
		"steps": [{"launch": {"entry": "wait_beating", "grid": 3, "block": 64, "params": [{"ptr": "flag"}]}}, {"sync": true}]}`)
	rep, err = RunProgram(p, src, Options{Worlds: []int{2}, Seeds: 1, MaxSteps: 20000})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 {
		t.Fatalf("findings %+v, want one hang", rep.Findings)
	}
	f = rep.Findings[0]
	d = strings.Join(f.Details, "\n")
	if strings.Contains(d, "spinning") {
		t.Errorf("a thread whose loop stores every round slept as a spin (its store ran before its load):\n%s", d)
	}
	if len(f.Details) != 2+maxNamed+1 || strings.Count(d, " more\n") != 2 || !strings.HasSuffix(d, "and 2 more tasks wait") {
		t.Errorf("details of 384 threads: want two places of %d names and more, then %d waiters and a count:\n%s", maxNamed, maxNamed, d)
	}
}

// TestRaisedSpinsSleep: a thread whose loop polls two flags, or polls one
// and fences each round, sleeps while what it polls holds what it read,
// and wakes when block 1 raises it: the run takes about the raiser's
// steps, not a step per poll as well. Through the fences on both sides,
// the fenced wait reads block 1's data word without a race.
func TestRaisedSpinsSleep(t *testing.T) {
	src := load(t, "testdata/hang.ptx")
	for _, c := range []struct {
		entry, params, after string // the launch, and the steps after its sync
		raiser, most         int64  // the raisers' steps (both ranks), and the bound
	}{
		{"wait_two_raised", `{"ptr": "flag"}`, "", 802, 1200}, // 401 strong stores a rank
		{"wait_fence_raised", `{"ptr": "flag"}, {"ptr": "out"}`,
			`, {"check": {"buffer": "out", "dtype": "u32", "count": 1, "value": 57005}}`, 400, 700}, // 200 busy stores a rank
	} {
		p := program(t, `{"timeout": "1ms", "buffers": [{"name": "flag", "kind": "signal", "bytes": 64},
			{"name": "out", "kind": "plain", "bytes": 4}],
			"steps": [{"launch": {"entry": "`+c.entry+`", "grid": 2, "block": 1, "params": [`+c.params+`]}}, {"sync": true}`+c.after+`]}`)
		rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Seeds: 4})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Findings) != 0 {
			t.Fatalf("%s: findings %+v, want none", c.entry, rep.Findings)
		}
		for _, r := range rep.Runs {
			if r.Steps > c.most {
				t.Errorf("%s: world %d seed %d: %d steps, want the raisers' %d and little more", c.entry, r.World, r.Seed, r.Steps, c.raiser)
			}
		}
	}
}

// TestRefusal: the module's unsupported lines are all listed (those of
// module scope and of an entry whose parameters cannot be read included);
// a launched entry that uses what the interpreter cannot run is refused
// before anything runs, with its own unsupported lines listed; the
// module's other entries still run.
func TestRefusal(t *testing.T) {
	src := load(t, "testdata/unsupported.ptx")
	probs := src.Unsupported()
	var lines []int
	for _, p := range probs {
		lines = append(lines, p.Line)
	}
	if len(probs) != 5 || lines[0] != 19 || lines[1] != 21 || lines[2] != 23 || lines[3] != 41 || lines[4] != 44 {
		t.Fatalf("unsupported lines %v, want 19, 21, 23, 41 and 44:\n%v", lines, probs)
	}
	harness := `{"buffers": [{"name": "b", "kind": "plain", "bytes": 64}],
		"steps": [{"launch": {"entry": "ENTRY", "grid": 1, "block": 1, "params": [{"ptr": "b"}]}}, {"sync": true},
		{"check": {"buffer": "b", "dtype": "u32", "count": 1, "value": 7}}]}`
	_, err := RunProgram(program(t, strings.Replace(harness, "ENTRY", "needs_more", 1)), src, Options{})
	var ref *Refusal
	if !errors.As(err, &ref) || len(ref.Problems) != 3 || !strings.Contains(err.Error(), "wgmma.fence.sync.aligned") ||
		!strings.Contains(err.Error(), "cp.async.bulk.commit_group") || !strings.Contains(err.Error(), "tex.1d") {
		t.Fatalf("error %v, want a refusal listing the lines", err)
	}
	if _, err := RunProgram(program(t, strings.Replace(harness, "ENTRY", "odd_params", 1)), src, Options{}); err == nil ||
		!strings.Contains(err.Error(), ".v4") {
		t.Fatalf("the entry with unreadable parameters: %v, want its declaration named", err)
	}
	rep, err := RunProgram(program(t, strings.Replace(harness, "ENTRY", "fine", 1)), src, Options{Worlds: []int{2}})
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("the supported entry: %v %+v", err, rep)
	}
}

// TestBadHarness: every problem of a harness is named in one error.
func TestBadHarness(t *testing.T) {
	src := load(t, "testdata/stamp.ptx")
	p := program(t, `{"worlds": "9-2", "vars": {"m": "n + 1"}, "buffers": [{"name": "in", "kind": "weird", "bytes": "4*"}],
		"steps": [{"launch": {"entry": "stamp", "grid": 1, "block": 1, "params": [
			{"u32": 1}, {"ptr": "nope"}, {"struct": [{"u8": 1}]}]}},
			{"check": {"buffer": "in", "dtype": "f128", "value": "1 + typo"}},
			{"sync": true, "barrier": true},
			{"launch": {"entry": "nothing", "grid": 1, "block": 1, "params": []}}]}`)
	err := Validate(p, src)
	if err == nil {
		t.Fatal("a bad harness validated")
	}
	for _, want := range []string{
		`worlds "9-2"`, `kind "weird"`, `bytes: expression "4*"`,
		"3 parameters given, the entry declares 4",
		"parameter 0: u32 is a scalar of 4 bytes: the declaration .param .align 8 .b8 stamp_param_0[64] is an array",
		`no buffer "nope"`, `dtype "f128"`, "step 3: want exactly one of", `no entry point "nothing"`,
		`step 2 (check in): value: expression "1 + typo": unknown variable "typo"`, `vars: m: expression "n + 1": unknown variable "n"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}

// TestHarnessMistakes: a harness that validates but asks, in some world,
// for what cannot be (a buffer of 0 bytes, a parameter out of its type's
// range, a grid of no blocks, a check past its buffer's end) fails the
// whole check with a HarnessError naming the world, the rank, the step
// and the value, rather than giving a finding about the kernel.
func TestHarnessMistakes(t *testing.T) {
	src := load(t, "testdata/stamp.ptx")
	for _, c := range []struct {
		old, new string
		world    int
		want     string
	}{
		{`"bytes": "4*n"`, `"bytes": "4*n*(3-world)"`, 3, "rank 0: buffer in: 0 bytes out of range"},
		{`{"u8": "rank"}`, `{"u8": "rank*200"}`, 3, "rank 2: step 1 (launch stamp): parameter 2 (stamp_param_2): 400 out of the range of u8"},
		{`"grid": 5`, `"grid": "5*(world-2)"`, 2, "rank 0: step 1 (launch stamp): device 0: launch stamp: grid of 0 blocks out of range"},
		{`"count": "n", "value": "2*`, `"count": "n*1000", "value": "2*`, 2, "480000 elements of f32 at offset 0 overrun the 131072-byte buffer out"},
		{`"grid": 5`, `"grid": "5 + i"`, 2, `rank 0: step 1 (launch stamp): grid: expression "5 + i": unknown variable "i"`},
	} {
		text := strings.Replace(stampHarness, c.old, c.new, 1)
		if text == stampHarness {
			t.Fatalf("%s is not in the harness", c.old)
		}
		rep, err := RunProgram(program(t, text), src, Options{Worlds: []int{2, 3}})
		var he *HarnessError
		if !errors.As(err, &he) || he.World != c.world || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: RunProgram = %+v, %v; want a harness error in a world of %d saying %q", c.new, rep, err, c.world, c.want)
		}
	}
}

// TestShrinkPastHarnessMistakes: a shrink that tries a world the harness
// cannot run in (a grid of world-2 blocks, none in a world of 2) takes it
// for one that does not reproduce, and shrinks on.
func TestShrinkPastHarnessMistakes(t *testing.T) {
	src := load(t, "testdata/hang.ptx")
	p := program(t, `{"timeout": "1ms", "buffers": [{"name": "flag", "kind": "signal", "bytes": 64}],
		"steps": [{"launch": {"entry": "wait_load", "grid": "world-2", "block": 1, "params": [{"ptr": "flag"}]}}, {"sync": true}]}`)
	opts := Options{Worlds: []int{3}, Seeds: 1}
	rep, err := RunProgram(p, src, opts)
	if err != nil || len(rep.Findings) != 1 || rep.Findings[0].Kind != "hang" {
		t.Fatalf("RunProgram = %+v, %v; want one hang", rep, err)
	}
	s, err := Shrink(p, src, opts, rep.Findings[0], ShrinkLimits{})
	if err != nil {
		t.Fatalf("Shrink: %v", err)
	}
	if s.World != 3 || s.Finding == nil || s.Finding.Key() != rep.Findings[0].Key() {
		t.Errorf("shrunk to world %d, finding %+v; want the hang at world 3", s.World, s.Finding)
	}
}

// TestLoadHarnessErrors: a harness file that is not one JSON object, or
// that has a field the harness does not know, says where it goes wrong.
func TestLoadHarnessErrors(t *testing.T) {
	dir := t.TempDir()
	for text, want := range map[string]string{
		"{\"ptx\": \"k.ptx\",\n  \"worlds\" 2}":      "line 2 column 12: invalid character '2'",
		"{\"ptx\": \"k.ptx\"}\n{\"ptx\": \"k.ptx\"}": "line 2 column 1: text after the JSON value",
		"{\"ptx\": \"k.ptx\", \"wolrds\": \"2\"}":    `unknown field "wolrds"`,
	} {
		path := filepath.Join(dir, "h.json")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadHarness(path)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "harness "+path) {
			t.Errorf("%q: %v, want an error naming the file and saying %q", text, err, want)
		}
	}
	path := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(path, []byte("{\"ptx\": \"k.ptx\"}\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := LoadHarness(path); err != nil || p.PTX != filepath.Join(dir, "k.ptx") {
		t.Errorf("a harness with blank lines after it: %+v, %v", p, err)
	}
}

// TestSignatures: parameter layouts follow the declarations' alignment.
func TestSignatures(t *testing.T) {
	sigs := signatures(`.visible .entry k(.param .u8 a, .param .align 16 .b8 s[20], .param .u16 b, .param .u64 .ptr .global .align 8 p) {}
.visible .entry q(.param .u64 .ptr .align 1 a, .param .u32 b) {}
.visible .entry bad(.param .v4 .u8 x) {}`)
	if len(sigs) != 3 || sigs[1].err != nil || sigs[1].Params[0].Align != 8 || sigs[1].Params[1].Offset != 8 || sigs[2].err == nil {
		t.Fatalf("q and bad: %+v, %+v: want q's pointer 8-aligned (not its .ptr .align 1), bad refused alone", sigs[1], sigs[2])
	}
	var offs []int
	for _, p := range sigs[0].Params {
		offs = append(offs, p.Offset)
	}
	if len(offs) != 4 || offs[0] != 0 || offs[1] != 16 || offs[2] != 36 || offs[3] != 40 || sigs[0].Size != 48 {
		t.Errorf("offsets %v size %d, want [0 16 36 40] 48", offs, sigs[0].Size)
	}
}

// TestExpressions covers the harness's arithmetic.
func TestExpressions(t *testing.T) {
	sc := newScope(nil)
	eval := func(src string, bind map[int]float64) (*expr, *frame, error) {
		x, err := sc.expr(src)
		if err != nil {
			return nil, nil, err
		}
		f := sc.frame()
		f.bind(slotWorld, 4)
		for s, v := range bind {
			f.bind(s, v)
		}
		return x, f, nil
	}
	for src, want := range map[string]float64{
		"1 + 2*3": 7, "(1+2)*3": 9, "-2 - -3": 1, "7 % 4": 3, "0x10 / 4": 4, "1.5e1": 15,
		"sum_ranks(rank)": 6, "sum_ranks(rank*10 + i)": 60 + 4*2, "min(3, 4) + max(3, 4) + floor(2.7)": 9,
		"rank == 2": 1, "rank != 2": 0, "world - 1 < 3": 0, "world - 1 <= 3": 1, "i > 1": 1, "i >= 3": 0,
		"(i == 2) + (i == 2) * 2": 3, "max(i == 2, 0)": 1,
		"sum(k, 0, 3, k*k)": 14, "sum(k, 1, world, k)": 10, "sum(k, 0, i, sum(j, 0, k, 1))": 6, "sum(k, 3, 2, 1)": 0,
		"sum(k, 0.5, 2, k)": 3, "sqrt(16) + sqrt(world)": 6, "sum(rank_, 0, 1, sum_ranks(rank_ + rank))": 2*6 + 4,
		"sum(k, 0, 1, sum(k, 0, 2, k)) + sum_ranks(sum_ranks(rank))": 2*3 + 4*6, "-7 % 4": -3, "7.5 % 2": 1.5,
	} {
		x, f, err := eval(src, map[int]float64{slotI: 2, slotRank: 2})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := x.eval(f)
		if err != nil || got != want {
			t.Errorf("%s = %v (%v), want %v", src, got, err, want)
		}
	}
	for _, bad := range []string{"1 +", "foo(1)", "min(1)", "(1", "1 $ 2", "1 = 2", "1 < 2 < 3", "rank ==", "!1",
		"sum(1, 0, 3, 1)", "sum(k, 0, 3)", "sum(i, 0, 3, i)", "sqrt(1, 2)"} {
		if _, err := parseExpr(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if _, err := sc.expr("nope + 1"); err == nil || !strings.Contains(err.Error(), `unknown variable "nope"`) {
		t.Errorf("unknown variable: %v", err)
	}
	// A name sum binds is bound in its term only.
	if _, err := sc.expr("sum(k, 0, 1, k) + k"); err == nil || !strings.Contains(err.Error(), `unknown variable "k"`) {
		t.Errorf("sum's name outside its term: %v", err)
	}
	// A built-in not bound where it is read.
	if x, f, err := eval("iter + 1", nil); err != nil {
		t.Error(err)
	} else if _, err := x.eval(f); err == nil || !strings.Contains(err.Error(), `unknown variable "iter"`) {
		t.Errorf("iter outside a repeat: %v", err)
	}
	// Integers: int64's range, its ends included, and nothing past them.
	for src, want := range map[string]int64{"-9223372036854775808": math.MinInt64, "7/2*2": 7, "2.5": 0,
		"9223372036854775808": 0, "-9223372036854775808*2": 0, "1/0": 0} {
		x, f, err := eval(src, nil)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := x.evalInt(f)
		if want == 0 && (err == nil || !strings.Contains(err.Error(), "not an integer")) || want != 0 && (err != nil || got != want) {
			t.Errorf("%s as an integer: %d, %v; want %d (0: an error)", src, got, err, want)
		}
	}
}

// TestEncodeRanges: integer parameters and fills take their type's whole
// range, ends included, and refuse the first value past either end, even
// where a float64 cannot tell it from the end (2^64 and 2^64-1).
func TestEncodeRanges(t *testing.T) {
	for _, c := range []struct {
		dtype string
		v     float64
		want  uint64 // the bytes, little-endian; ok false: refused
		ok    bool
	}{
		{"u8", 255, 0xff, true}, {"u8", 256, 0, false}, {"u8", -1, 0, false},
		{"s8", -128, 0x80, true}, {"s8", 127, 0x7f, true}, {"s8", 128, 0, false},
		{"u32", 4294967295, 0xffffffff, true}, {"u32", 4294967296, 0, false},
		{"s64", -9223372036854775808, 1 << 63, true}, {"s64", 9223372036854775808, 0, false},
		{"u64", 18446744073709549568, 0xfffffffffffff800, true}, {"u64", 18446744073709551616, 0, false},
	} {
		var b [8]byte
		err := encode(c.dtype, c.v, b[:])
		got := binary.LittleEndian.Uint64(b[:])
		if c.ok && (err != nil || got != c.want) || !c.ok && (err == nil || !strings.Contains(err.Error(), "out of the range")) {
			t.Errorf("encode(%s, %v) = %#x, %v; want %#x (ok %v)", c.dtype, c.v, got, err, c.want, c.ok)
		}
	}
}

// TestDebugLines: .loc, .file and .section are hidden from the
// interpreter and become the line table (inlined code names where it was
// inlined); the other lines stay for the interpreter to judge.
func TestDebugLines(t *testing.T) {
	text := strings.Join([]string{
		".version 8.0", // 1
		".visible .entry k()",
		"{",
		"\t.local .align 8 .b8 \t__local_depot0[8]; tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [t, {%r1}];",
		"\t.loc\t1 7 3",
		"\tret;", // 6
		"\t.loc\t1 9 5, function_name $L__info_string0, inlined_at 1 12 2",
		"\tret;", // 8
		"}",
		"\t.file\t1 \"k.cu\"",
		"\t.section\t.debug_str",
		"\t{",
		".b8 95,0",
		"\t}",
	}, "\n")
	clean, locs := debugLines(text)
	lines := strings.Split(clean, "\n")
	if !strings.Contains(lines[3], ".local") || lines[4] != "" || lines[9] != "" || lines[10] != "" || lines[12] != "" || lines[13] != "" {
		t.Errorf("cleaned text:\n%s", clean)
	}
	if got := locs[6].String(); got != "k.cu:7" {
		t.Errorf("line 6 is at %q, want k.cu:7", got)
	}
	if got := locs[8].String(); got != "k.cu:9 (inlined at k.cu:12)" {
		t.Errorf("line 8 is at %q", got)
	}
	src, err := Parse("k.ptx", text)
	if err != nil {
		t.Fatal(err)
	}
	if p := src.Unsupported(); len(p) != 1 || p[0].Line != 4 || !strings.Contains(p[0].Err, "tex") {
		t.Errorf("unsupported: %v", p)
	}
}

// TestDynamicShared: a launch's "shared" bytes are the blocks' dynamic
// shared memory (an extern __shared__ array); without them the kernel's
// accesses fall outside shared memory and the run reports the error.
func TestDynamicShared(t *testing.T) {
	src := load(t, "testdata/dynshared.ptx")
	harness := `{"buffers": [{"name": "out", "kind": "plain", "bytes": 256}],
		"steps": [{"launch": {"entry": "rotate", "grid": 1, "block": 64, SHARED"params": [{"ptr": "out"}]}}, {"sync": true},
		{"check": {"buffer": "out", "dtype": "u32", "count": 64, "value": "(i + 1) % 64"}}]}`
	rep, err := RunProgram(program(t, strings.Replace(harness, "SHARED", `"shared": "4*64", `, 1)), src, Options{Worlds: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 0 {
		t.Fatalf("with 256 bytes of dynamic shared memory: %+v", rep.Findings)
	}
	rep, err = RunProgram(program(t, strings.Replace(harness, "SHARED", "", 1)), src, Options{Worlds: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != "error" || !strings.Contains(rep.Findings[0].Title, "shared") {
		t.Fatalf("without dynamic shared memory: %+v, want one error naming shared memory", rep.Findings)
	}
	_, err = RunProgram(program(t, strings.Replace(harness, "SHARED", `"shared": "-4", `, 1)), src, Options{Worlds: []int{2}})
	var he *HarnessError
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "-4 bytes of dynamic shared memory out of range") {
		t.Fatalf("with -4 bytes of dynamic shared memory: %v, want the launch refused as the harness's mistake", err)
	}
	err = Validate(program(t, strings.Replace(harness, "SHARED", `"shared": "4*", `, 1)), src)
	if err == nil || !strings.Contains(err.Error(), "shared") {
		t.Errorf("a bad shared expression: %v, want an error naming it", err)
	}
}

// TestWarpSyncOrders: bar.warp.sync orders a lane's shared-memory store
// before its neighbour's load: no race with it, a race without it; the
// cluster barrier (a cluster of one block) orders a store before another
// warp's load.
func TestWarpSyncOrders(t *testing.T) {
	src := load(t, "testdata/warpsync.ptx")
	harness := `{"buffers": [{"name": "out", "kind": "plain", "bytes": 128}],
		"steps": [{"launch": {"entry": "ENTRY", "grid": 1, "block": 32, "params": [{"ptr": "out"}]}}, {"sync": true}CHECK]}`
	check := `, {"check": {"buffer": "out", "dtype": "u32", "count": 32, "value": "(i + 1) % 32 + 100"}}`
	rep, err := RunProgram(program(t, strings.NewReplacer("ENTRY", "with_sync", "CHECK", check).Replace(harness)), src, Options{Worlds: []int{2}, Seeds: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 0 {
		t.Fatalf("with bar.warp.sync: %+v", rep.Findings)
	}
	rep, err = RunProgram(program(t, strings.NewReplacer("ENTRY", "no_sync", "CHECK", "").Replace(harness)), src, Options{Worlds: []int{2}, Seeds: 4})
	if err != nil {
		t.Fatal(err)
	}
	races := 0
	for _, f := range rep.Findings {
		if f.Kind == "race" {
			races++
		}
	}
	if races == 0 {
		t.Fatalf("without bar.warp.sync: no race found: %+v", rep.Findings)
	}
	cluster := `{"buffers": [{"name": "out", "kind": "plain", "bytes": 256}],
		"steps": [{"launch": {"entry": "cluster_sync", "grid": 1, "block": 64, "params": [{"ptr": "out"}]}}, {"sync": true},
		{"check": {"buffer": "out", "dtype": "u32", "count": 64, "value": "(i + 32) % 64 + 100"}}]}`
	rep, err = RunProgram(program(t, cluster), src, Options{Worlds: []int{2}, Seeds: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 0 {
		t.Fatalf("across barrier.cluster: %+v", *rep.Findings[0])
	}
	rep, err = RunProgram(program(t, strings.Replace(cluster, "cluster_sync", "cluster_relaxed", 1)), src, Options{Worlds: []int{2}, Seeds: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) == 0 || rep.Findings[0].Kind != "race" {
		t.Fatalf("across barrier.cluster.arrive.relaxed: %+v, want a race", rep.Findings)
	}
}

// TestPeerFilesDecode: every line of the peer kernels' PTX
// (../shared/peers/ptx: vLLM, SGLang, FlashInfer, PyTorch, MSCCL++ at
// compute_80, 90 and 100) is supported, and every entry's parameter list
// is readable.
func TestPeerFilesDecode(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "shared", "peers", "ptx", "*.ptx"))
	if len(files) == 0 {
		t.Skip("../shared/peers/ptx is absent")
	}
	for _, f := range files {
		src := load(t, f)
		if probs := src.Unsupported(); len(probs) > 0 {
			t.Errorf("%s: %d unsupported lines, the first %v", filepath.Base(f), len(probs), probs[0])
		}
		for _, e := range src.Entries() {
			if _, err := src.Signature(e); err != nil {
				t.Errorf("%s: %v", filepath.Base(f), err)
			}
		}
	}
}
