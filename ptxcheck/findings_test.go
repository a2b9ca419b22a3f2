package ptxcheck

import (
	"fmt"
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
		s, err := Shrink(p, src, opts, rep.Findings[0], 0)
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
		kind, want  string // "" for no finding
	}{
		{`{"ptr": "sig"}`, "6140", "", ""},
		{`{"ptr": "sig"}`, "6144 + 32768", "bounds", "out of bounds: the store at PTX line 17 reaches 32772 bytes past the end of sig of rank "},
		{`{"ptr": "sig"}`, "6144", "bounds", "reaches 4 bytes past the end of sig of rank "},
		{`{"ptr": "sig", "rank": "(rank + 1) % world"}`, "8192", "bounds", "reaches 2052 bytes past the end of sig of rank "},
		{`{"ptr": "sig"}`, "-8", "bounds", "reaches 8 bytes before the start of sig of rank "},
		{`{"ptr": "sig"}`, "64 * 1048576", "error", "(outside every buffer the harness declared) is not mapped"},
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
		if len(rep.Findings) != 1 || rep.Findings[0].Kind != c.kind ||
			!strings.Contains(rep.Findings[0].Title+strings.Join(rep.Findings[0].Details, "\n"), c.want) {
			t.Errorf("%s %s: want one %s finding saying %q, got:\n%s", c.ptr, c.offset, c.kind, c.want, dumpFindings(rep))
		}
	}
}
