package ptxcheck

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// manyRacesPTX is an entry whose one thread stores n words of the next
// rank's buffer, each at a line of its own, then loads the same n words
// of its own buffer: n pairs of racing lines, found on every device.
func manyRacesPTX(n int) string {
	var b strings.Builder
	b.WriteString(`.version 8.0
.target sm_90
.address_size 64

.visible .entry many(
	.param .u64 many_param_0,
	.param .u32 many_param_1,
	.param .u32 many_param_2
)
{
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [many_param_0];
	ld.param.u32 	%r1, [many_param_1];
	ld.param.u32 	%r2, [many_param_2];
	add.s32 	%r3, %r1, 1;
	rem.u32 	%r3, %r3, %r2;
	mul.wide.u32 	%rd2, %r3, 8;
	add.s64 	%rd3, %rd1, %rd2;
	ld.global.u64 	%rd4, [%rd3];
	mul.wide.u32 	%rd2, %r1, 8;
	add.s64 	%rd3, %rd1, %rd2;
	ld.global.u64 	%rd5, [%rd3];
`)
	for i := range n {
		fmt.Fprintf(&b, "\tst.global.u32 \t[%%rd4+%d], %%r1;\n", 4*i)
	}
	for i := range n {
		fmt.Fprintf(&b, "\tld.global.u32 \t%%r4, [%%rd5+%d];\n", 4*i)
	}
	b.WriteString("\tret;\n}\n")
	return b.String()
}

const manyRacesHarness = `{
  "buffers": [{"name": "buf", "kind": "symmetric", "bytes": 4096}],
  "steps": [
    {"launch": {"entry": "many", "grid": 1, "block": 1, "params": [{"ptrs": "buf"}, {"u32": "rank"}, {"u32": "world"}]}},
    {"sync": true}
  ]
}`

// TestEveryDistinctRace: a run whose races pass 32 distinct pairs of
// sites per device pair (48 pairs of lines, at world 4) reports every
// one of them: the pairs found last are not cut.
func TestEveryDistinctRace(t *testing.T) {
	const n = 48
	src, err := Parse("many.ptx", manyRacesPTX(n))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunProgram(program(t, manyRacesHarness), src, Options{Worlds: []int{4}, Seeds: 1})
	if err != nil {
		t.Fatal(err)
	}
	// first is the PTX line of the first store.
	first := 1 + strings.Count(strings.Split(manyRacesPTX(n), "\tst.global")[0], "\n")
	for i := range n {
		store, load := fmt.Sprintf("store at PTX line %d", first+i), fmt.Sprintf("load at PTX line %d", first+n+i)
		found := false
		for _, f := range rep.Findings {
			found = found || f.Kind == "race" && strings.Contains(f.Title, store) && strings.Contains(f.Title, load)
		}
		if !found {
			var titles []string
			for _, f := range rep.Findings {
				titles = append(titles, f.Title)
			}
			t.Fatalf("no race between the %s and the %s among %d findings:\n%s", store, load, len(rep.Findings), strings.Join(titles, "\n"))
		}
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "no .loc lines") || !strings.Contains(rep.Notes[0], "-lineinfo") {
		t.Errorf("PTX without .loc lines, notes %q", rep.Notes)
	}
	if len(rep.Findings) != n {
		t.Errorf("%d findings, want %d (one per pair of lines, a race and its mirror one):\n%s", len(rep.Findings), n, dumpFindings(rep))
	}
}

func dumpFindings(rep *Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		fmt.Fprintf(&b, "%s: %s\n  %s\n", f.Kind, f.Title, strings.Join(f.Details, "\n  "))
	}
	return b.String()
}

// TestShrinkKeepsDeclaredWorlds: a race found at world 4 that world 2
// would show too shrinks to world 2 when the harness declares it, and
// stays at 4 when the harness declares 3 and 4 only (world 3 shows it
// too) or 4 alone.
func TestShrinkKeepsDeclaredWorlds(t *testing.T) {
	src, err := Parse("many.ptx", manyRacesPTX(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		worlds string
		want   int
	}{{"2-4", 2}, {"3,4", 3}, {"4", 4}} {
		p := program(t, manyRacesHarness)
		p.Worlds = c.worlds
		opts := Options{Worlds: []int{4}, Seeds: 1}
		rep, err := RunProgram(p, src, opts)
		if err != nil || len(rep.Findings) == 0 {
			t.Fatalf("worlds %s: %v, %d findings", c.worlds, err, len(rep.Findings))
		}
		s, err := Shrink(p, src, opts, rep.Findings[0], ShrinkLimits{})
		if err != nil {
			t.Fatalf("worlds %s: %v", c.worlds, err)
		}
		if got := s.Options.Worlds[0]; got != c.want {
			t.Errorf("worlds %s: shrunk to world %d, want %d", c.worlds, got, c.want)
		}
	}
}

// pokePTX stores 1 at a pointer plus an offset, both parameters.
const pokePTX = `.version 8.0
.target sm_90
.address_size 64

.visible .entry poke(
	.param .u64 poke_param_0,
	.param .u64 poke_param_1
)
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [poke_param_0];
	ld.param.u64 	%rd2, [poke_param_1];
	add.s64 	%rd3, %rd1, %rd2;
	mov.u32 	%r1, 1;
	st.global.u32 	[%rd3], %r1;
	ret;
}
`

// TestOutOfBounds: a kernel's store outside the buffers the harness
// declared is a finding that names the buffer (its own copy, or a
// peer's as mapped here) and how far past its end or before its start
// the store reaches; a store inside passes; one that faults names the
// buffer too.
func TestOutOfBounds(t *testing.T) {
	src, err := Parse("poke.ptx", pokePTX)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ptr, offset string
		kind, want  string // "" for no finding; want: what the finding says, parts split by |
	}{
		{`{"ptr": "sig"}`, "6140", "", ""},
		{`{"ptr": "sig"}`, "6144 + 32768", "bounds", "out of bounds: the store at PTX line 17 reaches 32772 bytes past the end of sig of rank "},
		{`{"ptr": "sig"}`, "6144", "bounds", "reaches 4 bytes past the end of sig of rank "},
		{`{"ptr": "sig", "rank": "(rank + 1) % world"}`, "8192", "bounds", "reaches 2052 bytes past the end of sig of rank "},
		{`{"ptr": "sig"}`, "-8", "bounds", "reaches 8 bytes before the start of sig of rank "},
		{`{"ptr": "sig"}`, "64 * 1048576", "error", "stream 0: device 0 stream 0 op 7 (kernel poke): ptx: poke line 17|(outside every buffer the harness declared) is not mapped"},
	} {
		h := `{
  "buffers": [{"name": "sig", "kind": "signal", "bytes": 6144}, {"name": "next", "kind": "signal", "bytes": 4096}],
  "steps": [
    {"launch": {"entry": "poke", "grid": 1, "block": 1, "params": [` + c.ptr + `, {"s64": "` + c.offset + `"}]}},
    {"sync": true}
  ]
}`
		rep, err := RunProgram(program(t, h), src, Options{Seeds: 1})
		if err != nil {
			t.Fatalf("%s %s: %v", c.ptr, c.offset, err)
		}
		if c.kind == "" {
			if len(rep.Findings) > 0 {
				t.Errorf("%s %s: a store inside the buffer is a finding:\n%s", c.ptr, c.offset, dumpFindings(rep))
			}
			continue
		}
		says := len(rep.Findings) == 1
		for _, w := range strings.Split(c.want, "|") {
			says = says && strings.Contains(rep.Findings[0].Title+strings.Join(rep.Findings[0].Details, "\n"), w)
		}
		if !says || rep.Findings[0].Kind != c.kind {
			t.Errorf("%s %s: want one %s finding saying %q, got:\n%s", c.ptr, c.offset, c.kind, c.want, dumpFindings(rep))
		}
	}
}

