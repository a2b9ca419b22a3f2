package ptxcheck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/rank"
)

// Mismatch is a check that failed on one rank.
type Mismatch struct {
	Rank   int
	Step   string // the check's step
	Buffer string
	Index  int     // the first element that differs
	Got    float64 // its value
	Want   float64
	Bad    int // elements that differ
	Count  int // elements checked
}

func (m Mismatch) String() string {
	return fmt.Sprintf("rank %d %s: %d of %d elements differ; first: element %d is %v, want %v",
		m.Rank, m.Step, m.Bad, m.Count, m.Index, m.Got, m.Want)
}

// worldRun is what the ranks of one run share: the compiled program and
// what they found.
type worldRun struct {
	c          *compiled
	world      int
	vars       *frame       // world and the vars bound, for the ranks to copy
	mismatches [][]Mismatch // by rank
	shapes     map[string]bool
	caps       sim.Kernels
	sched      *actor.Scheduler
	plan       Plan
	fired      []bool
	died       []bool         // by rank: killed by a die fault
	repeats    map[string]int // repeat counts that replace the harness's
	layout     *layout        // where the buffers are
}

// errDied is the error of a rank a die fault killed.
var errDied = errors.New("killed by a die fault")

// due returns the index of an unfired fault of rank r for its n-th launch
// (onLaunch) or write step, or -1.
func (w *worldRun) due(r, n int, onLaunch bool) int {
	for i, f := range w.plan {
		if !w.fired[i] && f.Rank == r && f.At == n && f.onLaunch() == onLaunch {
			return i
		}
	}
	return -1
}

// fire marks fault i fired and records it in the trace.
func (w *worldRun) fire(i int) {
	w.fired[i] = true
	w.sched.Record("fault", w.plan[i].String())
}

// rankRun is one rank running the program.
type rankRun struct {
	*worldRun
	r       *rank.Rank
	dev     device.Device
	bufs    []device.Ptr
	sizes   []uint64
	sym     []*rank.SymmetricMemory
	streams map[int]device.Stream
	// loc is the rank's frame: the world's with rank bound, and iter and
	// i where a repeat or a fill binds them.
	loc     *frame
	barrier int
	// launches and writes count the rank's launch and write steps, for
	// the fault plan: a launch captured in a graph counts once for each
	// replay that enqueues it.
	launches, writes int
	// captured counts the launches of the graph being captured (-1: no
	// capture): their faults and redeliveries wait for the replays.
	captured int
	// dups are writes dup-write faults deliver again after the next
	// launch.
	dups []pendingWrite
}

// pendingWrite is a host write to deliver again.
type pendingWrite struct {
	dst  device.Ptr
	data []byte
}

// run runs the program on rank r.
func (w *worldRun) run(r *rank.Rank) error {
	rr := &rankRun{worldRun: w, r: r, dev: r.Device(), streams: map[int]device.Stream{0: r.Stream()}, loc: w.vars.clone(), captured: -1}
	rr.loc.bind(slotRank, float64(r.ID()))
	w.layout.stream(r.ID(), r.Stream(), 0)
	if err := rr.setup(); err != nil {
		return fmt.Errorf("rank %d: %w", r.ID(), err)
	}
	if err := rr.steps(rr.c.steps); err != nil {
		return fmt.Errorf("rank %d: %w", r.ID(), err)
	}
	if err := rr.redeliver(); err != nil {
		return fmt.Errorf("rank %d: end of the program: %w", r.ID(), err)
	}
	if err := rr.syncAll("end of the program"); err != nil {
		return fmt.Errorf("rank %d: %w", r.ID(), err)
	}
	return nil
}

