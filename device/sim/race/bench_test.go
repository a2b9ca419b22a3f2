package race_test

import (
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/race"
	"github.com/symmem/symmem/signal"
)

// feed is a synthetic event stream into a detector: the events a world-4
// one-shot all-reduce of 4 KiB makes on one rank's device, without the
// simulator that would make them, so that the benchmarks time the
// detector alone.
type feed struct {
	d       *race.Detector
	observe func(*sim.Access)
	task    int    // the last task id handed out
	launch  uint64 // the last launch number
	seq     uint64 // the stream's last op
	n       int    // accesses fed
	bytes   uint64 // the tensor's size
	// table: each load of a buffer follows a load of its address from a
	// table of the peers' buffers, as the PTX of the kernels reloads it.
	table bool
	// interleave: the lanes of a block take turns, a vector each, as PTX
	// threads that the scheduler switches between do.
	interleave bool
}

const (
	benchWorld = 4
	benchBytes = 4096
	benchPads  = benchWorld + 1 // phys ids 1..4: the buffers; 5: the output; 6: the pad
	benchTable = benchPads + 2  // phys id 7: the table of the buffers' addresses
	hostTask   = 0
	workerTask = 1
	benchDev   = 0
	benchStrm  = device.Stream(1)
)

func newFeed(tb testing.TB) *feed {
	w, err := sim.NewWorld(actor.NewScheduler(actor.Config{Seed: 1}), sim.Config{World: 1})
	if err != nil {
		tb.Fatal(err)
	}
	d := race.New(w)
	return &feed{d: d, observe: w.Observer(), task: workerTask, bytes: benchBytes}
}

func (f *feed) newTask() int { f.task++; return f.task }

// host is a host task's access of a whole allocation.
func (f *feed) host(phys uint64, write bool) {
	kind := sim.Load
	if write {
		kind = sim.Store
	}
	f.observe(&sim.Access{Kind: kind, Task: hostTask, Parent: -1, Device: benchDev, Block: -1, Lane: -1,
		Addr: device.Ptr(phys << 32), Size: f.bytes, Phys: phys, Write: write, Order: signal.Relaxed, Scope: signal.System})
	f.n++
}

// kernel feeds one launch: host writes its input, enqueues the launch,
// grid blocks run their accesses (each block's body is body, called step
// by step with the access template of the block or of each of its lanes,
// until it reports no such step), and the host waits for it and reads the
// output. The lanes of a block run one after the other, or with
// f.interleave in turns, a step each.
func (f *feed) kernel(grid, lanes int, body func(a sim.Access, part, parts, step int) bool) {
	f.host(1, true)
	if f.table {
		f.observe(&sim.Access{Kind: sim.Store, Task: hostTask, Parent: -1, Device: benchDev, Block: -1, Lane: -1,
			Addr: device.Ptr(benchTable << 32), Size: 8 * benchWorld, Phys: benchTable, Write: true, Scope: signal.System})
		f.n++
	}
	f.seq++
	f.launch++
	op := sim.Access{Parent: -1, Device: benchDev, Stream: benchStrm, Seq: f.seq, Op: "kernel", Kernel: "one_shot_all_reduce", Block: -1, Lane: -1}
	ev := func(a sim.Access, kind sim.AccessKind, task int) {
		a.Kind, a.Task = kind, task
		f.observe(&a)
	}
	// start forks a block or lane of the task parent as a new task and
	// returns the access template of its events.
	start := func(a sim.Access, kind sim.AccessKind, parent int) sim.Access {
		task := f.newTask()
		a.Parent = parent
		ev(a, kind, task)
		a.Parent, a.Task = -1, task
		return a
	}
	run := func(a sim.Access, part, parts int) { // every step of a part
		for step := 0; body(a, part, parts, step); step++ {
		}
	}
	ev(op, sim.Enqueue, hostTask)
	ev(op, sim.OpStart, workerTask)
	op.Launch = f.launch
	for blk := range grid {
		ba := op
		ba.Block = blk
		ba = start(ba, sim.BlockStart, workerTask)
		bt := ba.Task
		if lanes == 0 {
			run(ba, blk, grid)
			ev(ba, sim.BlockEnd, bt)
			continue
		}
		var las []sim.Access // the lanes taking turns
		for l := range lanes {
			la := ba
			la.Lane = l
			la = start(la, sim.LaneStart, bt)
			if f.interleave {
				las = append(las, la)
				continue
			}
			run(la, blk*lanes+l, grid*lanes)
			ev(la, sim.LaneEnd, la.Task)
		}
		if f.interleave {
			for step, more := 0, true; more; step++ {
				more = false
				for l, la := range las {
					more = body(la, blk*lanes+l, grid*lanes, step) || more
				}
			}
			for _, la := range las {
				ev(la, sim.LaneEnd, la.Task)
			}
		}
		ev(ba, sim.BlockSync, bt)
		ev(ba, sim.BlockEnd, bt)
	}
	op.Launch = 0
	ev(op, sim.OpEnd, workerTask)
	ev(op, sim.Complete, hostTask)
	f.host(benchWorld+1, false)
}

