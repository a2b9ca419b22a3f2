package ptxcheck

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// FaultKind is a kind of fault that applies to any kernel: it needs no
// knowledge of the kernel's protocol, only of the harness's steps.
type FaultKind string

// The fault kinds. Each names a rank and the At-th (from 0) launch or
// write step that rank runs, counted in its program order, so a fault
// fires at the same point of the program whatever the schedule.
const (
	// Stall delays the rank's At-th launch: its host gives way for Steps
	// scheduling steps before it enqueues the launch, so the kernel starts
	// late while its peers run on. (A stall counts steps, not virtual
	// time: peers that poll in a loop the simulator does not recognise as
	// a spin never let virtual time pass.)
	Stall FaultKind = "stall"
	// Die kills the rank just before its At-th launch: its program and
	// every task of its device stop for good; its memory stays mapped by
	// its peers. A peer that waits for it must end in a hang naming its
	// waits, never in a wrong verdict.
	Die FaultKind = "die"
	// LoseWrite drops the rank's At-th write step: the bytes never reach
	// the device.
	LoseWrite FaultKind = "lose-write"
	// DupWrite delivers the rank's At-th write step a second time, late:
	// after the rank's next launch is enqueued (or at the end of the
	// program when no launch follows), as a stale copy of a host write.
	DupWrite FaultKind = "dup-write"
)

// FaultKinds lists every fault kind, in the order documented.
var FaultKinds = []FaultKind{Stall, Die, LoseWrite, DupWrite}

// stallSteps are the stalls a drawn plan picks from.
var stallSteps = []int{10, 1000, 20000}

// Fault is one injected fault.
type Fault struct {
	Kind  FaultKind
	Rank  int
	At    int // the rank's launch (stall, die) or write step (lose-write, dup-write), from 0
	Steps int // the stall's length in scheduling steps
}

// String is the text form KIND:RANK:AT (stall: KIND:RANK:AT:STEPS),
// which ParsePlan reads back.
func (f Fault) String() string {
	s := fmt.Sprintf("%s:%d:%d", f.Kind, f.Rank, f.At)
	if f.Kind == Stall {
		s += ":" + strconv.Itoa(f.Steps)
	}
	return s
}

// onLaunch reports whether the fault counts launches (else write steps).
func (f Fault) onLaunch() bool { return f.Kind == Stall || f.Kind == Die }

// Plan is the faults of one run.
type Plan []Fault

// String is the text form: the faults' forms joined by commas.
func (p Plan) String() string {
	s := make([]string, len(p))
	for i, f := range p {
		s[i] = f.String()
	}
	return strings.Join(s, ",")
}

// ParsePlan reads the text form of a plan; "" is the empty plan.
func ParsePlan(s string) (Plan, error) {
	plan := Plan{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		fs := strings.Split(part, ":")
		kind, err := ParseFaultKind(fs[0])
		if err != nil {
			return nil, fmt.Errorf("fault %q: %w", part, err)
		}
		want := 3
		if kind == Stall {
			want = 4
		}
		if len(fs) != want {
			form := "KIND:RANK:AT"
			if kind == Stall {
				form = "stall:RANK:AT:STEPS"
			}
			return nil, fmt.Errorf("fault %q: want %s", part, form)
		}
		f := Fault{Kind: kind}
		if f.Rank, err = strconv.Atoi(fs[1]); err != nil || f.Rank < 0 {
			return nil, fmt.Errorf("fault %q: rank %q: want an integer >= 0", part, fs[1])
		}
		if f.At, err = strconv.Atoi(fs[2]); err != nil || f.At < 0 {
			return nil, fmt.Errorf("fault %q: at %q: want an integer >= 0", part, fs[2])
		}
		if kind == Stall {
			if f.Steps, err = strconv.Atoi(fs[3]); err != nil || f.Steps < 1 || f.Steps > 1<<30 {
				return nil, fmt.Errorf("fault %q: steps %q: want an integer in [1, %d]", part, fs[3], 1<<30)
			}
		}
		plan = append(plan, f)
	}
	return plan, nil
}

// ParseFaultKind accepts the names of [FaultKinds].
func ParseFaultKind(s string) (FaultKind, error) {
	for _, k := range FaultKinds {
		if string(k) == s {
			return k, nil
		}
	}
	names := make([]string, len(FaultKinds))
	for i, k := range FaultKinds {
		names[i] = string(k)
	}
	return "", fmt.Errorf("unknown fault kind %q (want one of %s)", s, strings.Join(names, ", "))
}