// setup allocates the buffers, writes their initial values and meets the
// peers to map the symmetric ones.
func (rr *rankRun) setup() error {
	defer rr.loc.restore(slotI, rr.loc.save(slotI)) // bound for the tables' entries
	counts := make([]int64, len(rr.c.buffers))
	for _, b := range rr.c.buffers {
		var n int64
		var err error
		if b.Kind == "table" {
			if counts[b.idx], err = b.count.evalInt(rr.loc); err != nil {
				return harness(fmt.Errorf("buffer %s: table: count: %w", b.Name, err))
			}
			if counts[b.idx] < 1 || counts[b.idx] > 1<<20 {
				return harness(fmt.Errorf("buffer %s: table: count %d out of range [1, 2^20]", b.Name, counts[b.idx]))
			}
			n = counts[b.idx] * int64(b.entry.size)
		} else if n, err = b.bytes.evalInt(rr.loc); err != nil {
			return harness(fmt.Errorf("buffer %s: bytes: %w", b.Name, err))
		}
		if n < 1 || n > 1<<32 {
			return harness(fmt.Errorf("buffer %s: %d bytes out of range [1, 4 GiB]", b.Name, n))
		}
		p, err := rr.r.Alloc(uint64(n))
		if err != nil {
			return fmt.Errorf("buffer %s: %w", b.Name, err)
		}
		rr.bufs = append(rr.bufs, p)
		rr.sizes = append(rr.sizes, uint64(n))
		rr.layout.add(region{base: uint64(p), end: uint64(p) + uint64(n), name: b.Name, owner: rr.r.ID(), dev: rr.r.ID()})
		if b.Kind == "signal" {
			if err := rr.dev.Memset(rr.r.Stream(), p, 0, uint64(n)); err != nil {
				return fmt.Errorf("buffer %s: zero: %w", b.Name, err)
			}
		}
		if b.init != nil {
			if err := rr.write(b.idx, 0, *b.init); err != nil {
				return fmt.Errorf("buffer %s: init: %w", b.Name, err)
			}
		}
	}
	if err := rr.r.Synchronize(); err != nil {
		return err
	}
	rr.sym = make([]*rank.SymmetricMemory, len(rr.bufs))
	for _, b := range rr.c.buffers {
		if b.Kind == "plain" || b.Kind == "table" {
			continue
		}
		h, err := rr.r.Rendezvous(rr.bufs[b.idx], rank.WorldGroup)
		if err != nil {
			return fmt.Errorf("buffer %s: %w", b.Name, err)
		}
		rr.sym[b.idx] = h
		me := rr.r.ID()
		for peer, p := range h.BufferPtrs() {
			if peer != me {
				rr.layout.add(region{base: uint64(p), end: uint64(p) + rr.sizes[b.idx], name: b.Name, owner: peer, dev: me})
			}
		}
		t := uint64(h.BufferPtrsDev())
		rr.layout.add(region{base: t, end: t + 8*uint64(rr.world), name: b.Name, owner: me, dev: me, table: true})
	}
	tables := false
	for _, b := range rr.c.buffers {
		if b.Kind != "table" {
			continue
		}
		tables = true
		size := b.entry.size
		data := make([]byte, counts[b.idx]*int64(size))
		for i := range counts[b.idx] {
			rr.loc.bind(slotI, float64(i))
			if err := rr.pack(*b.entry, data[i*int64(size):(i+1)*int64(size)]); err != nil {
				return harness(fmt.Errorf("buffer %s: table entry %d: %w", b.Name, i, err))
			}
		}
		if err := rr.dev.Write(rr.r.Stream(), rr.bufs[b.idx], data); err != nil {
			return fmt.Errorf("buffer %s: table: %w", b.Name, err)
		}
	}
	if tables {
		return rr.r.Synchronize()
	}
	return nil
}

