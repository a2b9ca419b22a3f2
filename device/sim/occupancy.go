package sim

import (
	"errors"
	"fmt"
	"strings"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device/sim/ptx"
)

// Occupancy is the device a PTX launch's blocks must fit on: how many
// multiprocessors it has and what each holds, or directly how many
// blocks of a launch may be resident at once. A launch runs at most that
// many blocks at a time; the others start, in block order, as resident
// blocks exit (see [PTXLaunch].Occupancy). A zero field takes the
// H200's (sm_90) value, its default.
type Occupancy struct {
	// SMs is the multiprocessor count (the H200 has H200SMs). 0 with
	// ResidentBlocks set: only that limit holds.
	SMs int
	// The limits of one multiprocessor: threads, blocks, 32-bit
	// registers and bytes of shared memory.
	ThreadsPerSM, BlocksPerSM, RegistersPerSM, SharedPerSM int
	// SharedPerBlock is the most shared memory (static and dynamic) a
	// block may have; ReservedShared is what the system takes of a
	// multiprocessor's shared memory for every block.
	SharedPerBlock, ReservedShared int
	// Registers is the registers ptxas gave each thread of the launched
	// entry (ptxas -v prints it). 0: the entry's .maxnreg, and without
	// one DefaultRegisters.
	Registers int
	// ResidentBlocks, when not 0, bounds the blocks of a launch resident
	// at once directly (with SMs too, the smaller bound holds).
	ResidentBlocks int
}

// The H200's (sm_90) limits, the defaults of [Occupancy]'s fields, as
// cudaGetDeviceProperties reports them on an H200.
const (
	H200SMs            = 132
	H200ThreadsPerSM   = 2048
	H200BlocksPerSM    = 32
	H200RegistersPerSM = 65536
	H200SharedPerSM    = 228 << 10
	H200SharedPerBlock = 227 << 10
	H200ReservedShared = 1 << 10
)

// DefaultRegisters is the registers per thread [Occupancy] assumes when
// neither the harness nor the entry's .maxnreg gives them: PTX does not
// say what ptxas allocates. At 32 a multiprocessor's registers hold as
// many threads as its thread limit, so the registers never bound the
// resident blocks: a hang the model reports happens at any allocation.
const DefaultRegisters = 32

// The allocation rules of sm_90 (those of cuda_occupancy.h): registers go
// to warps in units of regUnit, each of a multiprocessor's subPartitions
// holding a quarter of them; shared memory goes to blocks in units of
// sharedUnit; a thread has at most maxRegsPerThread registers.
const (
	warpSize         = 32
	regUnit          = 256
	subPartitions    = 4
	sharedUnit       = 128
	maxRegsPerThread = 255
)

// Residency is how many blocks of a launch can be resident at once, and
// why.
type Residency struct {
	// Blocks is the blocks resident at once on the whole device.
	Blocks int
	// PerSM is the blocks one multiprocessor holds and SMs the count
	// of them (0 when only [Occupancy].ResidentBlocks bounds Blocks).
	PerSM, SMs int
	// The blocks a multiprocessor holds by each of its limits alone.
	ByThreads, ByBlocks, ByRegisters, ByShared int
	// Registers is the registers per thread assumed, and RegistersFrom
	// where they come from: "given", ".maxnreg" or "default".
	Registers     int
	RegistersFrom string
	// SharedAlloc is the shared memory a block takes of its
	// multiprocessor: its static and dynamic shared memory, and what the
	// system reserves for it, rounded up to the allocation unit.
	SharedAlloc int
	// Given is the direct limit of [Occupancy].ResidentBlocks (0: none).
	Given int
	// Threads is the threads of a block.
	Threads int

	occ Occupancy // the limits, defaults filled in
}

