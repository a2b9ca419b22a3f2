package fuzz

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank/ipc"
	"github.com/symmem/symmem/signal"
	"github.com/symmem/symmem/simjob"
)

// ErrInjected is wrapped by the errors of injected Store failures.
var ErrInjected = errors.New("injected fault")

// corruptValue is what signal-corrupt writes: no signal operation writes it.
const corruptValue = 0xbad5a1d

// injector carries out one case's plan. It hooks the job at four places:
// the strategy (crashes), each rank's device (delays, signal writes), each
// rank's Store client, and the IPC network. All of it runs under the
// scheduler, one task at a time, so it needs no locks.
type injector struct {
	plan  Plan
	fired []bool
	order []Fault // faults in the order they fired
	world int

	sched *actor.Scheduler
	pids  map[int]int // pid -> rank

	devOps   []int64
	launches []int64
	requests []int64
	messages []int64
	crashed  []bool
	// ownStreams are the streams the injector itself uses, whose workers
	// a crash of their device's rank must not stop.
	ownStreams map[ownStream]bool
	ownGen     int // how many times ownStreams grew
}

// ownStream is a stream of the injector: device and stream.
type ownStream struct {
	device int
	stream uint64
}

func newInjector(plan Plan, world int) *injector {
	return &injector{
		plan: plan, fired: make([]bool, len(plan)), world: world,
		devOps: make([]int64, world), launches: make([]int64, world),
		requests: make([]int64, world), messages: make([]int64, world),
		crashed: make([]bool, world), ownStreams: map[ownStream]bool{},
	}
}

// fire marks fault i fired and records it in the trace.
func (in *injector) fire(i int, detail string) {
	in.fired[i] = true
	in.order = append(in.order, in.plan[i])
	msg := in.plan[i].String()
	if detail != "" {
		msg += ": " + detail
	}
	in.sched.Record("fault", msg)
}

// due returns the index of an unfired fault of one of kinds for rank r at
// count n, or -1.
func (in *injector) due(r int, n int64, kinds ...Kind) int {
	for i, f := range in.plan {
		if !in.fired[i] && f.Rank == r && f.At == n {
			for _, k := range kinds {
				if f.Kind == k {
					return i
				}
			}
		}
	}
	return -1
}

// setup is the job's Setup hook.
func (in *injector) setup(job simjob.Job) error {
	in.sched = job.Scheduler
	in.pids = map[int]int{}
	for r := range in.world {
		in.pids[job.World.PID(r)] = r
	}
	job.Network.SetFaults(in.message)
	return nil
}

// crashes wraps the outermost strategy with the crash faults, when the
// plan has any.
func (in *injector) crashes(inner actor.Strategy) actor.Strategy {
	for _, f := range in.plan {
		if f.Kind == Crash {
			return &crashStrategy{in: in, inner: inner}
		}
	}
	return inner
}

// crashStrategy halts a rank at its crash step and hides halted tasks from
// the strategy it wraps.
type crashStrategy struct {
	in    *injector
	inner actor.Strategy
	live  []*actor.Task
	index []int
}

func (c *crashStrategy) Next(step int64, runnable []*actor.Task) int {
	in := c.in
	crashed := false
	for i, f := range in.plan {
		if f.Kind == Crash && !in.fired[i] && step >= f.At && !in.crashed[f.Rank] {
			in.crash(i)
			crashed = true
		}
	}
	if !crashed {
		return c.inner.Next(step, runnable) // the scheduler shows no halted task
	}
	c.live, c.index = c.live[:0], c.index[:0]
	for i, t := range runnable {
		if !t.Halted() {
			c.live = append(c.live, t)
			c.index = append(c.index, i)
		}
	}
	if len(c.live) == 0 {
		return 0 // every choice is halted: the scheduler asks again
	}
	return c.index[c.inner.Next(step, c.live)]
}

// ownShare is the chance that a runnable injector task runs at a step: the
// injector's tasks get their share of steps whatever the strategy (PCT
// could otherwise starve them until the collective is over), at random
// points.
const ownShare = 4

