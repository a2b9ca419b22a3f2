package litmus

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/symmem/symmem/device/sim/memmodel"
)

// barrierPlan maps the barriers of a litmus test onto PTX barriers: each
// barrier of a CTA (its instance and id) a barrier id of its own, each
// arrival a thread count that names the warps of exactly the litmus
// threads the model lets meet there. Translation is exact only where the
// model's barrier and PTX's agree, which planBarriers checks:
//
//   - every barrier instruction runs once per run (no loop runs it again,
//     no branch skips it), and its operands are constants (immediates, or
//     registers the thread never writes), so the threads that meet at a
//     barrier are known before the run;
//   - without a thread count, the model's n-th meeting of a barrier is the
//     n-th arrival of every thread that arrives there that often: that is
//     phase n, whose count is those threads' warps; a bar.arrive must be a
//     thread's last arrival there (a warp that arrives again before the
//     phase completed is an error in PTX, not in the model);
//   - with a thread count Q, the model's k-th arrival waits for arrival
//     max(k, Q) and the barrier never resets, while a PTX barrier starts a
//     new phase after Q arrivals: the two agree only when no more than Q
//     arrivals come, each thread's once (Q warps; fewer hang in both).
type barrierPlan struct {
	at        map[[2]int]ptxBarrier // (thread, instruction) -> its PTX barrier
	warpsOfCT map[[2]int]int        // (gpu, cta) -> warps its barriers need
}

// ptxBarrier is the barrier id and thread count of one arrival.
type ptxBarrier struct{ id, count int }

// warps is the number of warps the barriers of a CTA need a block to have
// (a count no arrivals reach still needs the warps to exist); 0 without
// barriers.
func (p *barrierPlan) warps(gpu, cta int) int {
	if p == nil {
		return 0
	}
	return p.warpsOfCT[[2]int{gpu, cta}]
}

// litmusBarrier names a barrier of a litmus test: a CTA's instance and id.
type litmusBarrier struct {
	gpu, cta     int
	instance, id int64
	hasID        bool
	quorum       int64         // 0: none
	arrivalsOf   map[int][]int // thread -> its arrivals (instruction indices), in order
	threads      []int         // the threads that arrive, in order of appearance
	firstLine    int
}