// Why says what bounds the resident blocks: "2 SMs x 5 blocks, bounded
// by shared memory (42112 bytes a block of 233472 an SM)", or "the given
// limit of 8 resident blocks".
func (r Residency) Why() string {
	if r.SMs == 0 || (r.Given > 0 && r.Given <= r.PerSM*r.SMs) {
		return fmt.Sprintf("the given limit of %d resident blocks", r.Given)
	}
	var why []string
	if r.ByThreads == r.PerSM {
		why = append(why, fmt.Sprintf("threads (%d warps a block of %d an SM)", r.warps(), r.occ.ThreadsPerSM/warpSize))
	}
	if r.ByRegisters == r.PerSM {
		why = append(why, fmt.Sprintf("registers (%d a thread (%s), %d a block of %d an SM)",
			r.Registers, r.RegistersFrom, r.regsPerWarp()*r.warps(), r.occ.RegistersPerSM))
	}
	if r.ByShared == r.PerSM {
		why = append(why, fmt.Sprintf("shared memory (%d bytes a block of %d an SM)", r.SharedAlloc, r.occ.SharedPerSM))
	}
	if r.ByBlocks == r.PerSM {
		why = append(why, fmt.Sprintf("the limit of %d blocks an SM", r.occ.BlocksPerSM))
	}
	sms := "SMs"
	if r.SMs == 1 {
		sms = "SM"
	}
	return fmt.Sprintf("%d %s x %d blocks, bounded by %s", r.SMs, sms, r.PerSM, strings.Join(why, " and "))
}

func (r Residency) warps() int { return (r.Threads + warpSize - 1) / warpSize }

func (r Residency) regsPerWarp() int { return roundUp(r.Registers*warpSize, regUnit) }

func roundUp(x, unit int) int { return (x + unit - 1) / unit * unit }

// withDefaults is o with every zero limit the H200's.
func (o Occupancy) withDefaults() Occupancy {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.ThreadsPerSM, H200ThreadsPerSM)
	def(&o.BlocksPerSM, H200BlocksPerSM)
	def(&o.RegistersPerSM, H200RegistersPerSM)
	def(&o.SharedPerSM, H200SharedPerSM)
	def(&o.SharedPerBlock, H200SharedPerBlock)
	def(&o.ReservedShared, H200ReservedShared)
	return o
}

