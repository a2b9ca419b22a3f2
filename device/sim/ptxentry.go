package sim

import (
	"fmt"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim/ptx"
)

// PTXLaunch is a launch of any entry point of a PTX module, with the
// parameter bytes its declaration asks for (package ptxcheck packs them).
type PTXLaunch struct {
	Module *ptx.Module
	Entry  string
	Params []byte
	// Grid and Block are the launch's shape in x: blocks, and threads per
	// block. [Kernels].MaxBlocks and MaxThreads cap them when set.
	Grid, Block int
	// Shared is the bytes of dynamic shared memory each block gets (the
	// third argument of a CUDA launch, what an extern __shared__ array
	// holds), at most MaxDynamicShared.
	Shared int
	// Timeout bounds every spin of the launch's threads in virtual time:
	// a thread that keeps reading the same unchanged bytes (a load, or a
	// compare-and-swap that keeps failing) for that long fails the launch
	// with a [*SpinError]. 0 means DefaultPTXSpinTimeout.
	Timeout time.Duration
	// Occupancy, when set, is the device the blocks must fit on: at most
	// as many blocks as it holds at once run, the others start as those
	// exit, and a launch whose resident blocks spin on blocks that never
	// start fails with an [*OccupancyError] (occupancy.go). nil: every
	// block is resident.
	Occupancy *Occupancy
}

// PTXLauncher is implemented by the simulated devices: it runs any PTX
// entry point, not only the kernels' own.
type PTXLauncher interface {
	// LaunchPTX checks l and enqueues it on stream s. Its threads run
	// as the kernels' PTX does (see the package documentation); an error
	// of a thread (a fault, an instruction the interpreter refuses, a
	// [*SpinError]) is the launch's error, reported by Synchronize.
	LaunchPTX(s device.Stream, l PTXLaunch) error
}

var _ PTXLauncher = (*simDevice)(nil)

// SpinError is the error of a thread that spun on unchanged bytes for its
// launch's whole timeout: a hang.
type SpinError struct {
	Device int
	Kernel string
	Launch uint64
	Block  int
	Lane   int
	Line   int        // the PTX line of the spinning load or compare-and-swap
	Addr   device.Ptr // what it read
	Value  []byte     // the bytes it kept reading
	// Also is what else the thread's loop polled, unchanged too, when it
	// polls several words a round (in the order it reads them).
	Also   []SpinRead
	Waited time.Duration
	// Lost is the stores to what it read that were placed in coherence
	// order before its newest store although they ran after it, with
	// another value (storeorder.go): values the bytes never held, such as
	// a flag set before a clear that ran earlier lands.
	Lost []LostStore
}

// SpinRead is a word a spinning thread kept reading, and what it held.
type SpinRead struct {
	Addr  device.Ptr
	Value []byte
}

func (e *SpinError) Error() string {
	return fmt.Sprintf("%s: PTX line %d %s", e.Thread(), e.Line, e.Spin())
}

// Thread names the thread that spun: "device D kernel#launch block B
// thread T".
func (e *SpinError) Thread() string {
	return fmt.Sprintf("device %d %s#%d block %d thread %d", e.Device, e.Kernel, e.Launch, e.Block, e.Lane)
}

// Spin says how long the thread spun on what: "spun for W on A, which
// kept holding V", and the other words of its loop (", and on A (V),
// ...") when it read several.
func (e *SpinError) Spin() string {
	s := fmt.Sprintf("spun for %v on %v, which kept holding % x", e.Waited, e.Addr, e.Value)
	for i, r := range e.Also {
		if i == 0 {
			s += ", and on "
		} else {
			s += ", "
		}
		s += fmt.Sprintf("%v (% x)", r.Addr, r.Value)
	}
	for _, l := range e.Lost {
		s += "; " + l.String()
	}
	return s
}

// LaunchPTX enqueues a launch of any PTX entry point (see [PTXLauncher]).
func (d *simDevice) LaunchPTX(s device.Stream, l PTXLaunch) error {
	st, err := d.stream("launch", s)
	if err != nil {
		return err
	}
	if l.Module == nil {
		return fmt.Errorf("device %d: launch %s: no PTX module", d.index, l.Entry)
	}
	if l.Grid < 1 || l.Grid > maxBlocks {
		return fmt.Errorf("device %d: launch %s: grid of %d blocks out of range [1, %d]", d.index, l.Entry, l.Grid, maxBlocks)
	}
	if l.Block < 1 || l.Block > maxPTXThreads {
		return fmt.Errorf("device %d: launch %s: %d threads per block out of range [1, %d]", d.index, l.Entry, l.Block, maxPTXThreads)
	}
	if l.Shared < 0 || l.Shared > MaxDynamicShared {
		return fmt.Errorf("device %d: launch %s: %d bytes of dynamic shared memory out of range [0, %d]", d.index, l.Entry, l.Shared, MaxDynamicShared)
	}
	if l.Timeout < 0 {
		return fmt.Errorf("device %d: launch %s: negative spin timeout %v", d.index, l.Entry, l.Timeout)
	}
	if l.Timeout == 0 {
		l.Timeout = DefaultPTXSpinTimeout
	}
	// Decode the entry now, so that a launch of what the interpreter
	// cannot run fails here rather than in its blocks.
	if _, err := l.Module.NewBlockMem(l.Entry, nil); err != nil {
		return fmt.Errorf("device %d: launch %s: %w", d.index, l.Entry, err)
	}
	all := Residency{Blocks: l.Grid}
	if l.Occupancy != nil {
		res, err := l.Module.Resources(l.Entry)
		if err == nil {
			all, err = l.Occupancy.Resident(res, l.Block, l.Shared)
		}
		if err != nil {
			return fmt.Errorf("device %d: launch %s: %w", d.index, l.Entry, err)
		}
	}
	l.Params = append([]byte(nil), l.Params...)
	d.submit(st, func(st *stream) {
		d.w.launches++
		id := d.w.launches
		d.w.kernelsPending++ // a shared context's sync waits for it (context.go)
		d.enqueue(st, "kernel", l.Entry, func(o *op) error {
			defer func() { d.w.kernelsPending-- }()
			return d.runEntry(o, id, l, all)
		})
	})
	return nil
}

// maxPTXThreads is the most threads a block of a CUDA launch has.
const maxPTXThreads = 1024

// MaxDynamicShared is the most dynamic shared memory a launch gives a
// block: what an sm_90 block may opt in to.
const MaxDynamicShared = 227 << 10

// runEntry runs a PTX launch's blocks, capped as the device's Kernels say,
// at most r.Blocks of them at once.
func (d *simDevice) runEntry(o *op, id uint64, l PTXLaunch, r Residency) error {
	cfg := d.w.cfg.Kernels
	grid, threads := l.Grid, l.Block
	if cfg.MaxBlocks > 0 {
		grid = min(grid, cfg.MaxBlocks)
	}
	if cfg.MaxThreads > 0 {
		threads = min(threads, cfg.MaxThreads)
	}
	ln := &launch{dev: d, op: o, kernel: l.Entry, id: id, grid: grid, threads: threads, args: l}
	d.record("kernel", "dev%d start %s#%d grid %d x %d ptx %s", d.index, l.Entry, id, grid, threads, l.Entry)
	return d.runResident(ln, r, func(ctx *blockCtx) error { return ctx.runPTXBlock(l.Module, l.Entry, l.Params, l.Shared, nil) })
}
