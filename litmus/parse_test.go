package litmus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symmem/symmem/device/sim/memmodel"
)

func TestParseErrorsNameTheProblem(t *testing.T) {
	const head = "PTX T\n{ x=0; }\n P0@cta 0,gpu 0 | P1@cta 0,gpu 0 ;\n"
	for _, c := range []struct{ src, want string }{
		{"PTX\n", "title line"},
		{"PTX T\n x=0;\n", "initial state"},
		{"PTX T\n{ x=0; }\n P0@cta 0,gpu 0 ;\n st.weak x, 1 ;\n", "no final condition"},
		{head + " st.weak x, 1 | ld.weak r0 x ;\nexists (P1:r0 == 1)", "want REGISTER, LOCATION"},
		{head + " st.relaxed x, 1 | ld.weak r0, x ;\nexists (P1:r0 == 1)", "needs a scope"},
		{head + " st.weak.gpu x, 1 | ld.weak r0, x ;\nexists (P1:r0 == 1)", "takes no scope"},
		{head + " st.acquire.gpu x, 1 | ld.weak r0, x ;\nexists (P1:r0 == 1)", "cannot be acquire"},
		{head + " fence.proxy.global | ld.weak r0, x ;\nexists (P1:r0 == 1)", `proxy fence kind "global"`},
		{"PTX T\n{ x=0; s @ surface aliases z; }\n P0@cta 0,gpu 0 ;\n sust.weak s, 1 ;\nexists (x == 1)", "not declared before it"},
		{"PTX T\n{ x=0; s @ shiny aliases x; }\n P0@cta 0,gpu 0 ;\n sust.weak s, 1 ;\nexists (x == 1)", `proxy "shiny"`},
		{"PTX T\n{ x=0; s @ surface aliases x; s=1; }\n P0@cta 0,gpu 0 ;\n sust.weak s, 1 ;\nexists (x == 1)", "is an alias"},
		{"PTX T\n{ x=0; t @ texture aliases x; }\n P0@cta 0,gpu 0 ;\n sust.weak x, 1 ;\n tld.weak r0, t ;\n sust.shared.weak x, 1 ;\nexists (x == 1)", "cannot be shared"},
		{head + " st.weak x, 1 | ld.weak r0, x ;\nexists (P1: == 1)", `"==" is not a register`},
		{head + " st.weak x, 1 | ld.weak r0, x ;\nfilter (P1:r0 == 1)", "want exists"},
		{head + " st.weak x, 1 | ld.weak r0, x ;\nexists (P1:r0 == 1) (* open", "unterminated comment"},
		{head + " foo x | ld.weak r0, x ;\nexists (P1:r0 == 1)", `unknown instruction "foo"`},
		{head + " goto LC01 | ld.weak r0, x ;\nexists (P1:r0 == 1)", "no label LC01"},
		{head + " st.weak x, 1 | ld.weak r0, x ;\nexists (P2:r0 == 1)", `no thread "2"`},
		{head + " st.weak x, 1 | ld.weak r0, x ;\nexists (P1:r0 == 1", "missing )"},
		{head + " st.weak x, 1 | ld.weak r0, x ;\nexists (y == 1)", `location "y"`},
		{"PTX T\n{ x=0; }\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n st.shared.weak x, 1 | ld.shared.weak r0, x ;\nexists (P1:r0 == 1)", "used by two CTAs"},
		{head + " atom.weak.add r1, x, 1 | ld.weak r0, x ;\nexists (P1:r0 == 1)", "cannot be weak"},
	} {
		_, err := Parse(c.src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", c.src, err, c.want)
		}
	}
}

func TestParseReadsThreadsAndCondition(t *testing.T) {
	src := `PTX MP
"a comment
over two lines"
{
x=0; y=0;
P1:r3=7
}
 P0@cta 0,gpu 0      | P1@cta 2, gpu 1     ;
 st.weak x, 1        | ld.acquire.sys r1, y ;
 st.release.sys y, 1 | ld.weak r2, x        ;
~exists
(1:r1 = 1 /\ P1:r2 != 1 \/ x == 3)`
	test, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if test.Name != "MP" || len(test.Program.Threads) != 2 || test.Quant != NotExists {
		t.Fatalf("got name %q, %d threads, %v", test.Name, len(test.Program.Threads), test.Quant)
	}
	p1 := test.Program.Threads[1]
	if p1.CTA != 2 || p1.GPU != 1 || p1.Regs["r3"] != 7 || len(p1.Code) != 2 {
		t.Fatalf("P1 = %+v", p1)
	}
	if in := p1.Code[0]; in.Op != memmodel.OpLoad || in.Sem != memmodel.Acquire || in.Scope != memmodel.Sys || in.Loc != "y" || in.Dst != "r1" {
		t.Fatalf("P1's load = %+v", in)
	}
	want := []memmodel.Observable{{Thread: 1, Name: "r1"}, {Thread: 1, Name: "r2"}, {Thread: -1, Name: "x"}}
	if len(test.Observables) != len(want) {
		t.Fatalf("observables %v, want %v", test.Observables, want)
	}
	for i := range want {
		if test.Observables[i] != want[i] {
			t.Fatalf("observables %v, want %v", test.Observables, want)
		}
	}
	// /\ binds tighter than \/.
	if !test.Satisfies([]int64{0, 0, 3}) || !test.Satisfies([]int64{1, 0, 0}) || test.Satisfies([]int64{1, 1, 0}) {
		t.Errorf("condition %s evaluates wrongly", test.Cond)
	}
}

func TestRunJudgesEachQuantifier(t *testing.T) {
	const prog = "PTX T\n{ x=0; }\n P0@cta 0,gpu 0 | P1@cta 0,gpu 0 ;\n st.weak x, 1 | ld.weak r0, x ;\n"
	for _, c := range []struct {
		cond  string
		holds bool
	}{
		{"exists (P1:r0 == 0)", true},
		{"exists (P1:r0 == 2)", false},
		{"~exists (P1:r0 == 2)", true},
		{"~exists (P1:r0 == 1)", false},
		{`forall (P1:r0 == 0 \/ P1:r0 == 1)`, true},
		{"forall (P1:r0 == 1)", false},
	} {
		test, err := Parse(prog + c.cond)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(test, memmodel.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Holds != c.holds || len(res.Outcomes) != 2 {
			t.Errorf("%s: holds %v with %d outcomes, want %v with 2", c.cond, res.Holds, len(res.Outcomes), c.holds)
		}
	}
}

func TestReadVerdicts(t *testing.T) {
	v, err := ReadVerdicts(strings.NewReader("path,verdict\na.litmus,1\nb.litmus,0\n"))
	if err != nil || len(v) != 2 || !v[0].Holds || v[1].Holds || v[1].Path != "b.litmus" {
		t.Fatalf("ReadVerdicts = %v, %v", v, err)
	}
	if _, err := ReadVerdicts(strings.NewReader("a.litmus,2\n")); err == nil || !strings.Contains(err.Error(), `verdict "2"`) {
		t.Fatalf("bad verdict: err = %v", err)
	}
}

// TestParseNeverPanics parses every prefix of the project's tests: each is
// either a test or an error, never a panic.
func TestParseNeverPanics(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.litmus"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no litmus files: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(b); n += 3 {
			if test, err := Parse(string(b[:n])); err == nil && test == nil {
				t.Fatalf("%s[:%d]: no test and no error", f, n)
			}
		}
	}
}