// planBarriers plans the barriers of p; nil when it has none.
func planBarriers(p *memmodel.Program) (*barrierPlan, error) {
	var bars []*litmusBarrier
	find := func(gpu, cta int, inst, id int64, hasID bool) *litmusBarrier {
		for _, b := range bars {
			if b.gpu == gpu && b.cta == cta && b.instance == inst && b.id == id && b.hasID == hasID {
				return b
			}
		}
		b := &litmusBarrier{gpu: gpu, cta: cta, instance: inst, id: id, hasID: hasID, arrivalsOf: map[int][]int{}}
		bars = append(bars, b)
		return b
	}
	for t := range p.Threads {
		th := &p.Threads[t]
		for pc, in := range th.Code {
			if in.Op != memmodel.OpBarrier {
				continue
			}
			if !runsOnce(th, pc) {
				return nil, fmt.Errorf("%s line %d: a barrier a loop or branch may run other than once", th.Name, in.Line)
			}
			inst, err := constant(th, in.Instance)
			if err != nil {
				return nil, fmt.Errorf("%s line %d: %w", th.Name, in.Line, err)
			}
			var id, q int64
			if in.ID != nil {
				if id, err = constant(th, *in.ID); err != nil {
					return nil, fmt.Errorf("%s line %d: %w", th.Name, in.Line, err)
				}
			}
			if in.Quorum != nil {
				if q, err = constant(th, *in.Quorum); err != nil {
					return nil, fmt.Errorf("%s line %d: %w", th.Name, in.Line, err)
				}
				if q <= 0 || q > 32 {
					return nil, fmt.Errorf("%s line %d: thread count %d", th.Name, in.Line, q)
				}
			}
			b := find(th.GPU, th.CTA, inst, id, in.ID != nil)
			if len(b.arrivalsOf) == 0 {
				b.quorum, b.firstLine = q, in.Line
			} else if b.quorum != q {
				return nil, fmt.Errorf("%s line %d: barrier %d with thread counts %d and %d (0: none; line %d)", th.Name, in.Line, inst, b.quorum, q, b.firstLine)
			}
			if len(b.arrivalsOf[t]) == 0 {
				b.threads = append(b.threads, t)
			}
			b.arrivalsOf[t] = append(b.arrivalsOf[t], pc)
		}
	}
	if len(bars) == 0 {
		return nil, nil
	}
	plan := &barrierPlan{at: map[[2]int]ptxBarrier{}, warpsOfCT: map[[2]int]int{}}
	// PTX ids per CTA, in a fixed order of the litmus barriers.
	slices.SortFunc(bars, func(a, b *litmusBarrier) int {
		return cmp.Or(cmp.Compare(a.gpu, b.gpu), cmp.Compare(a.cta, b.cta), cmp.Compare(a.instance, b.instance),
			cmp.Compare(boolInt(a.hasID), boolInt(b.hasID)), cmp.Compare(a.id, b.id))
	})
	next := map[[2]int]int{}
	for _, b := range bars {
		cta := [2]int{b.gpu, b.cta}
		id := next[cta]
		next[cta]++
		if id >= 16 {
			return nil, fmt.Errorf("cta %d gpu %d has more than 16 barriers", b.cta, b.gpu)
		}
		if b.quorum > 0 {
			for _, t := range b.threads {
				if n := len(b.arrivalsOf[t]); n > 1 {
					return nil, fmt.Errorf("%s arrives %d times at barrier %d, which has a thread count", p.Threads[t].Name, n, b.instance)
				}
			}
			if n := int64(len(b.threads)); n > b.quorum {
				return nil, fmt.Errorf("barrier %d: %d arrivals for a thread count of %d (the model's barrier does not reset after %d, a PTX barrier does)",
					b.instance, n, b.quorum, b.quorum)
			}
			for _, t := range b.threads {
				plan.at[[2]int{t, b.arrivalsOf[t][0]}] = ptxBarrier{id, 32 * int(b.quorum)}
			}
			plan.warpsOfCT[cta] = max(plan.warpsOfCT[cta], int(b.quorum))
			continue
		}
		for _, t := range b.threads {
			arr := b.arrivalsOf[t]
			for n, pc := range arr {
				if n < len(arr)-1 && p.Threads[t].Code[pc].Arrive {
					return nil, fmt.Errorf("%s line %d: bar.arrive, then another arrival at the same barrier (PTX leaves that undefined until the phase completes)",
						p.Threads[t].Name, p.Threads[t].Code[pc].Line)
				}
				warps := 0
				for _, u := range b.threads {
					if len(b.arrivalsOf[u]) > n {
						warps++
					}
				}
				plan.at[[2]int{t, pc}] = ptxBarrier{id, 32 * warps}
			}
		}
	}
	return plan, nil
}

// runsOnce reports whether instruction pc of th runs exactly once in a
// run that ends: no backward jump repeats it and no forward branch skips
// it.
func runsOnce(th *memmodel.Thread, pc int) bool {
	for q, in := range th.Code {
		if in.Op != memmodel.OpBranch && in.Op != memmodel.OpJump {
			continue
		}
		if t := in.Target; t > q && pc > q && pc < t || t <= q && pc >= t && pc <= q {
			return false
		}
	}
	return true
}

// constant is the value of o in a run of th: an immediate, or a register
// th never writes (its initial value).
func constant(th *memmodel.Thread, o memmodel.Operand) (int64, error) {
	if o.Reg == "" {
		return o.Imm, nil
	}
	for _, in := range th.Code {
		if in.Dst == o.Reg {
			return 0, fmt.Errorf("barrier operand %s is a register the thread sets (line %d): which threads meet there is known only in the run, and a PTX thread count is fixed when a thread arrives",
				o.Reg, in.Line)
		}
	}
	return th.Regs[o.Reg], nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