// Resident computes how many blocks of threads threads, each with
// dynShared bytes of dynamic shared memory, of an entry that declares res
// can be resident at once, by the rules of CUDA's occupancy calculator
// (cuda_occupancy.h) for sm_90:
//
//   - threads: a block takes ceil(threads/32) warps of the SM's
//     ThreadsPerSM/32;
//   - blocks: at most BlocksPerSM;
//   - registers: a warp takes registers-per-thread x 32 rounded up to 256;
//     each of the SM's 4 sub-partitions holds RegistersPerSM/4 of them,
//     so an SM holds 4 x floor(RegistersPerSM/4 / per warp) warps;
//   - shared memory: a block takes its static and dynamic shared memory
//     plus ReservedShared, rounded up to 128 bytes, of SharedPerSM.
//
// A block that does not fit on an SM at all (more threads than its
// .maxntid, other than its .reqntid, more shared memory than
// SharedPerBlock, more registers than a block or a thread may have) is an
// error, as the launch fails on a GPU.
func (o Occupancy) Resident(res ptx.Resources, threads, dynShared int) (Residency, error) {
	if o.SMs < 0 || o.ThreadsPerSM < 0 || o.BlocksPerSM < 0 || o.RegistersPerSM < 0 || o.SharedPerSM < 0 ||
		o.SharedPerBlock < 0 || o.ReservedShared < 0 || o.Registers < 0 || o.ResidentBlocks < 0 {
		return Residency{}, fmt.Errorf("occupancy: a negative limit in %+v", o)
	}
	if o.SMs == 0 && o.ResidentBlocks == 0 {
		return Residency{}, errors.New("occupancy: neither a multiprocessor count nor a limit of resident blocks")
	}
	o = o.withDefaults()
	r := Residency{SMs: o.SMs, Given: o.ResidentBlocks, occ: o, Threads: threads}
	switch {
	case threads < 1:
		return r, fmt.Errorf("occupancy: %d threads a block", threads)
	case res.MaxNTid > 0 && threads > res.MaxNTid:
		return r, fmt.Errorf("a block of %d threads, more than the entry's .maxntid (%d): the launch fails on a GPU", threads, res.MaxNTid)
	case res.ReqNTid > 0 && threads != res.ReqNTid:
		return r, fmt.Errorf("a block of %d threads, not the entry's .reqntid (%d): the launch fails on a GPU", threads, res.ReqNTid)
	}
	r.Registers, r.RegistersFrom = DefaultRegisters, "default"
	switch {
	case o.Registers > 0:
		r.Registers, r.RegistersFrom = o.Registers, "given"
	case res.MaxNReg > 0:
		r.Registers, r.RegistersFrom = res.MaxNReg, ".maxnreg"
	}
	warps := r.warps()
	r.ByThreads = o.ThreadsPerSM / warpSize / warps
	r.ByBlocks = o.BlocksPerSM

	perWarp := r.regsPerWarp()
	switch {
	case r.Registers > maxRegsPerThread:
		return r, fmt.Errorf("%d registers a thread (%s), more than a thread may have (%d)", r.Registers, r.RegistersFrom, maxRegsPerThread)
	case perWarp*roundUp(warps, subPartitions) > o.RegistersPerSM:
		// The hardware's check: a block's warps take registers in every
		// sub-partition alike.
		return r, fmt.Errorf("%d registers a thread (%s) x %d threads: more registers than a block may have (%d): the launch fails on a GPU",
			r.Registers, r.RegistersFrom, threads, o.RegistersPerSM)
	}
	r.ByRegisters = o.RegistersPerSM / subPartitions / perWarp * subPartitions / warps

	used := res.StaticShared + dynShared
	if used > o.SharedPerBlock {
		return r, fmt.Errorf("%d bytes of shared memory a block (%d static, %d dynamic), more than a block may have (%d): the launch fails on a GPU",
			used, res.StaticShared, dynShared, o.SharedPerBlock)
	}
	r.SharedAlloc = roundUp(used+o.ReservedShared, sharedUnit)
	r.ByShared = o.SharedPerSM / max(r.SharedAlloc, 1)

	r.PerSM = min(r.ByThreads, r.ByBlocks, r.ByRegisters, r.ByShared)
	if r.PerSM == 0 {
		return r, fmt.Errorf("a block does not fit on a multiprocessor (%s)", r.Why())
	}
	switch {
	case o.SMs == 0:
		r.Blocks = o.ResidentBlocks
	case o.ResidentBlocks > 0:
		r.Blocks = min(o.ResidentBlocks, r.PerSM*o.SMs)
	default:
		r.Blocks = r.PerSM * o.SMs
	}
	return r, nil
}

// OccupancyError is the error of a launch whose resident blocks hung
// while blocks of its grid had not started: on a GPU those blocks wait
// for a multiprocessor that no resident block leaves.
type OccupancyError struct {
	Device int
	Kernel string
	Launch uint64
	Grid   int
	// Residency is how many blocks can be resident at once, and why.
	Residency Residency
	// Started is how many blocks started (0 to Started-1, in order):
	// blocks Started to Grid-1 never did. Exited is how many blocks
	// exited and left their place to the next block (Started minus the
	// blocks that started at once).
	Started, Exited int
	// Hung is the blocks that were resident at the end and failed (their
	// threads spun until the timeout), in order.
	Hung []int
	// Err is the failures of the blocks in Hung, joined: their
	// [*SpinError]s.
	Err error
}

func (e *OccupancyError) Error() string {
	return fmt.Sprintf("device %d %s#%d: %s; %v", e.Device, e.Kernel, e.Launch, e.Summary(), e.Err)
}

// Unwrap returns the hung blocks' failures.
func (e *OccupancyError) Unwrap() error { return e.Err }

