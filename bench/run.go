package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

// Impl is how reports name this project's implementation.
const Impl = "symmem"

// TimerOf is the timer a run reports: the host clock on the simulator,
// whose device clock does not advance while kernels run, device events
// elsewhere.
func TimerOf(simulated bool) string {
	if simulated {
		return TimerHost
	}
	return TimerDevice
}

// barrierChannel is the signal channel of the barrier before each case's
// timed loops. Collectives leave every pad slot at rest when they return,
// so sharing channel 0 with their first block is safe.
const barrierChannel = 0

// Program returns the rank program that runs plan p: see [Run].
func Program(p Plan, emit func(Row)) rank.Program {
	return func(r *rank.Rank) error { return Run(r, p, emit) }
}

// Run times every case of p on rank r; every rank of the job must run it.
// For each case it fills the rank's symmetric buffer (allocated once, for
// the largest size) with seeded inputs, calls the collective p.Warmup
// times, meets the other ranks at a device barrier, and times p.Loops
// loops of p.Iters calls with device events on the rank's stream and with
// the host clock. With p.Check it then refills the inputs, runs once more
// and counts the elements that differ bitwise from oracle.AllReduce. The
// ranks then gather their figures through the Store, and rank 0 passes the
// case's row to emit (which may be nil).
//
// Two-shot reduces in place, so repeated calls grow the values (to
// infinity, eventually) as they do in the reference scripts' loops; the
// check always runs on fresh inputs. One-shot writes into a plain output
// tensor allocated once, as OneShotAllReduceOut does.
func Run(r *rank.Rank, p Plan, emit func(Row)) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.MaxBlocks < 0 {
		return fmt.Errorf("bench plan: max blocks %d is negative", p.MaxBlocks)
	}
	defer r.SetMaxBlocks(0)
	r.SetMaxBlocks(p.MaxBlocks)
	m, err := newMeter(r, p)
	if err != nil {
		return fmt.Errorf("rank %d: bench set-up: %w", r.ID(), err)
	}
	defer m.close()
	for _, c := range p.Cases() {
		st, err := m.measure(c)
		if err != nil {
			return fmt.Errorf("rank %d: bench %s %v %v %s: %w", r.ID(), FormatSize(c.Bytes), c.DType, c.Op, c.AlgoName(r.World()), err)
		}
		all, err := m.ex.AllGather(st.encode())
		if err != nil {
			return fmt.Errorf("rank %d: bench %s %v %v %s: gather figures: %w", r.ID(), FormatSize(c.Bytes), c.DType, c.Op, c.AlgoName(r.World()), err)
		}
		if r.ID() != 0 || emit == nil {
			continue
		}
		stats := make([]stat, len(all))
		for i, b := range all {
			if stats[i], err = decodeStat(b); err != nil {
				return fmt.Errorf("rank 0: bench: figures of rank %d: %w", i, err)
			}
		}
		row := makeRow(c, r.World(), m.timer, stats)
		if p.Graph {
			row.Algo += "+graph"
		}
		emit(row)
	}
	return nil
}

// meter holds what one rank reuses across cases.
type meter struct {
	r          *rank.Rank
	p          Plan
	dev        device.Device
	ex         *store.Exchange
	h          *rank.SymmetricMemory
	ll         *rank.LowLatency // nil unless the plan times the low-latency algorithm
	buf        device.Ptr
	out        rank.Tensor
	start, end device.Event
	events     int // how many of start, end exist
	timer      string
}

func newMeter(r *rank.Rank, p Plan) (*meter, error) {
	all := make([]int, r.World())
	for i := range all {
		all[i] = i
	}
	m := &meter{r: r, p: p, dev: r.Device(), timer: TimerOf(r.Runtime().Simulated())}
	var err error
	if m.ex, err = store.NewExchange(r.Store(), "bench", store.Group{Name: "bench", Ranks: all}, r.ID()); err != nil {
		return nil, err
	}
	largest := p.MaxSize()
	if m.buf, err = r.Alloc(largest); err != nil {
		return nil, err
	}
	if m.out, err = r.Empty((largest+3)/4, device.Float32); err != nil {
		m.close()
		return nil, err
	}
	if m.h, err = r.Rendezvous(m.buf, rank.WorldGroup); err != nil {
		m.close()
		return nil, err
	}
	if slices.ContainsFunc(p.Cases(), func(c Case) bool { return c.Ran(r.World()) == workload.LowLatency }) {
		if m.ll, err = r.NewLowLatency(rank.WorldGroup, min(roundUp4(largest), rank.LowLatencyMaxBytes)); err != nil {
			m.close()
			return nil, err
		}
	}
	for _, e := range []*device.Event{&m.start, &m.end} {
		if *e, err = m.dev.NewEvent(); err != nil {
			m.close()
			return nil, fmt.Errorf("new event: %w", err)
		}
		m.events++
	}
	return m, nil
}

// roundUp4 rounds n up to a multiple of 4.
func roundUp4(n uint64) uint64 { return (n + 3) &^ 3 }

func (m *meter) close() {
	if m.ll != nil {
		_ = m.ll.Close()
	}
	for _, e := range []device.Event{m.start, m.end}[:m.events] {
		_ = m.dev.DestroyEvent(e)
	}
	if m.out.Ptr != 0 {
		_ = m.r.FreeTensor(m.out)
	}
	if m.buf != 0 {
		_ = m.r.Free(m.buf)
	}
}

// stat is one rank's figures for one case, in microseconds per call.
type stat struct {
	device, host float64 // medians over the timed loops
	min, max     float64 // of the report's timer, over the loops
	wrong        int64   // -1: not checked
}

const statBytes = 5 * 8

