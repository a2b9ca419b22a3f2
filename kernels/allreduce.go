package kernels

import (
	"fmt"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/signal"
)

// collective is one block's state while running an all-reduce kernel.
type collective struct {
	b           Block
	a           AllReduceArgs
	kernel      string
	rank, world int
	vec         uint64 // vector width in bytes
	size        uint64 // element size in bytes
	nvec        uint64 // vectors in the tensor
	bufs, pads  []device.Ptr
	timeout     time.Duration
	red         reducer
	srcs        [][]byte // per-rank scratch, in rank order
	out         []byte
}

// The collective kernels of this file. one_shot_all_reduce: enough
// threads (a multiple of 32, at least world) to give every thread one
// vector, up to OneShotThreads per block, then up to OneShotMaxBlocks
// blocks. two_shot_all_reduce does the same per rank's chunk, up to
// TwoShotThreads threads and TwoShotMaxBlocks blocks. Vectors are the
// widest of 16/8/4 bytes dividing the size; blocks never exceed the
// device's multiprocessors. Both have CUDA entries specialised for every
// dtype and the world sizes 2, 4 and 8, which take 16-byte vectors.
var (
	_ = Register(Descriptor[AllReduceArgs]{
		Name:       OneShotAllReduce,
		Collective: true,
		Check:      checkOneShot,
		Shape: func(p ShapeParams) (int, int) {
			return elementwise(p.Numel, p.DType, 1, p.blockLimit(OneShotMaxBlocks), OneShotThreads, p.World, p.SMCount)
		},
		CheckLaunch: func(blocks, threads int, a AllReduceArgs) error {
			if threads > OneShotThreads {
				return fmt.Errorf("kernel %s: %d threads per block (at most %d)", OneShotAllReduce, threads, OneShotThreads)
			}
			return a.checkCollectiveLaunch(OneShotAllReduce, blocks, threads)
		},
		Run:         oneShotKernel,
		Specialised: specialisedAllReduce("OneShot", OneShotThreads),
	})
	_ = Register(Descriptor[AllReduceArgs]{
		Name:       TwoShotAllReduce,
		Collective: true,
		Check:      checkTwoShot,
		Shape: func(p ShapeParams) (int, int) {
			return elementwise(p.Numel, p.DType, p.World, p.blockLimit(TwoShotMaxBlocks), TwoShotThreads, p.World, p.SMCount)
		},
		CheckLaunch: func(blocks, threads int, a AllReduceArgs) error {
			return a.checkCollectiveLaunch(TwoShotAllReduce, blocks, threads)
		},
		Run:         twoShotKernel,
		Specialised: specialisedAllReduce("TwoShot", TwoShotThreads),
	})
)

// specialisedAllReduce describes the entries of an all-reduce kernel
// compiled for every dtype and the world sizes 2, 4 and 8 with 16-byte
// vectors, running the C++ body template body.
func specialisedAllReduce(body string, bounds int) *Specialised[AllReduceArgs] {
	return &Specialised[AllReduceArgs]{
		Body:   body,
		Bounds: bounds,
		DTypes: []device.DType{device.Float32, device.BFloat16, device.Float16},
		Worlds: []int{2, 4, 8},
		Match: func(a AllReduceArgs) (device.DType, int, bool) {
			if !a.DType.Valid() {
				return 0, 0, false
			}
			size := uint64(a.DType.Size())
			if a.Numel == 0 || a.Numel > ^uint64(0)/size || a.Offset%16 != 0 || a.Numel*size%16 != 0 {
				return 0, 0, false
			}
			return a.DType, int(a.World), true
		},
	}
}

// checkOneShot: one-shot needs an output, and its input (the copy form)
// and output aligned to the vector.
func checkOneShot(a AllReduceArgs) error {
	vec, err := a.check(OneShotAllReduce)
	if err != nil {
		return err
	}
	if a.Output == 0 {
		return fmt.Errorf("kernel %s: Output is null (one-shot needs an output tensor)", OneShotAllReduce)
	}
	return a.checkVectors(OneShotAllReduce, vec)
}

// checkTwoShot: two-shot has no copy form; its output (the "_out" form)
// is aligned to the vector.
func checkTwoShot(a AllReduceArgs) error {
	vec, err := a.check(TwoShotAllReduce)
	if err != nil {
		return err
	}
	if a.Input != 0 {
		return fmt.Errorf("kernel %s: Input must be null (two-shot has no copy form)", TwoShotAllReduce)
	}
	return a.checkVectors(TwoShotAllReduce, vec)
}

