package ptx

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/kernels/cabi"
)

func kernelsModule(t *testing.T) *Module {
	t.Helper()
	text, err := kernels.PTX()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestKernelsPTXDecodes decodes every function of the committed PTX: every
// instruction the compiler emitted is one the interpreter knows.
func TestKernelsPTXDecodes(t *testing.T) {
	if err := kernelsModule(t).Check(); err != nil {
		t.Fatal(err)
	}
}

// TestPTXEntriesAreTheKernels: the PTX's entry points are exactly the
// __global__ functions of kernels.cu (the specialised ones through the
// X-macro of abi.cuh), and exactly the names cabi.Entry
// returns for the registered kernels.
func TestPTXEntriesAreTheKernels(t *testing.T) {
	entries := kernelsModule(t).Entries()
	src, err := os.ReadFile("../../../kernels/cuda/kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	var global []string
	for _, m := range regexp.MustCompile(`__global__ void __launch_bounds__\(\d+\) (\w+)\(`).FindAllSubmatch(src, -1) {
		global = append(global, string(m[1]))
	}
	// The specialised entries come from the X-macro of abi.cuh.
	abi, err := os.ReadFile("../../../kernels/cuda/abi.cuh")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*X\((\w+), \d+, \w+, \w+, \d+\)`).FindAllSubmatch(abi, -1) {
		global = append(global, string(m[1]))
	}
	sort.Strings(global)
	if !slices.Equal(entries, global) {
		t.Fatalf("PTX entries %v\n__global__ kernels %v", entries, global)
	}
	// Every name Entry can return.
	names := map[string]bool{}
	for _, k := range kernels.Names() {
		names[cabi.Entry(k, nil)] = true
		for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
			for _, w := range []int32{2, 3, 4, 8} {
				for _, off := range []uint64{0, 4} {
					a := kernels.AllReduceArgs{World: w, DType: dt, Numel: 64, Offset: off}
					names[cabi.Entry(k, a)] = true
				}
			}
		}
	}
	var want []string
	for n := range names {
		want = append(want, n)
	}
	sort.Strings(want)
	if !slices.Equal(entries, want) {
		t.Fatalf("PTX entries %v\ncabi.Entry names %v", entries, want)
	}
}

// TestUnknownInstruction: an instruction outside the subset is an error
// naming it and its line.
func TestUnknownInstruction(t *testing.T) {
	text := ".version 9.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\tmov.u32 %r1, 1;\n\tsad.u32 %r2, %r1, %r1, %r1;\n\tret;\n}\n"
	m, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Func("k")
	if err == nil || !strings.Contains(err.Error(), "line 8") || !strings.Contains(err.Error(), "sad.u32") {
		t.Fatalf("decoding sad: %v, want an error naming sad.u32 at line 8", err)
	}
	for _, bad := range []string{"div.approx.f32 %r1, %r1, %r1;", "ld.relaxed.global.u32 %r1, [%r1];", "frob %r1;", "mul24.lo.u32 %r1, %r1, %r1;"} {
		m, err := Parse(strings.Replace(text, "sad.u32 %r2, %r1, %r1, %r1;", bad, 1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Func("k"); err == nil || !strings.Contains(err.Error(), "line 8") {
			t.Errorf("decoding %q: %v, want an error at line 8", bad, err)
		}
	}
}

// TestSpecialRegisterNamesCannotBeDeclared: declaring a register named
// like a special register is refused at decode, naming it and its line;
// a name that only starts like one, or a numbered range, is fine.
func TestSpecialRegisterNamesCannotBeDeclared(t *testing.T) {
	text := ".version 9.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\tDECL\n\tmov.u32 %r1, 1;\n\tret;\n}\n"
	for _, decl := range []string{".reg .b32 %tid;", ".reg .b32 %r9, %clock;", ".reg .b64 %smid;", ".reg .b32 %laneid;"} {
		m, err := Parse(strings.Replace(text, "DECL", decl, 1))
		if err == nil {
			_, err = m.Func("k")
		}
		if err == nil || !strings.Contains(err.Error(), "line 7") || !strings.Contains(err.Error(), "special register") {
			t.Errorf("%s: %v, want an error naming the special register at line 7", decl, err)
		}
	}
	m, err := Parse(strings.Replace(text, "DECL", ".reg .b32 %tidy, %clocks<2>, %tid<3>;", 1))
	if err == nil {
		_, err = m.Func("k")
	}
	if err != nil {
		t.Fatalf("names that only start like a special register: %v", err)
	}
}

// TestLexerWords: a word runs to a space, punctuation or a comment; it
// keeps a "::" qualifier and a slash that starts no comment; comments and
// .loc lines are skipped, lines counted through them.
func TestLexerWords(t *testing.T) {
	src := "ld.global.L1::evict_last.u64 %rd1, [a/b];// c { }\n" +
		"x/*{\n}*/y .loc 1 2 { }\n::z .locx:w\n"
	want := []string{
		"ld.global.L1::evict_last.u64@1", "%rd1@1", ",@1", "[@1", "a/b@1", "]@1", ";@1",
		"x@2", "y@3", ":@4", ":@4", "z@4", ".locx@4", ":@4", "w@4",
	}
	lx := lexer{src: src, line: 1}
	var got []string
	for {
		tok, ok, err := lx.next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, fmt.Sprintf("%s@%d", tok.s, tok.line))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tokens %q, want %q", got, want)
	}
}

// TestLineInfoDirectivesAreSkipped: PTX as nvcc -lineinfo writes it, with
// .file at module level and .loc lines (no semicolon) before
// instructions, decodes and runs like the same text without them, every
// line keeping its number.
func TestLineInfoDirectivesAreSkipped(t *testing.T) {
	text := ".version 9.0\n.target sm_80\n.address_size 64\n.file 1 \"k.cu\"\n.visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\t.loc 1 7 3\n\tmov.u32 %r1, 1;\n\t.loc 1 8 3, function_name $L__info_string0, inlined_at 1 2 3\n\tsad.u32 %r2, %r1, %r1, %r1;\n\tret;\n}\n"
	m, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Func("k")
	if err == nil || !strings.Contains(err.Error(), "line 11") || !strings.Contains(err.Error(), "sad.u32") {
		t.Fatalf("decoding: %v, want the error of sad.u32 at line 11 (the .loc lines skipped, not swallowing it)", err)
	}
	m, err = Parse(strings.Replace(text, "sad.u32 %r2, %r1, %r1, %r1;", "add.u32 %r2, %r1, %r1;", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Func("k"); err != nil {
		t.Fatalf("decoding with line info: %v", err)
	}
}
