// Package oracle generates the semantics oracle of the PTX interpreter:
// one small PTX kernel per instruction form, each looping over input
// records of edge values (signed and unsigned extremes, NaNs with
// payloads, infinities, signed zeros, subnormals, the largest finite
// values, shift counts past the width, division by zero where it is
// defined) and storing what the instruction produced.
//
// A GPU runs every kernel once (testdata/oracle/host.cu, through the CUDA
// driver API); its outputs are the golden data, and the interpreter's test
// runs the same kernels on the same inputs and compares bit for bit.
// The instructions whose lanes meet (shfl.sync, vote.sync, activemask)
// have a warp oracle of their own, run by full warps (see WarpKernel).
//
// Records: each input record is 24 bytes (three 8-byte little-endian
// slots A, B, C, a value in the low bytes of its slot); each output record
// is 16 bytes (slots D and D2), zeroed before the run.
package oracle

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Sizes of the records.
const (
	InRecord  = 24
	OutRecord = 16
)

// Form is one instruction form of the oracle.
type Form struct {
	// Text is the instruction (or instructions) with the placeholders A,
	// B, C (inputs) and D, D2 (outputs), which the kernel binds to
	// registers of the widths In and Out give.
	Text string
	In   []int // widths of A, B, C: 1 (a predicate), 16, 32 or 64
	Out  []int // widths of D and D2
	// Inputs are the records: A, B and C of each.
	Inputs [][3]uint64
	// Version is the kernel's PTX ISA version, "8.0" when empty (forms
	// of later versions name theirs).
	Version string
	// Set names the input set of a form whose text another form runs on
	// other inputs ("zero": the flush-to-zero and signed-zero values);
	// empty for the first.
	Set string
}

// Name identifies the form: its text, the widths of its operands and
// its input set when it has one.
func (f *Form) Name() string {
	name := fmt.Sprintf("%s %v->%v", f.Text, f.In, f.Out)
	if f.Set != "" {
		name += " (" + f.Set + ")"
	}
	return name
}

var placeholder = regexp.MustCompile(`\b(A|B|C|D|D2)\b`)

func regName(slot string, width int) string {
	p := map[int]string{1: "%p", 16: "%h", 32: "%r", 64: "%d"}[width]
	return p + strings.ToLower(slot)
}

// Kernel is the PTX module of form f: one entry, oracle(in, out, n), that
// runs the form over n records.
func (f *Form) Kernel() string {
	var b strings.Builder
	version := f.Version
	if version == "" {
		version = "8.0"
	}
	fmt.Fprintf(&b, ".version %s\n.target sm_90\n.address_size 64\n\n", version)
	b.WriteString(".visible .entry oracle(\n\t.param .u64 pin,\n\t.param .u64 pout,\n\t.param .u32 pn\n)\n{\n")
	b.WriteString("\t.reg .pred %q, %pa, %pb, %pc, %pd, %pd2;\n")
	b.WriteString("\t.reg .b16 %ha, %hb, %hc, %hd, %hd2;\n")
	b.WriteString("\t.reg .b32 %ra, %rb, %rc, %rd, %rd2, %n, %i, %t;\n")
	b.WriteString("\t.reg .b64 %da, %db, %dc, %dd, %dd2, %pi, %po;\n")
	b.WriteString("\tld.param.u64 %pi, [pin];\n\tld.param.u64 %po, [pout];\n\tld.param.u32 %n, [pn];\n")
	b.WriteString("\tmov.u32 %i, 0;\n\tsetp.eq.u32 %q, %n, 0;\n\t@%q bra DONE;\nLOOP:\n")
	slots := []string{"A", "B", "C"}
	for i, w := range f.In {
		s := slots[i]
		if w == 1 {
			fmt.Fprintf(&b, "\tld.global.u32 %%t, [%%pi+%d];\n\tsetp.ne.u32 %s, %%t, 0;\n", 8*i, regName(s, 1))
		} else {
			fmt.Fprintf(&b, "\tld.global.b%d %s, [%%pi+%d];\n", w, regName(s, w), 8*i)
		}
	}
	widths := map[string]int{"D": f.Out[0]}
	for i, s := range slots[:len(f.In)] {
		widths[s] = f.In[i]
	}
	if len(f.Out) > 1 {
		widths["D2"] = f.Out[1]
	}
	text := placeholder.ReplaceAllStringFunc(f.Text, func(s string) string { return regName(s, widths[s]) })
	for _, line := range strings.Split(text, ";") {
		if line = strings.TrimSpace(line); line != "" {
			fmt.Fprintf(&b, "\t%s;\n", line)
		}
	}
	for i, w := range f.Out {
		s := []string{"D", "D2"}[i]
		if w == 1 {
			fmt.Fprintf(&b, "\tselp.u32 %%t, 1, 0, %s;\n\tst.global.u32 [%%po+%d], %%t;\n", regName(s, 1), 8*i)
		} else {
			fmt.Fprintf(&b, "\tst.global.b%d [%%po+%d], %s;\n", w, 8*i, regName(s, w))
		}
	}
	b.WriteString("\tadd.u64 %pi, %pi, 24;\n\tadd.u64 %po, %po, 16;\n\tadd.u32 %i, %i, 1;\n")
	b.WriteString("\tsetp.lt.u32 %q, %i, %n;\n\t@%q bra LOOP;\nDONE:\n\tret;\n}\n")
	return b.String()
}