// checkCollectiveLaunch: the one-shot and two-shot kernels need a thread
// per rank for their barriers and at most one block per pad channel
// (block b uses channel b).
func (a AllReduceArgs) checkCollectiveLaunch(kernel string, blocks, threads int) error {
	if threads < int(a.World) {
		return fmt.Errorf("kernel %s: %d threads for world size %d (one per rank needed)", kernel, threads, a.World)
	}
	if ch := signal.Channels(a.PadBytes, int(a.World)); blocks > ch {
		return fmt.Errorf("kernel %s: %d blocks but the pad of %d bytes has %d channels for world size %d",
			kernel, blocks, a.PadBytes, ch, a.World)
	}
	return nil
}

// newCollective validates args and reads the pointer arrays. It returns nil
// (and no error) when there is nothing to do.
func newCollective(kernel string, b Block, a AllReduceArgs) (*collective, error) {
	vec, err := a.check(kernel)
	if err != nil {
		return nil, err
	}
	if a.Numel == 0 {
		return nil, nil
	}
	c := &collective{
		b: b, a: a, kernel: kernel,
		rank: int(a.Rank), world: int(a.World),
		vec: uint64(vec), size: uint64(a.DType.Size()),
		timeout: time.Duration(a.TimeoutNs),
		red:     reducer{dt: a.DType, op: a.Op},
	}
	c.nvec = a.Numel * c.size / c.vec
	if err := signal.CheckChannel(b.Index(), c.world, a.PadBytes); err != nil {
		return nil, fmt.Errorf("kernel %s block %d of %d: grid too large for the pad: %w", kernel, b.Index(), b.Grid(), err)
	}
	if c.bufs, err = loadPtrs(b, a.BufferPtrs, c.world, "buffer"); err != nil {
		return nil, err
	}
	if c.pads, err = loadPtrs(b, a.PadPtrs, c.world, "pad"); err != nil {
		return nil, err
	}
	for r, p := range c.bufs {
		if t := p.Add(a.Offset); t%device.Ptr(c.vec) != 0 {
			return nil, fmt.Errorf("kernel %s: tensor of rank %d at %v is not aligned to the %d-byte vector", kernel, r, t, c.vec)
		}
	}
	bytes := a.Numel * c.size
	own := c.bufs[c.rank].Add(a.Offset)
	if a.Output != 0 && a.Output < own.Add(bytes) && own < a.Output.Add(bytes) {
		return nil, fmt.Errorf("kernel %s: Output %v overlaps this rank's buffer tensor at %v (%d bytes)", kernel, a.Output, own, bytes)
	}
	n := min(uint64(b.Threads()), c.nvec) * c.vec
	c.srcs = make([][]byte, c.world)
	for r := range c.srcs {
		c.srcs[r] = make([]byte, n)
	}
	c.out = make([]byte, n)
	return c, nil
}

// tensor is the address of byte off of rank r's tensor.
func (c *collective) tensor(r int, off uint64) device.Ptr {
	return c.bufs[r].Add(c.a.Offset + off)
}

// stride runs fn over this block's share of vectors [0, nvec), grid-stride:
// iteration k covers vectors [(k*grid + block)*threads, +threads). It yields
// after every iteration.
func (c *collective) stride(nvec uint64, point string, fn func(first, n uint64) error) error {
	threads, grid := uint64(c.b.Threads()), uint64(c.b.Grid())
	for first := uint64(c.b.Index()) * threads; first < nvec; first += grid * threads {
		if err := fn(first, min(threads, nvec-first)); err != nil {
			return err
		}
		c.b.Yield(point)
	}
	return nil
}

// reduceAt loads n bytes at byte offset off of every rank's tensor, in
// rank order as the CUDA kernels do, and reduces them in rank order.
func (c *collective) reduceAt(off, n uint64) ([]byte, error) {
	srcs := c.srcs
	for r := range c.world {
		if err := c.b.Load(c.tensor(r, off), srcs[r][:n]); err != nil {
			return nil, c.memErr("reading rank", r, err)
		}
	}
	if n != uint64(len(srcs[0])) {
		srcs = make([][]byte, c.world)
		for r := range srcs {
			srcs[r] = c.srcs[r][:n]
		}
	}
	out := c.out[:n]
	c.red.reduce(out, srcs)
	return out, nil
}

