package ptx

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/symmem/symmem/device/sim/ptx/internal/oracle"
)

// runWarpOracle runs the warp oracle's kernel over in with one block of
// threads threads and returns its output records.
func runWarpOracle(in []byte, threads int) ([]byte, error) {
	m, err := Parse(oracle.WarpKernel)
	if err != nil {
		return nil, err
	}
	n := len(in) / oracle.WarpInRecord
	const inBase, outBase = 0x7000_0000_0000, 0x7100_0000_0000
	out := make([]byte, oracle.WarpOutRecord*threads*n)
	var mu sync.Mutex
	env := coopEnv{&sliceEnv{regions: []region{{inBase, in}, {outBase, out}}}, &mu}
	params := binary.LittleEndian.AppendUint64(nil, inBase)
	params = binary.LittleEndian.AppendUint64(params, outBase)
	params = binary.LittleEndian.AppendUint32(params, uint32(n))
	mem, err := m.NewBlockMem("warp", params)
	if err != nil {
		return nil, err
	}
	ths := make([]*Thread, threads)
	for i := range ths {
		if ths[i], err = m.NewThread("warp", env, mem, Dim{Tid: uint32(i), Ntid: uint32(threads), Nctaid: 1}); err != nil {
			return nil, err
		}
	}
	errs := make([]error, threads)
	var wg sync.WaitGroup
	for i, th := range ths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			_, errs[i] = th.Run()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("thread %d: %w", i, err)
		}
	}
	return out, nil
}

// warpOutWords names the words of a thread's output record.
var warpOutWords = [24]string{
	"activemask", "laneid", "lanemask_eq", "lanemask_lt", "lanemask_le", "lanemask_gt", "lanemask_ge", "member",
	"shfl.up d", "shfl.up p", "shfl.down d", "shfl.down p", "shfl.bfly d", "shfl.bfly p", "shfl.idx d", "shfl.idx p",
	"vote.all p", "vote.any p", "vote.uni p", "vote.ballot p", "vote.ballot !p", "vote.all !p", "vote.any !p", "vote.uni !p",
}

// TestWarpOracle runs the warp oracle (shfl.sync, vote.sync, activemask,
// %laneid and %lanemask_*, over full warps, partial member masks and clamp
// operands) through the interpreter with blocks of 32 and 64 threads and
// compares every output bit for bit with what a GPU produced
// (testdata/oracle/warp/gpu).
func TestWarpOracle(t *testing.T) {
	dir := filepath.Join("testdata", "oracle", "warp")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	recs := oracle.WarpRecords()
	in, err := oracle.Gunzip(read("in.bin.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if string(read("warp.ptx")) != oracle.WarpKernel || !bytes.Equal(in, oracle.WarpIn(recs)) {
		t.Fatal("testdata/oracle/warp differs from the generator: run go run ./device/sim/ptx/internal/oraclegen")
	}
	gpu, err := oracle.Gunzip(read("gpu/out.bin.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range oracle.WarpBlocks {
		size := oracle.WarpOutRecord * threads * len(recs)
		if len(gpu) < size {
			t.Fatalf("gpu/out.bin: %d bytes, too short for a block of %d", len(gpu), threads)
		}
		want := gpu[:size]
		gpu = gpu[size:]
		got, err := runWarpOracle(in, threads)
		if err != nil {
			t.Fatalf("block of %d: %v", threads, err)
		}
		bad := 0
		for i := 0; i < len(got); i += 4 {
			g, w := binary.LittleEndian.Uint32(got[i:]), binary.LittleEndian.Uint32(want[i:])
			if g == w {
				continue
			}
			if bad++; bad <= 5 {
				th := i / oracle.WarpOutRecord
				rec, tid, word := th/threads, th%threads, i%oracle.WarpOutRecord/4
				r := &recs[rec]
				t.Errorf("block of %d, record %d (mask %#08x c %#x), thread %d: %s = %#x, GPU %#x (a %#x b %#x p %v)",
					threads, rec, r.Mask[tid/32], r.C, tid, warpOutWords[word], g, w, r.A[tid], r.B[tid], r.P[tid])
			}
		}
		if bad > 5 {
			t.Errorf("block of %d: %d of %d words differ", threads, bad, len(got)/4)
		}
	}
	if len(gpu) != 0 {
		t.Errorf("gpu/out.bin: %d bytes beyond the blocks the oracle runs", len(gpu))
	}
}