func (s stat) encode() []byte {
	b := make([]byte, 0, statBytes)
	for _, x := range []float64{s.device, s.host, s.min, s.max} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return binary.LittleEndian.AppendUint64(b, uint64(s.wrong))
}

func decodeStat(b []byte) (stat, error) {
	if len(b) != statBytes {
		return stat{}, fmt.Errorf("%d bytes, want %d", len(b), statBytes)
	}
	f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])) }
	return stat{device: f(0), host: f(1), min: f(2), max: f(3), wrong: int64(binary.LittleEndian.Uint64(b[32:]))}, nil
}

// measure times case c on this rank and checks it.
func (m *meter) measure(c Case) (stat, error) {
	r, p := m.r, m.p
	in := rank.Tensor{Ptr: m.buf, DType: c.DType, Numel: c.Numel()}
	out := rank.Tensor{Ptr: m.out.Ptr, DType: c.DType, Numel: c.Numel()}
	ran := c.Ran(r.World())
	call := func() error {
		switch ran {
		case workload.OneShot:
			return r.OneShotAllReduceOut(in, c.Op, rank.WorldGroup, out)
		case workload.LowLatency:
			return m.ll.AllReduce(in, c.Op, out)
		}
		return r.TwoShotAllReduce(in, c.Op, rank.WorldGroup)
	}
	if err := fill(r, in, p.Seed); err != nil {
		return stat{}, err
	}
	defer r.SetAsync(r.Async())
	r.SetAsync(!p.Sync)
	for range p.Warmup {
		if err := call(); err != nil {
			return stat{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	if err := r.Synchronize(); err != nil {
		return stat{}, fmt.Errorf("warm-up: %w", err)
	}
	if err := m.h.Barrier(barrierChannel, r.Timeout()); err != nil {
		return stat{}, fmt.Errorf("barrier before timing: %w", err)
	}
	loop := func() error {
		for range p.Iters {
			if err := call(); err != nil {
				return err
			}
		}
		return nil
	}
	if p.Graph {
		g, err := r.Capture(loop)
		if err != nil {
			return stat{}, err
		}
		defer g.Close()
		loop = g.Replay
		if err := loop(); err != nil { // the graph's own warm-up
			return stat{}, fmt.Errorf("graph warm-up: %w", err)
		}
		if err := r.Synchronize(); err != nil {
			return stat{}, fmt.Errorf("graph warm-up: %w", err)
		}
	}
	devs, hosts := make([]float64, p.Loops), make([]float64, p.Loops)
	stream := r.Stream()
	for l := range p.Loops {
		if err := m.dev.RecordEvent(m.start, stream); err != nil {
			return stat{}, fmt.Errorf("record start event: %w", err)
		}
		t0 := time.Now()
		if err := loop(); err != nil {
			return stat{}, err
		}
		if err := m.dev.RecordEvent(m.end, stream); err != nil {
			return stat{}, fmt.Errorf("record end event: %w", err)
		}
		if err := m.dev.Synchronize(stream); err != nil {
			return stat{}, fmt.Errorf("synchronize after timed loop: %w", err)
		}
		host := time.Since(t0)
		d, err := m.dev.Elapsed(m.start, m.end)
		if err != nil {
			return stat{}, fmt.Errorf("elapsed: %w", err)
		}
		devs[l], hosts[l] = Micros(d)/float64(p.Iters), Micros(host)/float64(p.Iters)
	}
	primary := devs
	if m.timer == TimerHost {
		primary = hosts
	}
	st := stat{device: Median(devs), host: Median(hosts), min: minOf(primary), max: maxOf(primary), wrong: -1}
	if !p.Check {
		return st, nil
	}
	r.SetAsync(false)
	if err := fill(r, in, p.Seed); err != nil {
		return stat{}, err
	}
	checked := call
	if p.Graph {
		g, err := r.Capture(call)
		if err != nil {
			return stat{}, fmt.Errorf("checked run: %w", err)
		}
		defer g.Close()
		checked = g.Replay
	}
	if err := checked(); err != nil {
		return stat{}, fmt.Errorf("checked run: %w", err)
	}
	result := out
	if ran == workload.TwoShot {
		result = in
	}
	wrong, err := checkResult(r, result, c.Op, p.Seed)
	if err != nil {
		return stat{}, fmt.Errorf("check: %w", err)
	}
	st.wrong = wrong
	return st, nil
}

// makeRow combines every rank's figures for c: times averaged over ranks,
// the extremes over ranks, wrong elements summed.
func makeRow(c Case, world int, timer string, stats []stat) Row {
	row := Row{
		Impl: Impl, Algo: c.AlgoName(world), DType: c.DType.String(), Op: c.Op.String(),
		World: world, Bytes: c.Bytes, Count: c.Numel(), MinUs: math.Inf(1),
	}
	var devs, hosts []float64
	for _, s := range stats {
		devs, hosts = append(devs, s.device), append(hosts, s.host)
		row.MinUs, row.MaxUs = math.Min(row.MinUs, s.min), math.Max(row.MaxUs, s.max)
		if s.wrong < 0 || row.Wrong < 0 {
			row.Wrong = -1
		} else {
			row.Wrong += s.wrong
		}
	}
	if len(stats) == 0 {
		row.MinUs = 0
	}
	row.DeviceUs, row.HostUs = Mean(devs), Mean(hosts)
	row.TimeUs = row.DeviceUs
	if timer == TimerHost {
		row.TimeUs = row.HostUs
	}
	row.AlgBW, row.BusBW = AlgBW(c.Bytes, row.TimeUs), BusBW(c.Bytes, row.TimeUs, world)
	return row
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	if len(xs) == 0 {
		return 0
	}
	return m
}