func (c *collective) memErr(what string, r int, err error) error {
	return fmt.Errorf("kernel %s rank %d block %d: %s %d's tensor: %w", c.kernel, c.rank, c.b.Index(), what, r, err)
}

func (c *collective) barrier(putOrder signal.Order) error {
	return barrier(c.b, c.rank, c.world, c.pads, c.a.PadBytes, c.b.Index(), putOrder, signal.Acquire, c.timeout)
}

// oneShotKernel: every rank reduces the whole tensor from every peer into
// Output. With Input set (the "_copy" form) this block first copies its
// share of Input into its own buffer.
func oneShotKernel(b Block, args AllReduceArgs) error {
	c, err := newCollective(OneShotAllReduce, b, args)
	if c == nil {
		return err
	}
	a := c.a
	startPut := signal.Relaxed
	if a.Input != 0 {
		startPut = signal.Release
		err := c.stride(c.nvec, "one-shot copy", func(first, n uint64) error {
			off, buf := first*c.vec, c.out[:n*c.vec]
			if err := b.Load(a.Input.Add(off), buf); err != nil {
				return fmt.Errorf("kernel %s rank %d block %d: reading Input: %w", c.kernel, c.rank, b.Index(), err)
			}
			if err := b.Store(c.tensor(c.rank, off), buf); err != nil {
				return c.memErr("copying Input into rank", c.rank, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := c.barrier(startPut); err != nil {
		return err
	}
	err = c.stride(c.nvec, "one-shot reduce", func(first, n uint64) error {
		off := first * c.vec
		out, err := c.reduceAt(off, n*c.vec)
		if err != nil {
			return err
		}
		if err := b.Store(a.Output.Add(off), out); err != nil {
			return fmt.Errorf("kernel %s rank %d block %d: writing Output: %w", c.kernel, c.rank, b.Index(), err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.barrier(signal.Release)
}

// twoShotKernel: rank r reduces chunk r and writes it into every rank's
// buffer (Output 0), or into its own buffer and then gathers every chunk into
// Output (the "_out" form).
func twoShotKernel(b Block, args AllReduceArgs) error {
	c, err := newCollective(TwoShotAllReduce, b, args)
	if c == nil {
		return err
	}
	a := c.a
	vecElems := c.vec / c.size
	chunk := Chunk(a.Numel, int(vecElems), c.world)
	chunkVecs := chunk / vecElems
	// vectorsOf is how many vectors of rank r's chunk lie inside the tensor.
	vectorsOf := func(r int) uint64 {
		start := uint64(r) * chunk
		if start >= a.Numel {
			return 0
		}
		return min(chunk, a.Numel-start) / vecElems
	}
	myStart := uint64(c.rank) * chunk * c.size

	if err := c.barrier(signal.Relaxed); err != nil {
		return err
	}
	err = c.stride(vectorsOf(c.rank), "two-shot reduce", func(first, n uint64) error {
		off := myStart + first*c.vec
		out, err := c.reduceAt(off, n*c.vec)
		if err != nil {
			return err
		}
		if a.Output != 0 {
			if err := b.Store(c.tensor(c.rank, off), out); err != nil {
				return c.memErr("writing rank", c.rank, err)
			}
			return nil
		}
		for r := range c.world {
			if err := b.Store(c.tensor(r, off), out); err != nil {
				return c.memErr("writing rank", r, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if a.Output == 0 {
		return c.barrier(signal.Release)
	}
	if err := c.barrier(signal.Release); err != nil {
		return err
	}
	err = c.stride(chunkVecs, "two-shot gather", func(first, n uint64) error {
		for r := range c.world {
			have := vectorsOf(r)
			if first >= have {
				continue
			}
			off := uint64(r)*chunk*c.size + first*c.vec
			buf := c.out[:min(n, have-first)*c.vec]
			if err := b.Load(c.tensor(r, off), buf); err != nil {
				return c.memErr("reading rank", r, err)
			}
			if err := b.Store(a.Output.Add(off), buf); err != nil {
				return fmt.Errorf("kernel %s rank %d block %d: writing Output: %w", c.kernel, c.rank, b.Index(), err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.barrier(signal.Release)
}
