package ptx

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/symmem/symmem/device/sim/ptx/internal/oracle"
)

// sliceEnv is global memory as two byte slices at fixed addresses, for the
// oracle.
type sliceEnv struct {
	regions []region
}

type region struct {
	base uint64
	b    []byte
}

func (e *sliceEnv) at(addr uint64, n int) ([]byte, error) {
	for _, r := range e.regions {
		if addr >= r.base && addr+uint64(n) <= r.base+uint64(len(r.b)) {
			return r.b[addr-r.base:][:n], nil
		}
	}
	return nil, fmt.Errorf("address %#x outside the oracle's memory", addr)
}

func (e *sliceEnv) Load(addr uint64, dst []byte, _ Sem, _ Scope) error {
	b, err := e.at(addr, len(dst))
	copy(dst, b)
	return err
}

func (e *sliceEnv) Store(addr uint64, src []byte, _ Sem, _ Scope) error {
	b, err := e.at(addr, len(src))
	copy(b, src)
	return err
}

func (e *sliceEnv) Atomic(addr uint64, size int, op AtomOp, _ Sem, _ Scope, a, c uint64) (uint64, error) {
	b, err := e.at(addr, size)
	if err != nil {
		return 0, err
	}
	old := load(b, sizeType(size))
	put(b, AtomicResult(op, size, old, a, c), size)
	return old, nil
}

func (e *sliceEnv) Fence(Sem, Scope)                    {}
func (e *sliceEnv) Shared(uint64, int, bool, Sem, bool) {}

func (e *sliceEnv) Clock() uint64 { return 0 }

// runOracleForm runs the kernel of one oracle form over its inputs and
// returns its output records.
func runOracleForm(f *oracle.Form) ([]byte, error) {
	m, err := Parse(f.Kernel())
	if err != nil {
		return nil, err
	}
	var in []byte
	for _, r := range f.Inputs {
		for _, v := range r {
			in = binary.LittleEndian.AppendUint64(in, v)
		}
	}
	const inBase, outBase = 0x7000_0000_0000, 0x7100_0000_0000
	out := make([]byte, oracle.OutRecord*len(f.Inputs))
	env := &sliceEnv{regions: []region{{inBase, in}, {outBase, out}}}
	params := binary.LittleEndian.AppendUint64(nil, inBase)
	params = binary.LittleEndian.AppendUint64(params, outBase)
	params = binary.LittleEndian.AppendUint32(params, uint32(len(f.Inputs)))
	mem, err := m.NewBlockMem("oracle", params)
	if err != nil {
		return nil, err
	}
	th, err := m.NewThread("oracle", env, mem, Dim{Ntid: 1, Nctaid: 1})
	if err != nil {
		return nil, err
	}
	if _, err := th.Run(); err != nil {
		return nil, err
	}
	return out, nil
}

// TestSemanticsOracle runs every form of the semantics oracle through the
// interpreter and compares its outputs bit for bit with what a GPU
// produced (testdata/oracle/gpu). A form the GPU's PTX assembler refused
// must be refused by the interpreter too.
func TestSemanticsOracle(t *testing.T) {
	dir := filepath.Join("testdata", "oracle")
	forms := oracle.Forms()
	names := map[string]bool{}
	for _, f := range forms {
		if names[f.Name()] {
			t.Fatalf("two forms named %q: the golden data could not tell them apart", f.Name())
		}
		names[f.Name()] = true
	}
	files := oracle.Build(forms)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	in, err := oracle.Gunzip(read("in.bin.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if string(read("kernels.ptx")) != files.Kernels || string(read("manifest.txt")) != files.Manifest || !bytes.Equal(in, files.In) {
		t.Fatal("testdata/oracle differs from the generator: run go run ./device/sim/ptx/internal/oraclegen")
	}
	out, err := oracle.Gunzip(read("gpu/out.bin.gz"))
	if err != nil {
		t.Fatal(err)
	}
	golden, err := oracle.ParseGolden(string(read("gpu/manifest.txt")), out, string(read("gpu/status.txt")))
	if err != nil {
		t.Fatal(err)
	}
	checked, refused := 0, 0
	for _, f := range forms {
		name := f.Name()
		if why, failed := golden.Failed[name]; failed {
			m, err := Parse(f.Kernel())
			if err == nil {
				_, err = m.Func("oracle")
			}
			if err == nil {
				t.Errorf("%s: the GPU refused it (%.80s), the interpreter accepts it", name, why)
			}
			refused++
			continue
		}
		want, ok := golden.Out[name]
		if !ok {
			t.Errorf("%s: no GPU result: run testdata/oracle/host.cu on a GPU", name)
			continue
		}
		got, err := runOracleForm(f)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		bad := 0
		for i := range f.Inputs {
			g, w := got[i*oracle.OutRecord:][:oracle.OutRecord], want[i*oracle.OutRecord:][:oracle.OutRecord]
			if bytes.Equal(g, w) {
				continue
			}
			if bad++; bad <= 3 {
				r := f.Inputs[i]
				t.Errorf("%s: A=%#x B=%#x C=%#x: got D=%#x D2=%#x, GPU D=%#x D2=%#x", name, r[0], r[1], r[2],
					binary.LittleEndian.Uint64(g), binary.LittleEndian.Uint64(g[8:]),
					binary.LittleEndian.Uint64(w), binary.LittleEndian.Uint64(w[8:]))
			}
		}
		if bad > 3 {
			t.Errorf("%s: %d of %d records differ", name, bad, len(f.Inputs))
		}
		checked++
	}
	t.Logf("%d forms agree with the GPU bit for bit or differ as reported; %d refused by both", checked, refused)
}