// TestExplainBadOperand: an operand the interpreter cannot read is named
// by its form.
func TestExplainBadOperand(t *testing.T) {
	for in, want := range map[string]string{
		`mov.b32: bad operand "{ 0 , %rs1 }"`:          "a brace-packed vector operand",
		`mov.u32: bad operand "%cluster_ctarank"`:      "a register or special register the interpreter does not know",
		`ld.global.u32: bad operand "[ %rd1 + %rd2 ]"`: "an address form",
		`add.u64: bad operand "sym + 4"`:               "an operand form the interpreter does not read",
		`cvt.rn.f16x2.e4m3x2: unsupported`:             "",
	} {
		got := explainReason(in)
		if want == "" && got != in || want != "" && (!strings.HasPrefix(got, in+": ") || !strings.Contains(got, want)) {
			t.Errorf("%s: got %q, want it followed by %q", in, got, want)
		}
	}
}

// twoRefusedPTX has two entries, each with a line of its own the
// interpreter refuses.
const twoRefusedPTX = `.version 8.0
.target sm_90
.address_size 64

.visible .entry first(
	.param .u64 first_param_0
)
{
	wgmma.fence.sync.aligned;
	ret;
}

.visible .entry second(
	.param .u64 second_param_0
)
{
	cp.async.bulk.commit_group;
	ret;
}
`

// TestRefusalListsTheEntrysLines: a refused launch lists the unsupported
// lines of its own entry, not the other entries'.
func TestRefusalListsTheEntrysLines(t *testing.T) {
	src, err := Parse("two.ptx", twoRefusedPTX)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(src.Unsupported()); n != 2 {
		t.Fatalf("%d unsupported lines in the module, want 2", n)
	}
	for entry, line := range map[string]int{"first": 9, "second": 17} {
		h := `{"buffers": [{"name": "b", "kind": "plain", "bytes": 64}],
  "steps": [{"launch": {"entry": "` + entry + `", "grid": 1, "block": 1, "params": [{"ptr": "b"}]}}]}`
		_, err := RunProgram(program(t, h), src, Options{})
		var ref *Refusal
		if !errors.As(err, &ref) || len(ref.Problems) != 1 || ref.Problems[0].Line != line {
			t.Errorf("%s: %v, want a refusal of line %d alone", entry, err, line)
		}
	}
}

// TestFindingsNamePlaces: the races of the volatile-flag example name
// addresses by buffer, offset and rank, the host's write by the
// harness's stream number and the step that made it, and the missing edge
// by the flag load that does not acquire.
func TestFindingsNamePlaces(t *testing.T) {
	p, err := LoadHarness("../examples/kernels/twostage_volatile.json")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunProgram(p, load(t, p.PTX), Options{Worlds: []int{2}, Seeds: 1, Vars: map[string]Expr{"n": "192"}})
	if err != nil {
		t.Fatal(err)
	}
	all := dumpFindings(rep)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`store of 4 bytes at data\+0x[0-9a-f]+ of rank [01]\n`),
		regexp.MustCompile(`device [01] stream 0 write \(op \d+\) of step 1.1 \(write data\): store of 768 bytes at data\+0x0 of rank [01]`),
		regexp.MustCompile(`strong load \(relaxed, system\) of flags\+0x[0-9a-f]+ of rank [01]: the strong load is relaxed \(no acquire: a volatile or relaxed load of a flag acquires nothing`),
	} {
		if !want.MatchString(all) {
			t.Errorf("the findings do not match %s:\n%s", want, all)
		}
	}
	if strings.Contains(all, "0x7f") {
		t.Errorf("a raw address in the findings:\n%s", all)
	}
}