// promptly wraps a seeded strategy so that the injector's own tasks (signal
// writes and their stream workers) run, when runnable, with probability
// 1/ownShare at each step. Its choices are recorded like the strategy's, so
// a replay of them needs no such wrapper.
func (in *injector) promptly(inner actor.Strategy, seed uint64) actor.Strategy {
	for _, f := range in.plan {
		if f.Kind.isSignal() {
			return &promptStrategy{in: in, inner: inner, rng: rand.New(rand.NewPCG(seed, 0x5106a1)), seen: -1}
		}
	}
	return inner
}

type promptStrategy struct {
	in    *injector
	inner actor.Strategy
	rng   *rand.Rand

	// The tasks seen so far (every one whose ID is at most seen): the
	// fault and stream tasks among them, and the injector's own, all in
	// ID order; own is rebuilt when the injector's streams change (gen).
	seen           int
	faults, stream []*actor.Task
	own            []*actor.Task
	gen            int
}

func (p *promptStrategy) Next(step int64, runnable []*actor.Task) int {
	if i := p.firstOwn(runnable); i >= 0 && p.rng.IntN(ownShare) == 0 {
		return i
	}
	return p.inner.Next(step, runnable)
}

// firstOwn is the index of the first of the injector's tasks in runnable
// (which is in ID order), or -1. It sorts the tasks it has not seen yet
// ([actor.Unseen]) as it first sees them.
func (p *promptStrategy) firstOwn(runnable []*actor.Task) int {
	unseen := actor.Unseen(runnable, p.seen)
	for _, t := range unseen {
		switch t.Label().Kind {
		case actor.FaultTask:
			p.faults = append(p.faults, t)
		case actor.StreamTask:
			p.stream = append(p.stream, t)
		default:
			continue
		}
		if p.in.ownLabel(t.Label()) && p.gen == p.in.ownGen {
			p.own = append(p.own, t)
		}
	}
	if len(unseen) > 0 {
		p.seen = unseen[len(unseen)-1].ID()
	}
	if p.gen != p.in.ownGen {
		p.gen = p.in.ownGen
		p.own = p.own[:0]
		for _, t := range slices.Concat(p.faults, p.stream) {
			if p.in.ownLabel(t.Label()) {
				p.own = append(p.own, t)
			}
		}
		slices.SortFunc(p.own, func(a, b *actor.Task) int { return cmp.Compare(a.ID(), b.ID()) })
	}
	for _, t := range p.own {
		if j, ok := actor.IndexOf(runnable, t.ID()); ok {
			return j
		}
	}
	return -1
}

// addOwnStream makes stream st of device dev one of the injector's.
func (in *injector) addOwnStream(dev int, st device.Stream) {
	in.ownStreams[ownStream{dev, uint64(st)}] = true
	in.ownGen++
}

// ownLabel reports whether the task labelled l is one of the injector's:
// a fault task or the worker of one of its streams.
func (in *injector) ownLabel(l actor.Label) bool {
	return l.Kind == actor.FaultTask || (l.Kind == actor.StreamTask && in.ownStreams[ownStream{l.Device, l.Stream}])
}

// crash stops the program and device tasks of the rank of fault i (its
// device is the one of the same ordinal).
func (in *injector) crash(i int) {
	r := in.plan[i].Rank
	in.crashed[r] = true
	n := in.sched.Halt(fmt.Sprintf("rank %d crashed", r), func(t *actor.Task) bool {
		l := t.Label()
		return (l.Kind == actor.ProgramTask && l.Rank == r) || (l.OnDevice(r) && !in.ownLabel(l))
	})
	in.fire(i, fmt.Sprintf("%d tasks stopped", n))
}

// message is the IPC network's fault hook.
func (in *injector) message(m ipc.SimMessage) ipc.SimFault {
	r, ok := in.pids[m.From]
	if !ok {
		return ipc.Deliver
	}
	n := in.messages[r]
	in.messages[r]++
	i := in.due(r, n, IPCLose, FDLose, FDWrong)
	if i < 0 {
		return ipc.Deliver
	}
	in.fire(i, fmt.Sprintf("message from pid %d to pid %d", m.From, m.To))
	switch in.plan[i].Kind {
	case IPCLose:
		return ipc.LoseMessage
	case FDLose:
		return ipc.LoseFD
	}
	return ipc.WrongFD
}