// ParseFaultKinds reads a comma-separated list of fault kinds; "all" is
// every kind and "none" (or "") is none.
func ParseFaultKinds(s string) ([]FaultKind, error) {
	switch strings.TrimSpace(s) {
	case "", "none":
		return nil, nil
	case "all":
		return FaultKinds, nil
	}
	var out []FaultKind
	seen := map[FaultKind]bool{}
	for _, name := range strings.Split(s, ",") {
		k, err := ParseFaultKind(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out, nil
}

// opCounts is how many launches and write steps each rank runs.
type opCounts struct{ launches, writes []int }

// drawPlan draws one fault of one of kinds for a run of world ranks, from
// the seed alone: a kind whose operation the program never runs is left
// out of the draw. It returns nil when no kind applies.
func drawPlan(kinds []FaultKind, world int, seed uint64, counts opCounts) Plan {
	rng := rand.New(rand.NewPCG(seed, 0xfa017+uint64(world)))
	type choice struct {
		kind FaultKind
		rank int
	}
	var choices []choice
	for _, k := range kinds {
		for r := range world {
			n := counts.writes[r]
			if k == Stall || k == Die {
				n = counts.launches[r]
			}
			if n > 0 {
				choices = append(choices, choice{k, r})
			}
		}
	}
	if len(choices) == 0 {
		return nil
	}
	c := choices[rng.IntN(len(choices))]
	f := Fault{Kind: c.kind, Rank: c.rank}
	if f.onLaunch() {
		f.At = rng.IntN(counts.launches[c.rank])
	} else {
		f.At = rng.IntN(counts.writes[c.rank])
	}
	if f.Kind == Stall {
		f.Steps = stallSteps[rng.IntN(len(stallSteps))]
	}
	return Plan{f}
}

// counts walks the program as rank r would, counting its launches and
// write steps (repeat counts evaluated as the rank evaluates them).
func (c *compiled) counts(vars *frame, world int, repeats map[string]int) (opCounts, error) {
	oc := opCounts{launches: make([]int, world), writes: make([]int, world)}
	loc := vars.clone()
	for r := range world {
		loc.bind(slotRank, float64(r))
		var walk func(ss []cStep) error
		walk = func(ss []cStep) error {
			for _, s := range ss {
				if s.when != nil {
					v, err := s.when.eval(loc)
					if err != nil {
						return fmt.Errorf("%s: when: %w", s.what, err)
					}
					if v == 0 {
						continue
					}
				}
				switch {
				case s.graph != nil:
					// Each replay enqueues the captured launches again.
					n, err := s.graph.replays.evalInt(loc)
					if err != nil {
						return fmt.Errorf("%s: replays: %w", s.what, err)
					}
					before := oc.launches[r]
					if err := walk(s.graph.steps); err != nil {
						return err
					}
					oc.launches[r] = before + int(max(n, 0))*(oc.launches[r]-before)
				case s.launch != nil:
					oc.launches[r]++
				case s.write != nil:
					oc.writes[r]++
				case s.repeat != nil:
					n, err := repeatTimes(s, loc, repeats)
					if err != nil {
						return err
					}
					saved := loc.save(slotIter)
					for it := range n {
						loc.bind(slotIter, float64(it))
						if err := walk(s.repeat.steps); err != nil {
							return err
						}
					}
					loc.restore(slotIter, saved)
				}
			}
			return nil
		}
		if err := walk(c.steps); err != nil {
			return opCounts{}, err
		}
	}
	return oc, nil
}

// repeatTimes is how often repeat step s runs: its override, else its
// times expression.
func repeatTimes(s cStep, loc *frame, repeats map[string]int) (int64, error) {
	if n, ok := repeats[s.repeat.path]; ok {
		return int64(n), nil
	}
	n, err := s.repeat.times.evalInt(loc)
	if err != nil {
		return 0, fmt.Errorf("%s: times: %w", s.what, err)
	}
	if n < 0 || n > 1<<20 {
		return 0, fmt.Errorf("%s: repeat %d times out of range [0, %d]", s.what, n, 1<<20)
	}
	return n, nil
}
