package ptx_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/kernels/cabi"
)

// kernelsModule is the kernels' PTX, parsed once for every benchmark.
var kernelsModule = sync.OnceValues(func() (*ptx.Module, error) {
	text, err := kernels.PTX()
	if err != nil {
		return nil, err
	}
	return ptx.Parse(text)
})

// flatEnv is global memory as byte slices at fixed addresses, for the
// benchmarks: no scheduler, no race detector, only the interpreter.
type flatEnv struct {
	regions []region
	clock   uint64
}

type region struct {
	base uint64
	b    []byte
}

func (e *flatEnv) at(addr uint64, n int) ([]byte, error) {
	for _, r := range e.regions {
		if addr >= r.base && addr-r.base+uint64(n) <= uint64(len(r.b)) {
			return r.b[addr-r.base:][:n], nil
		}
	}
	return nil, fmt.Errorf("no memory at %#x (%d bytes)", addr, n)
}

func (e *flatEnv) Shared(uint64, int, bool, ptx.Sem, bool) {}

func (e *flatEnv) Load(addr uint64, dst []byte, _ ptx.Sem, _ ptx.Scope) error {
	b, err := e.at(addr, len(dst))
	copy(dst, b)
	return err
}

func (e *flatEnv) Store(addr uint64, src []byte, _ ptx.Sem, _ ptx.Scope) error {
	b, err := e.at(addr, len(src))
	copy(b, src)
	return err
}

func (e *flatEnv) Atomic(addr uint64, size int, op ptx.AtomOp, _ ptx.Sem, _ ptx.Scope, a, b uint64) (uint64, error) {
	w, err := e.at(addr, size)
	if err != nil {
		return 0, err
	}
	var old uint64
	if size == 8 {
		old = binary.LittleEndian.Uint64(w)
		binary.LittleEndian.PutUint64(w, ptx.AtomicResult(op, size, old, a, b))
	} else {
		old = uint64(binary.LittleEndian.Uint32(w))
		binary.LittleEndian.PutUint32(w, uint32(ptx.AtomicResult(op, size, old, a, b)))
	}
	return old, nil
}

func (e *flatEnv) Fence(ptx.Sem, ptx.Scope) {}

func (e *flatEnv) Clock() uint64 { e.clock += 100; return e.clock }

// launch runs every thread of a grid x threads launch of entry to its end,
// block by block, releasing each block's barriers once all its threads
// arrived, as the simulator does.
func launch(m *ptx.Module, entry string, env ptx.Env, params []byte, grid, threads int) error {
	for blk := range grid {
		mem, err := m.NewBlockMem(entry, params)
		if err != nil {
			return err
		}
		live := make([]*ptx.Thread, threads)
		for i := range live {
			th, err := m.NewThread(entry, env, mem, ptx.Dim{Tid: uint32(i), Ntid: uint32(threads), Ctaid: uint32(blk), Nctaid: uint32(grid)})
			if err != nil {
				return err
			}
			live[i] = th
		}
		for len(live) > 0 {
			next := live[:0]
			for _, th := range live {
				stop, err := th.Run()
				if err != nil {
					return err
				}
				if stop == ptx.AtBarrier {
					next = append(next, th)
				}
			}
			for _, th := range next {
				if err := th.Release(); err != nil {
					return err
				}
			}
			live = next
		}
	}
	return nil
}

// BenchmarkOneShotLaunch interprets one launch of the kernels' generic
// one_shot_all_reduce entry (the one with the most registers) at world 1,
// 4 KiB of float32, 2 blocks of 32 threads (the simulator's default
// shape), and checks its result.
func BenchmarkOneShotLaunch(b *testing.B) {
	m, err := kernelsModule()
	if err != nil {
		b.Fatal(err)
	}
	const (
		base    = 0x7000_0000_0000
		numel   = 1024
		grid    = 2
		threads = 32
		padSize = 4096
	)
	// One region: the pointer arrays, the pad, the input buffer, the output.
	mem := make([]byte, 64+padSize+2*4*numel)
	buf, out := uint64(base+64+padSize), uint64(base+64+padSize+4*numel)
	binary.LittleEndian.PutUint64(mem[0:], buf)
	binary.LittleEndian.PutUint64(mem[8:], base+64)
	for i := range numel {
		binary.LittleEndian.PutUint32(mem[64+padSize+4*i:], math.Float32bits(float32(i%19-9)))
	}
	env := &flatEnv{regions: []region{{base, mem}}}
	args := kernels.AllReduceArgs{Rank: 0, World: 1, DType: device.Float32, Op: device.Sum,
		BufferPtrs: base, PadPtrs: base + 8, PadBytes: padSize, Numel: numel, Output: device.Ptr(out)}
	entry := cabi.Entry(kernels.OneShotAllReduce, args)
	params, err := cabi.Pack(cabi.LaunchHeader{}, kernels.OneShotAllReduce, args)
	if err != nil {
		b.Fatal(err)
	}
	run := func() {
		clear(mem[64+padSize+4*numel:])
		if err := launch(m, entry, env, params, grid, threads); err != nil {
			b.Fatal(err)
		}
	}
	check := func() {
		for i := range numel {
			got := math.Float32frombits(binary.LittleEndian.Uint32(mem[64+padSize+4*numel+4*i:]))
			if want := float32(i%19 - 9); got != want {
				b.Fatalf("%s: output[%d] = %v, want %v", entry, i, got, want)
			}
		}
	}
	run() // decodes the entry
	check()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	b.StopTimer()
	check()
	b.ReportMetric(float64(b.N*grid*threads)/b.Elapsed().Seconds(), "threads/s")
}

// BenchmarkDecodeKernels parses the kernels' PTX and decodes every entry
// (register liveness and allocation included): what a process pays once
// before its first PTX launch of each entry.
func BenchmarkDecodeKernels(b *testing.B) {
	text, err := kernels.PTX()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := ptx.Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range m.Entries() {
			if _, err := m.Func(e); err != nil {
				b.Fatalf("%s: %v", e, err)
			}
		}
	}
}
