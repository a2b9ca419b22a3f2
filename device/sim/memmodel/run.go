package memmodel

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// kind is an event's kind.
type kind uint8

const (
	evRead kind = iota
	evWrite
	evFence
	evBarrier
)

// maxThreadEvents bounds one thread's run: dependencies are bit sets over
// a thread's events.
const maxThreadEvents = 64

// maxThreadRuns bounds the runs of one thread.
const maxThreadRuns = 1 << 14

// event is one memory, fence or barrier event of a thread's run.
type event struct {
	kind   kind
	thread int // -1 for an initial write
	loc    int // physical location index; -1 for fences and barriers
	vloc   int // generic address index of a memory event
	proxy  Proxy
	val    int64
	sem    Sem
	scope  Scope
	rmw    bool   // part of a read-modify-write: the read is followed by its write
	spin   bool   // a read of a spin loop's last round: it must read a coherence-maximal write
	deps   uint64 // thread-local indices of the reads this event depends on (data and control)
	line   int
	hops   []int // for writes: the least number of writes to each location the value derives from

	// Barrier fields.
	bar    barrierKey
	quorum int64 // 0: no count
	arrive bool
}

// memory reports whether e is a read or a write.
func (e *event) memory() bool { return e.kind == evRead || e.kind == evWrite }

// barrierKey names one barrier of one CTA.
type barrierKey struct {
	gpu, cta int
	instance int64
	id       int64
	hasID    bool
}

// run is one path of a thread with a guess of every value it reads.
type run struct {
	events []event
	regs   map[string]int64
	end    end
}

// end is how a run ends.
type end uint8

const (
	// finished: the thread ran to the end of its code.
	finished end = iota
	// spinning: the run ends with a round of a loop that, reading the
	// same values, repeats forever; its reads are marked spin.
	spinning
	// blocked: the run ends waiting at its last event, a barrier.
	blocked
)

// maxSpinRounds bounds the rounds a spinning thread is followed to see
// its state repeat.
const maxSpinRounds = 1024

// spinMode follows a thread that may spin forever in the loop from lo to
// the backward jump at hi: every location it reads returns one value (the
// value of the location's last write, which fair executions eventually
// see), until its state at a loop head repeats or it leaves the loop.
type spinMode struct {
	lo, hi int
	mem    map[int]int64
	visits []spinVisit
}

// spinVisit is the state of a thread at a loop head.
type spinVisit struct {
	pc     int
	regs   []int64
	events int
}

func (m *spinMode) clone() *spinMode {
	if m == nil {
		return nil
	}
	c := &spinMode{lo: m.lo, hi: m.hi, mem: make(map[int]int64, len(m.mem)), visits: slices.Clone(m.visits)}
	for k, v := range m.mem {
		c.mem[k] = v
	}
	return c
}

// runState is the state of a thread while its runs are enumerated.
type runState struct {
	pc      int
	regs    []int64 // by register index
	regDeps []uint64
	regHops [][]int
	ctrl    uint64
	events  []event
	jumps   int
	spin    *spinMode // nil unless the run follows a possible spin (liveness)
}

func (s *runState) clone() *runState {
	c := *s
	c.regs = slices.Clone(s.regs)
	c.regDeps = slices.Clone(s.regDeps)
	c.regHops = slices.Clone(s.regHops)
	c.events = append([]event(nil), s.events...)
	c.spin = s.spin.clone()
	return &c
}

// domain is the values a location may hold, each with the least number
// of writes to every location its derivation needs.
type domain struct {
	vals []int64
	hops [][]int
}

// maxHops joins derivation counts: a value computed from several inputs
// needs at least as many writes as each of them.
func maxHops(a, b []int) []int {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	out := make([]int, len(a))
	for i := range a {
		out[i] = max(a[i], b[i])
	}
	return out
}

