package memmodel

import (
	"errors"
	"fmt"
)

// Termination is what [Terminates] found.
type Termination struct {
	// Ends is true when every fair execution ends: no allowed execution
	// leaves a thread spinning or waiting forever while the others have
	// ended or are stuck too.
	Ends bool
	// Hang, when Ends is false, is one such execution: how each thread
	// ends.
	Hang []ThreadEnd
	// Candidates and Consistent count the candidate executions examined
	// and those the axioms accepted (Consistent counts only a hang).
	Candidates, Consistent int
	// CutRuns counts thread runs that took more than the loop bound's
	// backward jumps before spinning, ending or waiting; they were not
	// examined.
	CutRuns int
}

// ThreadEnd is how one thread ends in a hang.
type ThreadEnd struct {
	Thread int
	// State is "ends", "spins" (a loop that reads the same values
	// forever) or "waits" (at a barrier that never completes).
	State string
	// Line is the source line of the barrier a waiting thread is at, or
	// of the last read a spinning thread repeats.
	Line int
	// Reads are a spinning thread's last round: the location and value
	// of each read.
	Reads []SpinRead
}

// SpinRead is one read of a spinning thread's repeated round.
type SpinRead struct {
	Loc string
	Val int64
}

// errHang stops the exploration at the first hang.
var errHang = errors.New("hang found")

// Terminates decides whether every fair execution of p ends. Fairness is
// that of the PTX model's liveness: a thread that keeps reading
// eventually reads the last write of each location (in coherence order).
// So p may hang when some allowed execution ends with every thread
// finished, waiting at a barrier that never completes (a bar.cta.sync
// without a count waits for every thread of its CTA that has not ended;
// with a count, for that many arrivals), or spinning: repeating a round of
// a loop, without writing, whose reads all return the last write of their
// location, from a state that repeats; and at least one thread not
// finished.
//
// A thread takes at most [Options.LoopBound] backward jumps before it
// spins, ends or waits (runs that need more are counted in CutRuns); a
// spinning thread is followed until its state repeats. A loop whose
// repeating rounds write memory or wait at a barrier is refused with an
// error: its termination is not decided.
func Terminates(p *Program, opts Options) (*Termination, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	x := newExplorer(p, opts.withDefaults())
	x.live = true
	runs, err := x.allRuns()
	if err != nil {
		return nil, err
	}
	err = x.combine(runs)
	out := &Termination{Candidates: x.res.Candidates, Consistent: x.res.Consistent, CutRuns: x.res.CutRuns}
	switch {
	case errors.Is(err, errHang):
		out.Hang = x.hang
	case err != nil:
		return nil, err
	default:
		out.Ends = true
	}
	return out, nil
}

// recordHang keeps how each thread of g ends.
func (x *explorer) recordHang(g *graph) {
	x.hang = nil
	for t := range g.first {
		end := len(g.ev)
		if t+1 < len(g.first) {
			end = g.first[t+1]
		}
		te := ThreadEnd{Thread: t, State: "ends"}
		switch g.ends[t] {
		case blocked:
			te.State, te.Line = "waits", g.ev[end-1].line
		case spinning:
			te.State = "spins"
			for i := g.first[t]; i < end; i++ {
				if e := &g.ev[i]; e.spin {
					te.Reads = append(te.Reads, SpinRead{Loc: x.locs[e.loc], Val: e.val})
					te.Line = e.line
				}
			}
		}
		x.hang = append(x.hang, te)
	}
}

// String describes a thread's end: "ends", "waits at the barrier of line
// 9", "spins at line 7 reading f=0".
func (te ThreadEnd) String() string {
	switch te.State {
	case "waits":
		return fmt.Sprintf("waits at the barrier of line %d", te.Line)
	case "spins":
		s := fmt.Sprintf("spins at line %d reading", te.Line)
		for _, r := range te.Reads {
			s += fmt.Sprintf(" %s=%d", r.Loc, r.Val)
		}
		return s
	}
	return "ends"
}