// wrapDevice is the job's WrapDevice hook.
func (in *injector) wrapDevice(r int, d device.Device) device.Device {
	return &faultDevice{Device: d, in: in, rank: r}
}

// faultDevice counts a rank's stream operations, delaying one or starting
// a signal write after a launch when the plan says so.
type faultDevice struct {
	device.Device
	in   *injector
	rank int
}

// op counts one stream operation and sleeps first if a delay is due.
func (d *faultDevice) op(name string) {
	in := d.in
	n := in.devOps[d.rank]
	in.devOps[d.rank]++
	if i := in.due(d.rank, n, Delay); i >= 0 {
		in.fire(i, "before "+name)
		in.sched.Sleep(in.plan[i].For)
	}
}

func (d *faultDevice) Memset(s device.Stream, dst device.Ptr, v byte, n uint64) error {
	d.op("memset")
	return d.Device.Memset(s, dst, v, n)
}

func (d *faultDevice) Copy(s device.Stream, dst, src device.Ptr, n uint64) error {
	d.op("copy")
	return d.Device.Copy(s, dst, src, n)
}

func (d *faultDevice) Write(s device.Stream, dst device.Ptr, src []byte) error {
	d.op("write")
	return d.Device.Write(s, dst, src)
}

func (d *faultDevice) Read(s device.Stream, dst []byte, src device.Ptr) error {
	d.op("read")
	return d.Device.Read(s, dst, src)
}

func (d *faultDevice) Synchronize(s device.Stream) error {
	d.op("synchronize")
	return d.Device.Synchronize(s)
}

func (d *faultDevice) Launch(s device.Stream, l device.Launch) error {
	d.op("launch " + l.Kernel)
	in := d.in
	n := in.launches[d.rank]
	in.launches[d.rank]++
	i := in.due(d.rank, n, SignalLose, SignalCorrupt, SignalDup)
	if i < 0 {
		return d.Device.Launch(s, l)
	}
	// Resolve the slot before the kernel starts, while its pad pointers are
	// certainly in place; the write itself comes later, from a task of its
	// own, at a point the strategy picks.
	addr, detail, err := d.slot(i, l)
	if err != nil {
		in.sched.Record("fault", fmt.Sprintf("%v: not injected: %v", in.plan[i], err))
		return d.Device.Launch(s, l)
	}
	st, err := d.Device.NewStream()
	if err != nil {
		in.sched.Record("fault", fmt.Sprintf("%v: not injected: %v", in.plan[i], err))
		return d.Device.Launch(s, l)
	}
	in.addOwnStream(d.rank, st)
	if err := d.Device.Launch(s, l); err != nil {
		_ = d.Device.DestroyStream(st)
		return err
	}
	in.sched.GoLabeled(actor.Label{Kind: actor.FaultTask, Name: fmt.Sprintf("fault %s rank %d", in.plan[i].Kind, d.rank), Rank: d.rank}, func() {
		d.writeSlot(i, st, addr, detail)
	})
	return nil
}

// slot picks the pad slot signal fault i writes for launch l: one the
// kernel uses (pad p, a channel below the grid size, a source other than
// p), as mapped on this rank's device.
func (d *faultDevice) slot(i int, l device.Launch) (device.Ptr, string, error) {
	k, ok := kernels.Lookup(l.Kernel)
	if !ok {
		return 0, "", fmt.Errorf("unknown kernel %q", l.Kernel)
	}
	pads, err := k.Pads(l.Args)
	if err != nil {
		return 0, "", err
	}
	padArray, world := pads.Ptrs, pads.World
	if world < 2 {
		return 0, "", fmt.Errorf("kernel %s runs on %d rank: no peer slots", l.Kernel, world)
	}
	st, err := d.Device.NewStream()
	if err != nil {
		return 0, "", err
	}
	d.in.addOwnStream(d.rank, st)
	defer func() { _ = d.Device.DestroyStream(st) }()
	raw := make([]byte, 8*world)
	if err := d.Device.Read(st, raw, padArray); err != nil {
		return 0, "", err
	}
	f := d.in.plan[i]
	pad, channel, src := f.Pad%world, f.Channel%max(l.Blocks, 1), f.Src%world
	if src == pad {
		src = (src + 1) % world
	}
	addr := device.Ptr(binary.LittleEndian.Uint64(raw[8*pad:])).Add(signal.SlotOffset(channel, world, src))
	return addr, fmt.Sprintf("pad of rank %d channel %d slot of rank %d", pad, channel, src), nil
}