// threadRuns enumerates every run of thread ti in which each read returns
// one of its location's candidate values (dom), with at most loopBound
// backward jumps. A run that writes a value needing more writes to a
// location than all threads can make (maxWrites) is impossible and left
// out. It returns the runs and how many were cut at the loop bound.
func (x *explorer) threadRuns(ti int, dom []domain, maxWrites []int) ([]run, int, error) {
	t := &x.prog.Threads[ti]
	// Registers by index, in a fixed order.
	reg := map[string]int{}
	var names []string
	add := func(r string) {
		if _, ok := reg[r]; r != "" && !ok {
			reg[r] = len(names)
			names = append(names, r)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(t.Regs)) {
		add(r)
	}
	for _, in := range t.Code {
		add(in.Dst)
		for _, a := range in.Args {
			add(a.Reg)
		}
		add(in.Instance.Reg)
		if in.ID != nil {
			add(in.ID.Reg)
		}
		if in.Quorum != nil {
			add(in.Quorum.Reg)
		}
	}
	var runs []run
	seen := map[string]bool{}
	cut := 0
	emit := func(s *runState, e end) error {
		if x.live {
			// Spin-mode continuations can reach a run twice.
			k := runKey(s.events, e)
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		if len(runs) == maxThreadRuns {
			return fmt.Errorf("%s has more than %d runs: the program is too large for exhaustive exploration", t.Name, maxThreadRuns)
		}
		regs := make(map[string]int64, len(names))
		for i, n := range names {
			regs[n] = s.regs[i]
		}
		runs = append(runs, run{events: s.events, regs: regs, end: e})
		return nil
	}
	var walk func(s *runState) error
	walk = func(s *runState) error {
		for {
			if s.spin != nil && (s.pc < s.spin.lo || s.pc > s.spin.hi) {
				return nil // it leaves the loop: the plain runs have what follows
			}
			if s.pc >= len(t.Code) {
				return emit(s, finished)
			}
			if len(s.events) > maxThreadEvents {
				return fmt.Errorf("%s: a run has more than %d memory events", t.Name, maxThreadEvents)
			}
			in := &t.Code[s.pc]
			val := func(o Operand) int64 {
				if o.Reg != "" {
					return s.regs[reg[o.Reg]]
				}
				return o.Imm
			}
			dep := func(o Operand) uint64 {
				if o.Reg != "" {
					return s.regDeps[reg[o.Reg]]
				}
				return 0
			}
			hop := func(o Operand) []int {
				if o.Reg != "" {
					return s.regHops[reg[o.Reg]]
				}
				return nil
			}
			// written is the derivation count of a value written to loc
			// from inputs h; ok is false when no execution has that many
			// writes.
			written := func(h []int, loc int) ([]int, bool) {
				out := make([]int, len(x.locs))
				copy(out, h)
				out[loc]++
				for l, n := range out {
					if n > maxWrites[l] {
						return nil, false
					}
				}
				return out, true
			}
			base := event{thread: ti, loc: -1, vloc: -1, sem: in.Sem, scope: in.Scope, deps: s.ctrl, line: in.Line, proxy: in.Proxy}
			if in.Loc != "" {
				base.vloc = x.vloc[in.Loc]
			}
			switch in.Op {
			case OpLoad, OpAtom:
				loc := x.locIndex[in.Loc]
				for vi, v := range dom[loc].vals {
					vh := dom[loc].hops[vi]
					if s.spin != nil {
						if fixed, ok := s.spin.mem[loc]; ok && fixed != v {
							continue
						}
					}
					c := s.clone()
					if c.spin != nil {
						c.spin.mem[loc] = v
					}
					r := base
					r.kind, r.loc, r.val = evRead, loc, v
					if in.Op == OpAtom {
						r.rmw = true
						r.sem = readSem(in.Sem)
					}
					ri := len(c.events)
					c.events = append(c.events, r)
					if in.Op == OpAtom {
						var a, b int64
						var d uint64
						h := vh
						if len(in.Args) > 0 {
							a, d, h = val(in.Args[0]), dep(in.Args[0]), maxHops(h, hop(in.Args[0]))
						}
						if len(in.Args) > 1 {
							b, d, h = val(in.Args[1]), d|dep(in.Args[1]), maxHops(h, hop(in.Args[1]))
						}
						if in.AtomOp != "cas" || v == a {
							nv, err := atomValue(in.AtomOp, v, a, b)
							if err != nil {
								return fmt.Errorf("%s line %d: %w", t.Name, in.Line, err)
							}
							wh, ok := written(h, loc)
							if !ok {
								continue
							}
							w := base
							w.kind, w.loc, w.val, w.rmw, w.hops = evWrite, loc, nv, true, wh
							w.sem = writeSem(in.Sem)
							w.deps |= d | 1<<ri
							c.events = append(c.events, w)
						} else {
							// A failed compare-and-swap writes nothing.
							c.events[ri].rmw = false
						}
					}
					if in.Dst != "" {
						d := reg[in.Dst]
						c.regs[d], c.regDeps[d], c.regHops[d] = v, 1<<ri, vh
					}
					c.pc++
					if err := walk(c); err != nil {
						return err
					}
				}
				return nil
			case OpStore:
				w := base
				w.kind, w.loc, w.val = evWrite, x.locIndex[in.Loc], val(in.Args[0])
				w.deps |= dep(in.Args[0])
				wh, ok := written(hop(in.Args[0]), w.loc)
				if !ok {
					return nil
				}
				w.hops = wh
				s.events = append(s.events, w)
			case OpFence, OpProxyFence:
				f := base
				f.kind = evFence
				s.events = append(s.events, f)
			case OpBarrier:
				b := base
				b.kind = evBarrier
				b.bar = barrierKey{gpu: t.GPU, cta: t.CTA, instance: val(in.Instance)}
				if in.ID != nil {
					b.bar.id, b.bar.hasID = val(*in.ID), true
				}
				if in.Quorum != nil {
					b.quorum = val(*in.Quorum)
					if b.quorum <= 0 {
						return fmt.Errorf("%s line %d: barrier thread count %d is not positive", t.Name, in.Line, b.quorum)
					}
				}
				b.arrive = in.Arrive
				s.events = append(s.events, b)
				if x.live && !b.arrive && s.spin == nil {
					// The thread may wait here forever.
					if err := emit(s.clone(), blocked); err != nil {
						return err
					}
				}
			case OpLocal:
				args := make([]int64, len(in.Args))
				var d uint64
				var h []int
				for i, a := range in.Args {
					args[i], d, h = val(a), d|dep(a), maxHops(h, hop(a))
				}
				v, err := localValue(in.AtomOp, args)
				if err != nil {
					return fmt.Errorf("%s line %d: %w", t.Name, in.Line, err)
				}
				r := reg[in.Dst]
				s.regs[r], s.regDeps[r], s.regHops[r] = v, d, h
			case OpBranch, OpJump:
				taken := true
				if in.Op == OpBranch {
					ok, err := holds(in.Cond, val(in.Args[0]), val(in.Args[1]))
					if err != nil {
						return fmt.Errorf("%s line %d: %w", t.Name, in.Line, err)
					}
					taken = ok
					s.ctrl |= dep(in.Args[0]) | dep(in.Args[1])
				}
				if taken {
					if in.Target <= s.pc && s.spin != nil {
						done, err := spinRound(t, s, in.Target, in.Line)
						if err != nil {
							return err
						}
						if done {
							return emit(s, spinning)
						}
						s.pc = in.Target
						continue
					}
					if in.Target <= s.pc && x.live {
						// Follow, besides the plain run, a spin from here.
						c := s.clone()
						c.pc = in.Target
						c.spin = &spinMode{lo: in.Target, hi: s.pc, mem: map[int]int64{}, visits: []spinVisit{{pc: in.Target, regs: slices.Clone(s.regs), events: len(s.events)}}}
						if err := walk(c); err != nil {
							return err
						}
					}
					if in.Target <= s.pc {
						s.jumps++
						if s.jumps > x.opts.LoopBound {
							cut++
							return nil
						}
					}
					s.pc = in.Target
					continue
				}
			}
			s.pc++
		}
	}
	n := len(names)
	init := &runState{regs: make([]int64, n), regDeps: make([]uint64, n), regHops: make([][]int, n)}
	for i, name := range names {
		init.regs[i] = t.Regs[name]
	}
	if err := walk(init); err != nil {
		return nil, 0, err
	}
	return runs, cut, nil
}

// spinRound takes a spinning thread's backward jump to target: done is
// true when its state at target repeats an earlier visit, so that with
// the same values read it loops forever; the reads of the rounds since
// are marked spin. A loop that writes or waits at a barrier in those
// rounds is not decided.
func spinRound(t *Thread, s *runState, target, line int) (done bool, err error) {
	for _, v := range s.spin.visits {
		if v.pc != target || !slices.Equal(v.regs, s.regs) {
			continue
		}
		for i := v.events; i < len(s.events); i++ {
			e := &s.events[i]
			switch e.kind {
			case evWrite, evBarrier:
				return false, fmt.Errorf("%s line %d: a loop that writes or waits at a barrier on every round may run forever: its termination is not decided", t.Name, line)
			case evRead:
				e.spin = true
			}
		}
		return true, nil
	}
	if len(s.spin.visits) == maxSpinRounds {
		return false, fmt.Errorf("%s line %d: the state of a loop that reads the same values does not repeat within %d rounds: its termination is not decided", t.Name, line, maxSpinRounds)
	}
	s.spin.visits = append(s.spin.visits, spinVisit{pc: target, regs: slices.Clone(s.regs), events: len(s.events)})
	return false, nil
}

// runKey identifies a run by its events and end.
func runKey(evs []event, e end) string {
	var b strings.Builder
	fmt.Fprint(&b, e)
	for i := range evs {
		ev := &evs[i]
		fmt.Fprintf(&b, ";%d,%d,%d,%d,%t,%t,%d,%d", ev.kind, ev.loc, ev.vloc, ev.val, ev.rmw, ev.spin, ev.deps, ev.line)
	}
	return b.String()
}

// readSem is the semantics of the read half of an atomic with sem.
func readSem(sem Sem) Sem {
	if sem == Acquire || sem == AcqRel {
		return Acquire
	}
	return Relaxed
}

// writeSem is the semantics of the write half of an atomic with sem.
func writeSem(sem Sem) Sem {
	if sem == Release || sem == AcqRel {
		return Release
	}
	return Relaxed
}