// oneShot feeds step step of one part (a lane or a block, a the template
// of its events) of parts of a one-shot all-reduce and reports whether
// the part has that step: step 0 signals on the pad, step i > 0 loads the
// part's i-th vector from every rank's buffer and stores their sum.
func (f *feed) oneShot(a sim.Access, part, parts, step int, vec uint64) bool {
	acc := func(kind sim.AccessKind, phys, off, size uint64, write bool) {
		a.Kind, a.Phys, a.PhysOffset, a.Size, a.Write = kind, phys, off, size, write
		a.Addr = device.Ptr(phys<<32 + off)
		f.observe(&a)
		f.n++
	}
	if step == 0 {
		a.Order, a.Scope = signal.AcqRel, signal.System
		acc(sim.Atomic, benchPads+1, uint64(4*part), 4, true)
		return true
	}
	a.Order, a.Scope = signal.Relaxed, signal.Block
	chunk := f.bytes / uint64(parts)
	off := uint64(part)*chunk + uint64(step-1)*vec
	if off >= uint64(part+1)*chunk {
		return false
	}
	for r := uint64(1); r <= benchWorld; r++ {
		if f.table {
			acc(sim.Load, benchTable, 8*(r-1), 8, false)
		}
		acc(sim.Load, r, off, vec, false)
	}
	acc(sim.Store, benchWorld+1, off, vec, true)
	return true
}

// benchmarkDetector runs one launch's events per iteration and reports
// the accesses checked per second.
func benchmarkDetector(b *testing.B, grid, lanes int, vec, bytes uint64, table bool) {
	f := newFeed(b)
	f.bytes, f.table, f.interleave = bytes, table, table
	body := func(a sim.Access, part, parts, step int) bool { return f.oneShot(a, part, parts, step, vec) }
	f.kernel(grid, lanes, body) // the first launch meets an empty shadow
	b.ReportAllocs()
	b.ResetTimer()
	start := f.n
	for i := 0; i < b.N; i++ {
		f.kernel(grid, lanes, body)
	}
	b.StopTimer()
	if err := f.d.Err(); err != nil {
		b.Fatalf("races in a race-free stream: %v", err)
	}
	b.ReportMetric(float64(f.n-start)/b.Elapsed().Seconds(), "accesses/s")
}

// BenchmarkLaneAccesses is the detector under the accesses of
// interpreted PTX: 2 blocks of 32 lanes, each with 16-byte vectors of its
// own part of the tensor.
func BenchmarkLaneAccesses(b *testing.B) { benchmarkDetector(b, 2, 32, 16, benchBytes, false) }

// BenchmarkLaneTableAccesses is BenchmarkLaneAccesses with every lane
// reloading the buffer's address from a table before each load, as the
// kernels' PTX does, and the lanes taking turns: each table word holds a
// read of every lane.
func BenchmarkLaneTableAccesses(b *testing.B) { benchmarkDetector(b, 2, 32, 16, benchBytes, true) }

// BenchmarkBlockAccesses is the detector under the accesses of the Go
// twins: 2 blocks, each loading and storing its half of the tensor in
// 512-byte runs.
func BenchmarkBlockAccesses(b *testing.B) { benchmarkDetector(b, 2, 0, 512, benchBytes, false) }

// BenchmarkLargeBlockAccesses is BenchmarkBlockAccesses with a tensor of
// 3 MiB, the largest the fuzzer draws: the host's accesses cover it whole.
func BenchmarkLargeBlockAccesses(b *testing.B) { benchmarkDetector(b, 2, 0, 512, 3<<20, false) }

// TestBenchFeedFindsARace checks that the benchmarks' feed reaches the
// detector: the same launch with two lanes storing the same words races.
func TestBenchFeedFindsARace(t *testing.T) {
	f := newFeed(t)
	f.kernel(1, 2, func(a sim.Access, part, parts, step int) bool { return f.oneShot(a, 0, 1, step, 16) })
	if f.d.Err() == nil {
		t.Fatal("two lanes storing the same output words: no race reported")
	}
	// The table's feed: lanes in turns reload the table, race-free, until
	// a lane writes the table.
	f = newFeed(t)
	f.table, f.interleave = true, true
	body := func(a sim.Access, part, parts, step int) bool { return f.oneShot(a, part, parts, step, 16) }
	f.kernel(2, 32, body)
	f.kernel(2, 32, body)
	if err := f.d.Err(); err != nil {
		t.Fatalf("the table's feed races: %v", err)
	}
	f.kernel(1, 2, func(a sim.Access, part, parts, step int) bool {
		if part == 1 && step == 3 {
			a.Kind, a.Phys, a.PhysOffset, a.Size, a.Write = sim.Store, benchTable, 8, 8, true
			a.Addr = device.Ptr(benchTable<<32 + 8)
			f.observe(&a)
		}
		return f.oneShot(a, part, parts, step, 16)
	})
	if f.d.Err() == nil {
		t.Fatal("a lane writing the table the other lane reloads: no race reported")
	}
}