// writeSlot is the task of a signal fault: after the planned number of
// its own scheduling points it writes the slot through a stream of its
// own, as a stray write from elsewhere would land.
func (d *faultDevice) writeSlot(i int, st device.Stream, addr device.Ptr, where string) {
	in, f := d.in, d.in.plan[i]
	defer func() { _ = d.Device.DestroyStream(st) }()
	for range f.After {
		in.sched.Yield("fault: before the signal write")
	}
	var v uint32
	switch f.Kind {
	case SignalCorrupt:
		v = corruptValue
	case SignalDup:
		v = signal.Raised
	default:
		v = signal.Idle
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	if err := d.Device.Write(st, addr, b[:]); err != nil {
		in.sched.Record("fault", fmt.Sprintf("%v: not injected: %v", f, err))
		return
	}
	in.fire(i, fmt.Sprintf("wrote %#x into the %s", v, where))
}

// wrapStore is the job's WrapStore hook.
func (in *injector) wrapStore(r int, c store.Client) store.Client {
	return &faultStore{c: c, in: in, rank: r}
}

// faultStore counts a rank's Store requests, delaying or failing one when
// the plan says so.
type faultStore struct {
	c    store.Client
	in   *injector
	rank int
}

// request counts one request; it returns an error for a failure that is due.
func (s *faultStore) request(op string, keys ...string) error {
	in := s.in
	n := in.requests[s.rank]
	in.requests[s.rank]++
	i := in.due(s.rank, n, StoreSlow, StoreFail)
	if i < 0 {
		return nil
	}
	in.fire(i, fmt.Sprintf("%s %v", op, keys))
	if in.plan[i].Kind == StoreFail {
		return fmt.Errorf("store %s %v (rank %d request %d): %w: the store did not answer", op, keys, s.rank, n, ErrInjected)
	}
	in.sched.Sleep(in.plan[i].For)
	return nil
}

func (s *faultStore) Set(key string, value []byte) error {
	if err := s.request("set", key); err != nil {
		return err
	}
	return s.c.Set(key, value)
}

func (s *faultStore) Get(key string) ([]byte, error) {
	if err := s.request("get", key); err != nil {
		return nil, err
	}
	return s.c.Get(key)
}

func (s *faultStore) Wait(keys []string, timeout time.Duration) error {
	if err := s.request("wait", keys...); err != nil {
		return err
	}
	return s.c.Wait(keys, timeout)
}

func (s *faultStore) Add(key string, delta int64) (int64, error) {
	if err := s.request("add", key); err != nil {
		return 0, err
	}
	return s.c.Add(key, delta)
}

func (s *faultStore) CompareSet(key string, expected, desired []byte) ([]byte, error) {
	if err := s.request("compare_set", key); err != nil {
		return nil, err
	}
	return s.c.CompareSet(key, expected, desired)
}

func (s *faultStore) Check(keys []string) (bool, error) {
	if err := s.request("check", keys...); err != nil {
		return false, err
	}
	return s.c.Check(keys)
}

func (s *faultStore) Delete(key string) (bool, error) {
	if err := s.request("delete", key); err != nil {
		return false, err
	}
	return s.c.Delete(key)
}

func (s *faultStore) NumKeys() (int, error) {
	if err := s.request("num_keys"); err != nil {
		return 0, err
	}
	return s.c.NumKeys()
}

// NextSequence keeps the wrapped client's sequence counters, so exchanges
// over the wrapper number their rounds as over the client itself.
func (s *faultStore) NextSequence(scope string) uint64 { return s.c.NextSequence(scope) }