// Marker separates the kernels of the forms in the kernels file.
const Marker = "//@@ form\n"

// Files are the oracle's inputs as the GPU program reads them.
type Files struct {
	Kernels  string // the forms' kernels, each after a Marker line
	Manifest string // per form: records, input offset, output offset, name
	In       []byte // the input records of every form
}

// Build lays out forms for the GPU program.
func Build(forms []*Form) Files {
	var k, m strings.Builder
	var in []byte
	out := 0
	for _, f := range forms {
		k.WriteString(Marker)
		k.WriteString(f.Kernel())
		fmt.Fprintf(&m, "%d\t%d\t%d\t%s\n", len(f.Inputs), len(in), out, f.Name())
		for _, r := range f.Inputs {
			for _, v := range r {
				in = binary.LittleEndian.AppendUint64(in, v)
			}
		}
		out += OutRecord * len(f.Inputs)
	}
	return Files{Kernels: k.String(), Manifest: m.String(), In: in}
}

// Golden is what a GPU produced for the forms of a manifest: each form's
// output records, or why the form did not run.
type Golden struct {
	Out    map[string][]byte
	Failed map[string]string
}

// ParseGolden reads a GPU run: the manifest it ran, its output bytes and
// its status lines ("index ok" or "index error: message").
func ParseGolden(manifest string, out []byte, status string) (*Golden, error) {
	g := &Golden{Out: map[string][]byte{}, Failed: map[string]string{}}
	lines := strings.Split(strings.TrimSuffix(manifest, "\n"), "\n")
	names := make([]string, len(lines))
	for i, line := range lines {
		var n, inOff, outOff int
		parts := strings.SplitN(line, "\t", 4)
		if len(parts) != 4 {
			return nil, fmt.Errorf("oracle: manifest line %d: %q", i+1, line)
		}
		if _, err := fmt.Sscanf(parts[0]+" "+parts[1]+" "+parts[2], "%d %d %d", &n, &inOff, &outOff); err != nil {
			return nil, fmt.Errorf("oracle: manifest line %d: %w", i+1, err)
		}
		if outOff+OutRecord*n > len(out) {
			return nil, fmt.Errorf("oracle: output of %d bytes ends before form %q", len(out), parts[3])
		}
		names[i] = parts[3]
		g.Out[parts[3]] = out[outOff : outOff+OutRecord*n]
	}
	for _, line := range strings.Split(strings.TrimSpace(status), "\n") {
		var i int
		if _, err := fmt.Sscanf(line, "%d", &i); err != nil || i < 0 || i >= len(names) {
			return nil, fmt.Errorf("oracle: bad status line %q", line)
		}
		if msg := strings.TrimSpace(line[strings.IndexByte(line, ' ')+1:]); msg != "ok" {
			g.Failed[names[i]] = msg
			delete(g.Out, names[i])
		}
	}
	return g, nil
}

// Gzip compresses b deterministically (the committed files are gzipped).
func Gzip(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// Gunzip decompresses b.
func Gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}