// steps runs ss with the rank's variables.
func (rr *rankRun) steps(ss []cStep) error {
	for _, s := range ss {
		if on, err := rr.selected(s); err != nil || !on {
			if err != nil {
				return fmt.Errorf("%s: %w", s.what, err)
			}
			continue
		}
		var err error
		restore := rr.layout.running(rr.r.ID(), s.what)
		switch {
		case s.write != nil:
			err = rr.write(s.write.buf, s.write.stream, s.write.fill)
		case s.memset != nil:
			err = rr.memset(s.memset)
		case s.launch != nil:
			err = rr.launch(s.launch)
		case s.graph != nil:
			err = rr.graph(s.graph)
		case s.sync:
			err = rr.syncAll(s.what)
		case s.wait != nil:
			err = rr.wait(s.wait)
		case s.bar:
			err = rr.hostBarrier()
		case s.check != nil:
			err = rr.check(s)
		case s.repeat != nil:
			var n int64
			if n, err = repeatTimes(s, rr.loc, rr.repeats); err != nil {
				return harness(err)
			}
			saved := rr.loc.save(slotIter)
			for it := range n {
				rr.loc.bind(slotIter, float64(it))
				if err = rr.steps(s.repeat.steps); err != nil {
					break
				}
			}
			rr.loc.restore(slotIter, saved)
		}
		restore()
		if err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return nil
}

// selected reports whether the rank runs step s: its when is not 0.
func (rr *rankRun) selected(s cStep) (bool, error) {
	if s.when == nil {
		return true, nil
	}
	v, err := s.when.eval(rr.loc)
	if err != nil {
		return false, harness(fmt.Errorf("when: %w", err))
	}
	return v != 0, nil
}

// graph captures g's steps on its stream, evaluating their expressions
// now, and enqueues the graph as often as it replays.
func (rr *rankRun) graph(g *cGraph) error {
	n, err := g.replays.evalInt(rr.loc)
	if err != nil {
		return harness(fmt.Errorf("replays: %w", err))
	}
	if n < 0 || n > 1<<20 {
		return harness(fmt.Errorf("%d replays out of range [0, %d]", n, 1<<20))
	}
	s, err := rr.stream(g.stream)
	if err != nil {
		return err
	}
	if err := rr.dev.BeginCapture(s); err != nil {
		return err
	}
	rr.captured = 0
	capErr := rr.steps(g.steps)
	launches := rr.captured
	rr.captured = -1
	gr, err := rr.dev.EndCapture(s)
	if capErr != nil || err != nil {
		return errors.Join(capErr, err)
	}
	// A replay enqueues the graph's launches: the faults due at them fire
	// before it, and the writes to deliver again after their next launch
	// go after it.
	for range n {
		for range launches {
			if err := rr.faultLaunch(); err != nil {
				return err
			}
		}
		if err := rr.dev.LaunchGraph(gr, s); err != nil {
			return err
		}
		if launches > 0 {
			if err := rr.redeliver(); err != nil {
				return err
			}
		}
	}
	return rr.dev.DestroyGraph(gr)
}

// memset enqueues a byte fill on its stream, ordered with nothing else.
func (rr *rankRun) memset(m *cMemset) error {
	ev := func(x *expr, def int64) (int64, error) {
		if x == nil {
			return def, nil
		}
		return x.evalInt(rr.loc)
	}
	v, err := ev(m.value, 0)
	if err != nil {
		return harness(fmt.Errorf("value: %w", err))
	}
	if v < 0 || v > 255 {
		return harness(fmt.Errorf("value %d out of the range of a byte [0, 255]", v))
	}
	off, err := ev(m.offset, 0)
	if err != nil {
		return harness(fmt.Errorf("offset: %w", err))
	}
	size := rr.sizes[m.buf]
	if off < 0 || uint64(off) > size {
		return harness(fmt.Errorf("offset %d outside the %d-byte buffer %s", off, size, rr.c.buffers[m.buf].Name))
	}
	n, err := ev(m.bytes, int64(size)-off)
	if err != nil {
		return harness(fmt.Errorf("bytes: %w", err))
	}
	if n < 0 || uint64(off)+uint64(n) > size {
		return harness(fmt.Errorf("%d bytes at offset %d overrun the %d-byte buffer %s", n, off, size, rr.c.buffers[m.buf].Name))
	}
	dst := rr.bufs[m.buf]
	if m.rank != nil {
		peer, err := m.rank.evalInt(rr.loc)
		if err != nil {
			return harness(fmt.Errorf("rank: %w", err))
		}
		if peer < 0 || peer >= int64(rr.world) {
			return harness(fmt.Errorf("rank %d out of range [0, %d)", peer, rr.world))
		}
		dst = rr.sym[m.buf].BufferPtrs()[peer]
	}
	s, err := rr.stream(m.stream)
	if err != nil || n == 0 {
		return err
	}
	return rr.dev.Memset(s, dst.Add(uint64(off)), byte(v), uint64(n))
}

// wait waits for the earlier work of the streams named, in order,
// joining their errors; a stream not used yet has none.
func (rr *rankRun) wait(streams []int) error {
	var errs []error
	for _, k := range streams {
		if s, ok := rr.streams[k]; ok {
			if err := rr.dev.Synchronize(s); err != nil {
				errs = append(errs, fmt.Errorf("stream %d: %w", k, err))
			}
		}
	}
	return errors.Join(errs...)
}

// span resolves a fill's element range in buffer b; its errors are the
// harness's.
func (rr *rankRun) span(b int, f cFill) (off uint64, count int, err error) {
	off, count, err = rr.spanOf(b, f)
	return off, count, harness(err)
}

func (rr *rankRun) spanOf(b int, f cFill) (off uint64, count int, err error) {
	size := dtypeSizes[f.dtype]
	var o int64
	if f.offset != nil {
		if o, err = f.offset.evalInt(rr.loc); err != nil {
			return 0, 0, err
		}
	}
	if o < 0 || uint64(o) > rr.sizes[b] {
		return 0, 0, fmt.Errorf("offset %d outside the %d-byte buffer %s", o, rr.sizes[b], rr.c.buffers[b].Name)
	}
	n := int64((rr.sizes[b] - uint64(o)) / uint64(size))
	if f.count != nil {
		if n, err = f.count.evalInt(rr.loc); err != nil {
			return 0, 0, err
		}
	}
	if n < 0 || uint64(o)+uint64(n)*uint64(size) > rr.sizes[b] {
		return 0, 0, fmt.Errorf("%d elements of %s at offset %d overrun the %d-byte buffer %s", n, f.dtype, o, rr.sizes[b], rr.c.buffers[b].Name)
	}
	return uint64(o), int(n), nil
}

// write writes a fill into buffer b after the earlier work of stream k.
func (rr *rankRun) write(b, k int, f cFill) error {
	off, n, err := rr.span(b, f)
	if err != nil {
		return err
	}
	size := dtypeSizes[f.dtype]
	data := make([]byte, n*size)
	defer rr.loc.restore(slotI, rr.loc.save(slotI))
	for i := 0; i < n; i++ {
		rr.loc.bind(slotI, float64(i))
		v, err := f.value.eval(rr.loc)
		if err != nil {
			return harness(fmt.Errorf("element %d: %w", i, err))
		}
		if err := encode(f.dtype, v, data[i*size:]); err != nil {
			return harness(fmt.Errorf("element %d: %w", i, err))
		}
	}
	st, err := rr.stream(k)
	if err != nil {
		return err
	}
	nth := rr.writes
	rr.writes++
	dst := rr.bufs[b].Add(off)
	if i := rr.due(rr.r.ID(), nth, false); i >= 0 {
		rr.fire(i)
		if rr.plan[i].Kind == LoseWrite {
			return nil
		}
		rr.dups = append(rr.dups, pendingWrite{dst: dst, data: data})
	}
	if n == 0 {
		return nil
	}
	return rr.dev.Write(st, dst, data)
}

// redeliver delivers the duplicated writes again.
func (rr *rankRun) redeliver() error {
	dups := rr.dups
	rr.dups = nil
	for _, d := range dups {
		if len(d.data) == 0 {
			continue
		}
		if err := rr.dev.Write(rr.r.Stream(), d.dst, d.data); err != nil {
			return fmt.Errorf("duplicated write: %w", err)
		}
	}
	return nil
}

// faultLaunch applies a stall or die fault due at the rank's next launch.
func (rr *rankRun) faultLaunch() error {
	k := rr.launches
	rr.launches++
	i := rr.due(rr.r.ID(), k, true)
	if i < 0 {
		return nil
	}
	rr.fire(i)
	f := rr.plan[i]
	if f.Kind == Stall {
		for range f.Steps {
			rr.sched.Yield("stalled")
		}
		return nil
	}
	id := rr.r.ID()
	rr.died[id] = true
	rr.sched.Halt(fmt.Sprintf("rank %d died", id), func(t *actor.Task) bool {
		l := t.Label()
		return (l.Kind == actor.ProgramTask && l.Rank == id) || l.OnDevice(id)
	})
	rr.sched.Yield("died")
	return errDied
}

// check reads a buffer and compares it, recording a mismatch.
func (rr *rankRun) check(s cStep) error {
	ck := s.check
	off, n, err := rr.span(ck.buf, ck.fill)
	if err != nil {
		return err
	}
	size := dtypeSizes[ck.fill.dtype]
	data := make([]byte, n*size)
	if n > 0 {
		if err := rr.dev.Read(rr.r.Stream(), data, rr.bufs[ck.buf].Add(off)); err != nil {
			return err
		}
	}
	m := Mismatch{Rank: rr.r.ID(), Step: s.what, Buffer: rr.c.buffers[ck.buf].Name, Count: n}
	defer rr.loc.restore(slotI, rr.loc.save(slotI))
	for i := 0; i < n; i++ {
		rr.loc.bind(slotI, float64(i))
		want, err := ck.fill.value.eval(rr.loc)
		if err != nil {
			return harness(fmt.Errorf("element %d: %w", i, err))
		}
		got := decode(ck.fill.dtype, data[i*size:])
		if !agree(ck.fill.dtype, got, want, ck.tol) {
			if m.Bad == 0 {
				m.Index, m.Got, m.Want = i, got, roundTo(ck.fill.dtype, want)
			}
			m.Bad++
		}
	}
	if m.Bad > 0 {
		rr.mismatches[rr.r.ID()] = append(rr.mismatches[rr.r.ID()], m)
	}
	return nil
}

// stream returns stream k of the rank, created on first use.
func (rr *rankRun) stream(k int) (device.Stream, error) {
	if s, ok := rr.streams[k]; ok {
		return s, nil
	}
	s, err := rr.dev.NewStream()
	if err != nil {
		return 0, err
	}
	rr.streams[k] = s
	rr.layout.stream(rr.r.ID(), s, k)
	return s, nil
}

// syncAll synchronizes every stream used, in order, joining their errors.
func (rr *rankRun) syncAll(what string) error {
	keys := make([]int, 0, len(rr.streams))
	for k := range rr.streams {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var errs []error
	for _, k := range keys {
		if err := rr.dev.Synchronize(rr.streams[k]); err != nil {
			errs = append(errs, fmt.Errorf("stream %d: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// hostBarrier waits for every rank through the Store.
func (rr *rankRun) hostBarrier() error {
	rr.barrier++
	prefix := fmt.Sprintf("ptxcheck/barrier/%d/", rr.barrier)
	st := rr.r.Store()
	if err := st.Set(prefix+fmt.Sprint(rr.r.ID()), []byte{1}); err != nil {
		return err
	}
	keys := make([]string, rr.world)
	for i := range keys {
		keys[i] = prefix + fmt.Sprint(i)
	}
	return st.Wait(keys, rr.r.Timeout())
}

// launch packs the parameters and enqueues the launch.
func (rr *rankRun) launch(l *cLaunch) error {
	grid, err := l.grid.evalInt(rr.loc)
	if err != nil {
		return harness(fmt.Errorf("grid: %w", err))
	}
	block, err := l.block.evalInt(rr.loc)
	if err != nil {
		return harness(fmt.Errorf("block: %w", err))
	}
	shared, err := l.shared.evalInt(rr.loc)
	if err != nil {
		return harness(fmt.Errorf("shared: %w", err))
	}
	params := make([]byte, l.sig.Size)
	for i, p := range l.params {
		d := l.sig.Params[i]
		if err := rr.pack(p, params[d.Offset:d.Offset+d.Size()]); err != nil {
			return harness(fmt.Errorf("parameter %d (%s): %w", i, d.Name, err))
		}
	}
	s, err := rr.stream(l.stream)
	if err != nil {
		return err
	}
	launcher, ok := rr.dev.(sim.PTXLauncher)
	if !ok {
		return fmt.Errorf("device %d cannot launch PTX", rr.r.ID())
	}
	ran := fmt.Sprintf("%s: grid %d x block %d", l.sig.Entry, grid, block)
	g, b := capped(int(grid), int(block), rr.caps)
	if g != int(grid) || b != int(block) {
		ran += fmt.Sprintf(" (ran %d x %d: capped)", g, b)
	}
	if res, err := rr.c.src.Module.Resources(l.sig.Entry); err == nil {
		if r, err := rr.c.occupancy.Resident(res, int(block), int(shared)); err == nil && r.Blocks < g {
			ran += fmt.Sprintf(", %d blocks resident at once (%s)", r.Blocks, r.Why())
		}
	}
	rr.shapes[ran] = true
	if rr.captured >= 0 {
		// Captured: it runs, and counts for the fault plan, at each
		// replay of its graph.
		rr.captured++
	} else if err := rr.faultLaunch(); err != nil {
		return err
	}
	if err := launcher.LaunchPTX(s, sim.PTXLaunch{Module: rr.c.src.Module, Entry: l.sig.Entry, Params: params,
		Grid: int(grid), Block: int(block), Shared: int(shared), Timeout: rr.c.timeout, Occupancy: rr.c.occupancy}); err != nil {
		return harness(err) // the launch's checks: its shape, its timeout, its block fitting on an SM
	}
	if rr.captured >= 0 {
		return nil
	}
	return rr.redeliver()
}

// capped is the shape a launch runs with under caps.
func capped(grid, block int, caps sim.Kernels) (int, int) {
	if caps.MaxBlocks > 0 {
		grid = min(grid, caps.MaxBlocks)
	}
	if caps.MaxThreads > 0 {
		block = min(block, caps.MaxThreads)
	}
	return grid, block
}

// pack writes parameter p into dst (its declared bytes, zeroed).
func (rr *rankRun) pack(p cParam, dst []byte) error {
	switch p.form {
	case "ptr":
		addr := rr.bufs[p.buf]
		if p.rank != nil {
			peer, err := p.rank.evalInt(rr.loc)
			if err != nil {
				return err
			}
			if peer < 0 || peer >= int64(rr.world) {
				return fmt.Errorf("rank %d out of range [0, %d)", peer, rr.world)
			}
			addr = rr.sym[p.buf].BufferPtrs()[peer]
		}
		if p.offset != nil {
			off, err := p.offset.evalInt(rr.loc)
			if err != nil {
				return err
			}
			addr = device.Ptr(int64(addr) + off)
		}
		binary.LittleEndian.PutUint64(dst, uint64(addr))
	case "ptrs":
		binary.LittleEndian.PutUint64(dst, uint64(rr.sym[p.buf].BufferPtrsDev()))
	case "ptrarray":
		ptrs := rr.sym[p.buf].BufferPtrs()
		if len(ptrs) > p.len {
			return fmt.Errorf("ptrarray of %d entries for a world of %d", p.len, len(ptrs))
		}
		for i, a := range ptrs {
			binary.LittleEndian.PutUint64(dst[8*i:], uint64(a))
		}
	case "struct":
		at := 0
		for _, f := range p.fields {
			at = alignUp(at, f.align)
			if err := rr.pack(f, dst[at:at+f.size]); err != nil {
				return err
			}
			at += f.size
		}
	default:
		v, err := p.value.eval(rr.loc)
		if err != nil {
			return err
		}
		return encode(p.form, v, dst)
	}
	return nil
}

// encode writes v as dtype into the front of dst.
func encode(dtype string, v float64, dst []byte) error {
	switch dtype {
	case "f64":
		binary.LittleEndian.PutUint64(dst, math.Float64bits(v))
		return nil
	case "f32":
		binary.LittleEndian.PutUint32(dst, math.Float32bits(float32(v)))
		return nil
	case "f16":
		binary.LittleEndian.PutUint16(dst, ptx.F32ToF16(float32(v)))
		return nil
	case "bf16":
		binary.LittleEndian.PutUint16(dst, ptx.F32ToBF16(float32(v)))
		return nil
	}
	if v != math.Trunc(v) || math.IsNaN(v) {
		return fmt.Errorf("%v is not an integer (%s)", v, dtype)
	}
	size := dtypeSizes[dtype]
	// [lo, end): end itself is out, and exact where end-1 would round
	// to it (2^64-1 is no float64).
	lo, end := 0.0, math.Ldexp(1, 8*size)
	if dtype[0] == 's' {
		lo, end = -math.Ldexp(1, 8*size-1), math.Ldexp(1, 8*size-1)
	}
	if v < lo || v >= end {
		return fmt.Errorf("%v out of the range of %s", v, dtype)
	}
	var u uint64
	if v < 0 {
		u = uint64(int64(v))
	} else {
		u = uint64(v)
	}
	for i := 0; i < size; i++ {
		dst[i] = byte(u >> (8 * i))
	}
	return nil
}

// decode reads a dtype value.
func decode(dtype string, b []byte) float64 {
	switch dtype {
	case "f64":
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case "f32":
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case "f16":
		return float64(ptx.F16ToF32(binary.LittleEndian.Uint16(b)))
	case "bf16":
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
	}
	size := dtypeSizes[dtype]
	var u uint64
	for i := 0; i < size; i++ {
		u |= uint64(b[i]) << (8 * i)
	}
	if dtype[0] == 's' {
		shift := 64 - 8*size
		return float64(int64(u<<shift) >> shift)
	}
	return float64(u)
}

// roundTo is v as dtype holds it.
func roundTo(dtype string, v float64) float64 {
	b := make([]byte, 8)
	if encode(dtype, v, b) != nil {
		return v
	}
	return decode(dtype, b)
}

// agree compares a value read with the expected one.
func agree(dtype string, got, want, tol float64) bool {
	if dtype[0] != 'f' && dtype[0] != 'b' {
		return got == want
	}
	want = roundTo(dtype, want)
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	if got == want {
		return true
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

// harnessError marks an error as the harness's own: an expression that
// does not evaluate, or a value out of its range (a buffer's size, a
// fill's span, a repeat count, a launch's shape or parameter). The
// kernel's schedule and faults have no part in it.
type harnessError struct{ err error }

func (e *harnessError) Error() string { return e.err.Error() }
func (e *harnessError) Unwrap() error { return e.err }

// harness marks err as the harness's (nil stays nil).
func harness(err error) error {
	if err == nil {
		return nil
	}
	return &harnessError{err}
}

// HarnessError is a mistake of the harness that a rank met while it ran
// it (see [RunProgram]): not a finding about the kernel.
type HarnessError struct {
	World int   // the world size of the run that met it
	Err   error // the rank's error: "rank R: step S (...): ..."
}

func (e *HarnessError) Error() string {
	return fmt.Sprintf("harness, in a world of %d: %v", e.World, e.Err)
}

func (e *HarnessError) Unwrap() error { return e.Err }