// Summary says what hung and why, without the blocks' failures: "blocks
// 5-9 (resident) wait for blocks 10-11, which never started: 10 of the
// grid's 12 blocks can be resident at once (2 SMs x 5 blocks, bounded by
// ...); 5 blocks exited".
func (e *OccupancyError) Summary() string {
	s := fmt.Sprintf("%s (resident) %s for %s, which never started: %d of the grid's %d blocks can be resident at once (%s)",
		blockRange(e.Hung), map[bool]string{true: "waits", false: "wait"}[len(e.Hung) == 1],
		blockRange(rangeOf(e.Started, e.Grid)), e.Residency.Blocks, e.Grid, e.Residency.Why())
	if e.Exited > 0 {
		s += fmt.Sprintf("; %d blocks exited before, each leaving its place to the next", e.Exited)
	}
	return s
}

func rangeOf(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for b := lo; b < hi; b++ {
		out = append(out, b)
	}
	return out
}

// blockRange names blocks, sorted, by runs: "block 3", "blocks 0-4, 7".
func blockRange(bs []int) string {
	var parts []string
	for i := 0; i < len(bs); {
		j := i
		for j+1 < len(bs) && bs[j+1] == bs[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, itoa(bs[i]))
		} else {
			parts = append(parts, itoa(bs[i])+"-"+itoa(bs[j]))
		}
		i = j + 1
	}
	if len(bs) == 1 {
		return "block " + parts[0]
	}
	return "blocks " + strings.Join(parts, ", ")
}

// runResident runs the blocks of ln as a GPU with the residency r does:
// the first r.Blocks blocks start at once, and each later block, in block
// order, when a resident block exits (CUDA leaves the order unspecified;
// in practice it is block order). Once a block failed no block starts
// (on a GPU a hung block never exits; a fault ends the launch). A launch
// whose failures are spins while blocks had not started fails with an
// [*OccupancyError]. With r.Blocks covering the grid every block starts
// at once.
func (d *simDevice) runResident(ln *launch, r Residency, body func(ctx *blockCtx) error) error {
	resident := min(r.Blocks, ln.grid)
	errs := make([]error, ln.grid)
	started, done, failed := 0, 0, false
	var finished actor.Bell // rung by every block that finishes
	parent := d.w.sched.Current().ID()
	ln.begun = d.w.weak.stamp
	d.w.weak.launches++
	var start func()
	start = func() {
		b := started
		started++
		ctx := &blockCtx{l: ln, index: b, lane: -1}
		d.w.sched.GoLabeled(ctx.label(), func() {
			ctx.emit(&Access{Kind: BlockStart, Parent: parent})
			errs[b] = body(ctx)
			d.w.weak.forget(&ctx.wv)
			ctx.emit(&Access{Kind: BlockEnd, Parent: -1})
			done++
			failed = failed || errs[b] != nil
			if !failed && started < ln.grid {
				d.record("kernel", "dev%d %s#%d block %d starts in the place block %d left", d.index, ln.kernel, ln.id, started, b)
				start()
			}
			finished.Ring()
		})
	}
	for range resident {
		start()
	}
	what := "device " + itoa(d.index) + " kernel " + ln.kernel + "#" + utoa(ln.id) + ": its " + itoa(ln.grid) + " blocks to finish"
	if resident < ln.grid {
		what += ", " + itoa(resident) + " resident at once"
	}
	ready := func() bool { return done == started && (started == ln.grid || failed) }
	if err := d.w.sched.WaitBell(what, ready, &finished, 0); err != nil {
		return err // the run ends: its launches stay counted
	}
	if d.w.weak.launches--; d.w.weak.launches == 0 {
		d.w.weak.settle() // no kernel thread is live
	}
	d.record("kernel", "dev%d end %s#%d", d.index, ln.kernel, ln.id)
	if started == ln.grid {
		return firstError(errs, "blocks")
	}
	var hung []int
	var spins []error
	for b, err := range errs[:started] {
		var se *SpinError
		switch {
		case err == nil:
		case errors.As(err, &se):
			hung = append(hung, b)
			spins = append(spins, err)
		default:
			return firstError(errs, "blocks") // a fault, not a hang
		}
	}
	return &OccupancyError{Device: d.index, Kernel: ln.kernel, Launch: ln.id, Grid: ln.grid, Residency: r,
		Started: started, Exited: started - r.Blocks, Hung: hung, Err: errors.Join(spins...)}
}
