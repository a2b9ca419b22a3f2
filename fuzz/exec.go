package fuzz

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/signal"
)

// RankVerdict is what one rank's program observed: how many results it
// checked, and the first wrong one.
type RankVerdict struct {
	Checked int    // results checked and found right
	Wrong   string // the first wrong result ("" when none)
}

// guardBytes of sentinel surround an in-place tensor: a kernel that writes
// outside its tensor overwrites them.
const guardBytes = 16

// guardByte is the sentinel.
const guardByte = 0xA5

// executor runs a program on one rank.
type executor struct {
	p       Program
	d       *data
	r       *rank.Rank
	v       *RankVerdict
	bufs    []device.Ptr
	ll      map[int]*rank.LowLatency // by group
	llBytes map[int]uint64           // the largest ll tensor of each group
	inc     *rank.IntraNodeComm
}

// program returns the rank program that runs p with inputs seeded by seed,
// recording each rank's verdict in verdicts.
func (p Program) program(seed uint64, verdicts []RankVerdict) rank.Program {
	llBytes := map[int]uint64{}
	for _, s := range p.Steps {
		for _, c := range s.Colls {
			if c.Form == LL {
				llBytes[c.Group] = max(llBytes[c.Group], c.Bytes)
			}
		}
	}
	d := newData(seed)
	return func(r *rank.Rank) error {
		e := &executor{p: p, d: d, r: r, v: &verdicts[r.ID()], ll: map[int]*rank.LowLatency{}, llBytes: llBytes}
		err := e.run()
		return errors.Join(err, e.close())
	}
}

func (e *executor) run() error {
	r := e.r
	for g, ms := range e.p.Groups[1:] {
		if slices.Contains(ms, r.ID()) {
			if err := r.NewGroup(groupName(g+1), ms); err != nil {
				return err
			}
		}
	}
	e.bufs = make([]device.Ptr, len(e.p.Bufs))
	for i, n := range e.p.Bufs {
		var err error
		if e.bufs[i], err = r.Alloc(n); err != nil {
			return err
		}
	}
	for i, s := range e.p.Steps {
		if !slices.Contains(e.p.members(s), r.ID()) {
			continue
		}
		if err := e.step(i, s); err != nil {
			return fmt.Errorf("step %d (%s): %w", i, s, err)
		}
	}
	return nil
}

// close releases what the program holds; the job frees the rest.
func (e *executor) close() error {
	var errs []error
	for _, g := range slices.Sorted(maps.Keys(e.ll)) {
		errs = append(errs, e.ll[g].Close())
	}
	if e.inc != nil {
		errs = append(errs, e.inc.Close())
	}
	return errors.Join(errs...)
}

func (e *executor) inGroup(g int) bool { return slices.Contains(e.p.Groups[g], e.r.ID()) }

// wrong records a wrong result and returns it as the rank's error.
func (e *executor) wrong(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if e.v.Wrong == "" {
		e.v.Wrong = msg
	}
	return fmt.Errorf("wrong result: %s", msg)
}

