package race

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/signal"
)

// WaitFor is the wait-for graph of a hang: every blocked signal operation,
// which device each one waits for, and a cycle of devices waiting on each
// other when there is one.
type WaitFor struct {
	Cause  string        // "deadlock" or "signal timeout"
	At     time.Duration // virtual time of the hang
	Waits  []sim.SignalWait
	Edges  []Edge              // in the order of Waits
	Cycle  []int               // devices, the first repeated at the end; nil when none
	Others []actor.BlockedTask // blocked tasks that are not signal waits
}

// Edge says that device From waits for device To to act, because of
// Waits[Wait].
type Edge struct {
	From, To int
	Wait     int
}

// NewWaitFor builds the graph of the signal waits blocked at virtual time
// at (from [sim.World.SignalWaits] after a deadlock, or
// [sim.World.FirstSignalTimeout]). dl, when not nil, adds the deadlock's
// other blocked tasks.
func NewWaitFor(cause string, at time.Duration, waits []sim.SignalWait, dl *actor.DeadlockError) *WaitFor {
	g := &WaitFor{Cause: cause, At: at, Waits: append([]sim.SignalWait(nil), waits...)}
	signalTasks := map[int]bool{}
	for i, w := range g.Waits {
		signalTasks[w.Task] = true
		to := w.Owner
		if w.Decoded && w.PeerDevice >= 0 {
			to = w.PeerDevice
		}
		if to >= 0 && to != w.Device {
			g.Edges = append(g.Edges, Edge{From: w.Device, To: to, Wait: i})
		}
	}
	if dl != nil {
		for _, t := range dl.Blocked {
			if !signalTasks[t.ID] {
				g.Others = append(g.Others, t)
			}
		}
		sort.Slice(g.Others, func(i, j int) bool { return g.Others[i].ID < g.Others[j].ID })
	}
	g.Cycle = g.findCycle()
	return g
}

// findCycle returns the first cycle a depth-first search finds, visiting
// devices and their successors in increasing order.
func (g *WaitFor) findCycle() []int {
	succ := map[int][]int{}
	var nodes []int
	for _, e := range g.Edges {
		if _, ok := succ[e.From]; !ok {
			nodes = append(nodes, e.From)
		}
		succ[e.From] = append(succ[e.From], e.To)
	}
	sort.Ints(nodes)
	for _, n := range nodes {
		s := succ[n]
		sort.Ints(s)
		succ[n] = dedupe(s)
	}
	const (
		white = iota
		grey
		black
	)
	color := map[int]int{}
	var stack []int
	var cycle []int
	var visit func(n int) bool
	visit = func(n int) bool {
		color[n] = grey
		stack = append(stack, n)
		for _, m := range succ[n] {
			switch color[m] {
			case grey:
				for i, s := range stack {
					if s == m {
						cycle = append(append([]int(nil), stack[i:]...), m)
						return true
					}
				}
			case white:
				if visit(m) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	for _, n := range nodes {
		if color[n] == white && visit(n) {
			return cycle
		}
	}
	return nil
}

func dedupe(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// DescribeWait renders one blocked signal wait: the thread, the operation and
// its slot, the value the slot holds and the one it needs, and who must act.
func DescribeWait(w sim.SignalWait) string {
	who := fmt.Sprintf("device %d %s#%d block %d", w.Device, w.Kernel, w.Launch, w.Block)
	if w.Lane >= 0 {
		who += fmt.Sprintf(" lane %d", w.Lane)
	}
	state := "blocked"
	if w.TimedOut {
		state = "timed out"
	}
	who += fmt.Sprintf(" (%s since %v)", state, w.Since)
	if !w.Decoded {
		return fmt.Sprintf("%s: waits on the word at %v (phys %d + %#x of device %d) holding %d: %s",
			who, w.Addr, w.Phys, w.PhysOffset, w.Owner, w.Value, w.What)
	}
	s := w.Slot
	var must string
	if s.Op == signal.Wait {
		must = fmt.Sprintf("rank %d (device %d) must put", s.Peer, w.PeerDevice)
	} else {
		must = fmt.Sprintf("rank %d (device %d) must wait (consume the previous signal)", s.Peer, w.PeerDevice)
	}
	return fmt.Sprintf("%s: %s by rank %d of %d on channel %d, pad of rank %d slot %d holds %d, needs %d: %s",
		who, s.Op, s.Rank, w.World, s.Channel, s.Pad, s.Index, w.Value, w.Expect, must)
}

// String renders the graph: one line per wait, the cycle, the other
// blocked tasks.
func (g *WaitFor) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "wait-for graph at virtual time %v (%s): %d signal waits", g.At, g.Cause, len(g.Waits))
	for _, w := range g.Waits {
		fmt.Fprintf(&b, "\n  %s", DescribeWait(w))
	}
	if g.Cycle != nil {
		parts := make([]string, len(g.Cycle))
		for i, d := range g.Cycle {
			parts[i] = fmt.Sprintf("device %d", d)
		}
		fmt.Fprintf(&b, "\n  cycle: %s", strings.Join(parts, " -> "))
	} else if len(g.Waits) > 0 {
		b.WriteString("\n  no cycle: some device waited for is not blocked in a signal wait")
	}
	for _, t := range g.Others {
		fmt.Fprintf(&b, "\n  also blocked: task %d %s waits for %s", t.ID, t.Name, t.What)
	}
	return b.String()
}