func (e *executor) step(i int, s Step) error {
	switch s.Kind {
	case StepRealloc:
		return e.realloc(s.Buf)
	case StepBarrier, StepSignal:
		return e.signals(i, s)
	case StepTimeout:
		return e.lonelyWait(i, s)
	}
	var calls []*call
	for idx, c := range s.Colls {
		if !e.inGroup(c.Group) {
			continue
		}
		k, err := e.prepare(c)
		if k != nil {
			k.idx = idx
			calls = append(calls, k)
		}
		if err != nil {
			return err
		}
	}
	defer func() {
		for _, c := range calls {
			c.free(e.r)
		}
	}()
	switch s.Kind {
	case StepColl:
		for _, c := range calls {
			if err := e.write(c, e.inputOf(e.r.ID(), i, c.idx, 0, c.c)); err != nil {
				return err
			}
			if err := e.issue(c); err != nil {
				return err
			}
			if err := e.check(c, i, 0); err != nil {
				return err
			}
		}
	case StepAsync:
		for _, c := range calls {
			if err := e.write(c, e.inputOf(e.r.ID(), i, c.idx, 0, c.c)); err != nil {
				return err
			}
		}
		e.r.SetAsync(true)
		for _, c := range calls {
			if err := e.issue(c); err != nil {
				e.r.SetAsync(false)
				return errors.Join(err, e.r.Synchronize())
			}
		}
		e.r.SetAsync(false)
		// Reads wait for the stream's earlier work; the kernels' failures
		// come with the synchronize, before any result is judged.
		for _, c := range calls {
			if err := e.read(c); err != nil {
				return errors.Join(err, e.r.Synchronize())
			}
		}
		if err := e.r.Synchronize(); err != nil {
			return err
		}
		for _, c := range calls {
			if err := e.judge(c, i, 0); err != nil {
				return err
			}
		}
	case StepCapture:
		g, err := e.r.Capture(func() error {
			for _, c := range calls {
				if err := e.issue(c); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		defer g.Close()
		for it := range s.Replays {
			for _, c := range calls {
				if err := e.write(c, e.inputOf(e.r.ID(), i, c.idx, it, c.c)); err != nil {
					return err
				}
			}
			if err := g.Replay(); err != nil {
				return err
			}
			for _, c := range calls {
				if err := e.check(c, i, it); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// call is one collective being run: its tensors.
type call struct {
	c     Coll
	idx   int         // its index in the step
	in    rank.Tensor // the tensor in the symmetric buffer (or the plain one of intra-node)
	span  rank.Tensor // in with its guards (bytes)
	lead  uint64      // guard bytes before in, inside span
	local rank.Tensor // one-shot-copy's plain input
	got   []byte      // the result read back
	// spanGot is the span read back, when guarded.
	spanGot []byte
	out     rank.Tensor // the output, when not in place
	ll      *rank.LowLatency
}

// guarded reports whether the call's kernel writes this rank's symmetric
// buffer (in place, a two-shot chunk, the copy form's input), so that
// guards around its tensor are written before and checked after.
func (c *call) guarded() bool {
	f := c.c.Form
	return c.span.Ptr != 0 && (f == TwoShot || f == TwoShotOut || f == OneShotCopy)
}

func (c *call) free(r *rank.Rank) {
	for _, t := range []rank.Tensor{c.local, c.out} {
		if t.Ptr != 0 {
			_ = r.FreeTensor(t)
		}
	}
	if c.c.Form == IntraNode && c.in.Ptr != 0 {
		_ = r.FreeTensor(c.in)
	}
}

// prepare makes a call's tensors, its group's rendezvous of the buffer
// and its instance (ll, intra-node), so that a capture records only
// collectives.
func (e *executor) prepare(c Coll) (*call, error) {
	r := e.r
	numel := c.Bytes / uint64(c.DType.Size())
	k := &call{c: c, in: rank.Tensor{Ptr: e.bufs[c.Buf].Add(c.Offset), DType: c.DType, Numel: numel}}
	lo := c.Offset - min(c.Offset, guardBytes)
	hi := min(c.Offset+c.Bytes+guardBytes, e.p.Bufs[c.Buf])
	k.lead = c.Offset - lo
	k.span = rank.Tensor{Ptr: e.bufs[c.Buf].Add(lo), DType: device.Float32, Numel: (hi - lo) / 4}
	if (hi-lo)%4 != 0 {
		k.span = rank.Tensor{}
	}
	var err error
	switch c.Form {
	case IntraNode:
		if e.inc == nil {
			inc := r.NewIntraNodeComm(rank.IntraNodeOptions{Enabled: true, AssumeFullyConnected: true})
			if !inc.Rendezvous() {
				return nil, fmt.Errorf("intra-node comm %s: rendezvous failed or refused", inc.Group())
			}
			e.inc = inc
		}
		k.in, err = r.Empty(numel, c.DType)
		return k, err
	case LL:
		if k.ll = e.ll[c.Group]; k.ll == nil {
			if k.ll, err = r.NewLowLatency(groupName(c.Group), e.llBytes[c.Group]); err != nil {
				return nil, err
			}
			e.ll[c.Group] = k.ll
		}
	case OneShotCopy:
		if k.local, err = r.Empty(numel, c.DType); err != nil {
			return nil, err
		}
	}
	if c.Form != TwoShot && c.Form != IntraNode && c.Form != OneShot {
		if k.out, err = r.Empty(numel, c.DType); err != nil {
			return nil, err
		}
	}
	if c.Form != LL {
		if _, err := r.Rendezvous(e.bufs[c.Buf], groupName(c.Group)); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// write writes a call's input (and, in place, its guards).
func (e *executor) write(k *call, input []byte) error {
	r := e.r
	switch {
	case k.c.Form == IntraNode:
		return r.Write(k.in, input)
	case k.guarded():
		b := bytes.Repeat([]byte{guardByte}, int(k.span.Bytes()))
		copy(b[k.lead:], input)
		if err := r.Write(k.span, b); err != nil {
			return err
		}
		if k.c.Form == OneShotCopy {
			return r.Write(k.local, input)
		}
		return nil
	case k.c.Form == OneShotCopy:
		return r.Write(k.local, input)
	}
	return r.Write(k.in, input)
}

// issue runs (or queues, or records) a call's collective.
func (e *executor) issue(k *call) error {
	r, c := e.r, k.c
	g := groupName(c.Group)
	switch c.Form {
	case OneShot:
		out, err := r.OneShotAllReduce(k.in, c.Op, g)
		if err == nil {
			k.out = out
		}
		return err
	case OneShotOut:
		return r.OneShotAllReduceOut(k.in, c.Op, g, k.out)
	case OneShotCopy:
		return r.OneShotAllReduceCopy(k.in, k.local, c.Op, g, k.out)
	case TwoShot:
		return r.TwoShotAllReduce(k.in, c.Op, g)
	case TwoShotOut:
		return r.TwoShotAllReduceOut(k.in, c.Op, g, k.out)
	case LL:
		return k.ll.AllReduce(k.in, c.Op, k.out)
	case IntraNode:
		algo := e.inc.SelectAlgo(k.in, c.Op)
		if algo == rank.AlgoNone {
			return fmt.Errorf("intra-node comm selects no algorithm for %v", k.in)
		}
		return e.inc.AllReduce(k.in, algo)
	}
	return fmt.Errorf("unknown form %v", c.Form)
}

// check reads a call's result and compares it bitwise with the reference.
func (e *executor) check(k *call, step, it int) error {
	if err := e.read(k); err != nil {
		return err
	}
	return e.judge(k, step, it)
}

// read copies a call's result (with its guards, in place) to the host, in
// stream order.
func (e *executor) read(k *call) error {
	r, c := e.r, k.c
	var err error
	if k.guarded() {
		if k.spanGot, err = r.Read(k.span); err != nil {
			return err
		}
	}
	switch c.Form {
	case TwoShot:
		if k.guarded() {
			k.got = k.spanGot[k.lead : k.lead+c.Bytes]
			return nil
		}
		k.got, err = r.Read(k.in)
	case IntraNode:
		k.got, err = r.Read(k.in)
	default:
		k.got, err = r.Read(k.out)
	}
	return err
}

// judge compares the result read with the reference, bitwise, and the
// guards with the sentinel.
func (e *executor) judge(k *call, step, it int) error {
	c, got := k.c, k.got
	if k.guarded() {
		if i, ok := overwrittenGuard(k.spanGot, k.lead, c.Bytes); ok {
			return e.wrong("step %d %s: guard byte %d bytes %s the tensor overwritten", step, c, distance(i, k.lead, c.Bytes), side(i, k.lead))
		}
	}
	want, err := e.reference(step, k.idx, it, c)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		at := 0
		for at < len(got) && got[at] == want[at] {
			at++
		}
		replay := ""
		if it > 0 {
			replay = fmt.Sprintf(" replay %d", it)
		}
		return e.wrong("step %d%s %s: element %d differs from the reference", step, replay, c, at/c.DType.Size())
	}
	e.v.Checked++
	return nil
}

// overwrittenGuard returns the index of the first byte of span, a tensor
// of n bytes at lead with its guards, that lies outside the tensor and
// differs from guardByte; ok is false when the guards are intact. Only the
// guards are read, not the tensor between them.
func overwrittenGuard(span []byte, lead, n uint64) (i uint64, ok bool) {
	for i := range lead {
		if span[i] != guardByte {
			return i, true
		}
	}
	for i := lead + n; i < uint64(len(span)); i++ {
		if span[i] != guardByte {
			return i, true
		}
	}
	return 0, false
}

func distance(i, lead, n uint64) uint64 {
	if i < lead {
		return lead - i
	}
	return i - lead - n + 1
}

func side(i, lead uint64) string {
	if i < lead {
		return "before"
	}
	return "after"
}

// dataKey names one collective call of a run: step, index in the step,
// replay.
type dataKey struct{ step, idx, it int }

// data holds the inputs and references of a run, which every rank's
// checks share: each is computed once. The ranks run one at a time; the
// lock only keeps the sharing obviously safe.
type data struct {
	seed   uint64
	mu     sync.Mutex
	inputs map[dataKey][][]byte // by member rank
	refs   map[dataKey][]byte
}

func newData(seed uint64) *data {
	return &data{seed: seed, inputs: map[dataKey][][]byte{}, refs: map[dataKey][]byte{}}
}

// inputOf is rank r's input to collective idx of a step in replay it.
func (e *executor) inputOf(r, step, idx, it int, c Coll) []byte {
	d := e.d
	k := dataKey{step, idx, it}
	d.mu.Lock()
	defer d.mu.Unlock()
	ins := d.inputs[k]
	if ins == nil {
		ins = make([][]byte, e.p.World)
		d.inputs[k] = ins
	}
	if ins[r] == nil {
		ins[r] = makeInput(d.seed, r, step, idx, it, c)
	}
	return ins[r]
}

// reference is the result every member must hold after collective idx of
// a step in replay it.
func (e *executor) reference(step, idx, it int, c Coll) ([]byte, error) {
	k := dataKey{step, idx, it}
	e.d.mu.Lock()
	want := e.d.refs[k]
	e.d.mu.Unlock()
	if want != nil {
		return want, nil
	}
	members := e.p.Groups[c.Group]
	inputs := make([][]byte, len(members))
	for j, m := range members {
		inputs[j] = e.inputOf(m, step, idx, it, c)
	}
	want, err := oracle.AllReduce(c.DType, c.Op, inputs)
	if err != nil {
		return nil, err
	}
	e.d.mu.Lock()
	e.d.refs[k] = want
	e.d.mu.Unlock()
	return want, nil
}

// realloc frees buffer b and allocates it again.
func (e *executor) realloc(b int) error {
	if err := e.r.Free(e.bufs[b]); err != nil {
		return err
	}
	var err error
	e.bufs[b], err = e.r.Alloc(e.p.Bufs[b])
	return err
}

// signals runs a barrier or signal step.
func (e *executor) signals(step int, s Step) error {
	r, reg := e.r, s.Region
	h, err := r.Rendezvous(e.bufs[reg.Buf], groupName(reg.Group))
	if err != nil {
		return err
	}
	members := e.p.Groups[reg.Group]
	n := len(members)
	pos := h.Rank()
	next, prev := (pos+1)%n, (pos+n-1)%n
	numel := reg.Bytes / 4
	probe := Coll{Bytes: reg.Bytes, DType: device.Float32, Op: device.Sum, Group: reg.Group, Buf: reg.Buf, Offset: reg.Offset}
	own := rank.Tensor{Ptr: e.bufs[reg.Buf].Add(reg.Offset), DType: device.Float32, Numel: numel}
	if err := r.Write(own, e.inputOf(r.ID(), step, 0, 0, probe)); err != nil {
		return err
	}
	channels := max(int(h.SignalPadSize()/uint64(4*n)), 2)
	ch := s.Channel % (channels - 1)
	timeout := r.Timeout()
	var from int
	if s.Kind == StepBarrier {
		if err := h.Barrier(ch, timeout); err != nil {
			return err
		}
		from = next
	} else {
		if err := h.PutSignal(next, ch, timeout); err != nil {
			return err
		}
		if err := h.WaitSignal(prev, ch, timeout); err != nil {
			return err
		}
		from = prev
	}
	peer, err := h.GetBuffer(from, numel, device.Float32, reg.Offset/4)
	if err != nil {
		return err
	}
	got, err := r.Read(peer)
	if err != nil {
		return err
	}
	if want := e.inputOf(members[from], step, 0, 0, probe); !bytes.Equal(got, want) {
		return e.wrong("step %d %s: rank %d's region read through its mapping is not what it wrote", step, s, members[from])
	}
	e.v.Checked++
	// Nobody may overwrite a region a peer still reads.
	if s.Kind == StepBarrier {
		if err := h.Barrier(ch+1, timeout); err != nil {
			return err
		}
		return e.probeChannel(h, step)
	}
	if err := h.PutSignal(prev, ch+1, timeout); err != nil {
		return err
	}
	return h.WaitSignal(next, ch+1, timeout)
}

// lonelyWait waits for a signal from the rank itself, on its own pad, which
// nothing ever sends (a put targets a peer's pad, and fault injection writes
// peers' slots only), with an eighth of the rank's timeout. The wait must
// fail with a timeout: a kernel that lost its error would return success.
func (e *executor) lonelyWait(step int, s Step) error {
	r, reg := e.r, s.Region
	h, err := r.Rendezvous(e.bufs[reg.Buf], groupName(reg.Group))
	if err != nil {
		return err
	}
	ch := s.Channel % max(signal.Channels(h.SignalPadSize(), h.WorldSize()), 1)
	err = h.WaitSignal(h.Rank(), ch, max(r.Timeout()/8, time.Microsecond))
	if err == nil {
		return e.wrong("step %d %s: a wait for a signal nobody sends returned success", step, s)
	}
	var ke *device.KernelError
	if !errors.As(err, &ke) || !strings.Contains(ke.Reason, "timed out") {
		return err
	}
	e.v.Checked++
	return nil
}

// probeChannel launches a barrier on the first channel past the group's
// pad, which the device must refuse at launch: a kernel that accepted it
// would signal into memory past the pad.
func (e *executor) probeChannel(h *rank.SymmetricMemory, step int) error {
	r, w := e.r, h.WorldSize()
	past := signal.Channels(h.SignalPadSize(), w)
	args := kernels.SignalArgs{
		Rank: int32(h.Rank()), World: int32(w), Channel: int32(past),
		PadPtrs: h.SignalPadPtrsDev(), PadBytes: h.SignalPadSize(), TimeoutNs: int64(r.Timeout()),
	}
	if err := r.Device().Launch(r.Stream(), device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: w, Args: args}); err == nil {
		serr := r.Synchronize()
		return e.wrong("step %d: a barrier on channel %d of a pad with %d channels was accepted (synchronize: %v)", step, past, past, serr)
	}
	return nil
}
