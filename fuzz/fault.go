package fuzz

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind int

// The fault kinds. Each fires at a trigger counted per rank, so that it
// fires at the same point whenever the same schedule runs.
const (
	// Crash stops rank Rank at scheduling step At: its program and its
	// device's tasks never run again; its memory stays mapped by peers.
	Crash Kind = iota
	// Delay sleeps rank Rank for For (virtual time) before its At-th device
	// operation.
	Delay
	// SignalLose writes 0 into a pad slot the rank's At-th kernel uses,
	// After scheduling points after the launch: a stale write that loses a
	// pending signal.
	SignalLose
	// SignalCorrupt writes a value the protocol never writes into such a
	// slot: a stray write the protocol must detect.
	SignalCorrupt
	// SignalDup writes 1 into such a slot: a duplicated put, delivered
	// after the original was consumed. The pad protocol has no sequence
	// numbers, so it cannot tell a duplicate from a real signal; only
	// [FaultsAll] draws it.
	SignalDup
	// IPCLose loses the At-th IPC message rank Rank sends (with its fd).
	IPCLose
	// FDLose delivers the At-th message rank Rank sends without its fd.
	FDLose
	// FDWrong delivers it with an fd number the receiver does not have.
	FDWrong
	// StoreSlow delays rank Rank's At-th Store request by For.
	StoreSlow
	// StoreFail fails rank Rank's At-th Store request before it is sent.
	StoreFail
	numKinds
)

var kindNames = [numKinds]string{
	Crash: "crash", Delay: "delay",
	SignalLose: "signal-lose", SignalCorrupt: "signal-corrupt", SignalDup: "signal-dup",
	IPCLose: "ipc-lose", FDLose: "fd-lose", FDWrong: "fd-wrong",
	StoreSlow: "store-slow", StoreFail: "store-fail",
}

func (k Kind) String() string {
	if k >= 0 && k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind accepts the names [Kind.String] gives.
func ParseKind(s string) (Kind, error) {
	for k, n := range kindNames {
		if n == s {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown fault kind %q (want one of %s)", s, strings.Join(kindNames[:], ", "))
}

// isSignal reports whether k writes a pad slot.
func (k Kind) isSignal() bool { return k == SignalLose || k == SignalCorrupt || k == SignalDup }

// Fault is one injected fault: what, whom, and when. The meaning of At
// depends on the kind (see [Kind]).
type Fault struct {
	Kind  Kind
	Rank  int
	At    int64         // step (crash), device op (delay), launch (signal), message (ipc, fd), request (store)
	For   time.Duration // delay, store-slow
	After int           // signal: scheduling points between the launch and the write
	// Signal faults write the slot of rank Src in the pad of rank Pad on
	// channel Channel, each reduced to what the kernel uses: Pad and Src
	// modulo its world (Src moved to the next rank when it equals Pad: a
	// rank never signals itself), Channel modulo its blocks.
	Pad, Channel, Src int
}

// counter names the trigger counter of each kind in the text form.
func (k Kind) counter() string {
	switch k {
	case Crash:
		return "step"
	case Delay:
		return "op"
	case IPCLose, FDLose, FDWrong:
		return "msg"
	case StoreSlow, StoreFail:
		return "req"
	}
	return "launch"
}

// String is the fault's text form, which [ParsePlan] reads back:
// "crash rank=2 step=517", "delay rank=1 op=3 for=40ms",
// "signal-lose rank=0 launch=0 after=12 pad=1 ch=3 src=2", "fd-lose rank=1
// msg=2", "store-slow rank=3 req=4 for=800ms".
func (f Fault) String() string {
	s := fmt.Sprintf("%s rank=%d %s=%d", f.Kind, f.Rank, f.Kind.counter(), f.At)
	switch {
	case f.Kind == Delay || f.Kind == StoreSlow:
		s += " for=" + f.For.String()
	case f.Kind.isSignal():
		s += fmt.Sprintf(" after=%d pad=%d ch=%d src=%d", f.After, f.Pad, f.Channel, f.Src)
	}
	return s
}

// Validate checks the fault against a world size.
func (f Fault) Validate(world int) error {
	switch {
	case f.Kind < 0 || f.Kind >= numKinds:
		return fmt.Errorf("fault %v: unknown kind", f)
	case f.Rank < 0 || f.Rank >= world:
		return fmt.Errorf("fault %v: rank %d out of range [0, %d)", f, f.Rank, world)
	case f.At < 0:
		return fmt.Errorf("fault %v: negative %s", f, f.Kind.counter())
	case f.For < 0:
		return fmt.Errorf("fault %v: negative duration", f)
	case f.After < 0:
		return fmt.Errorf("fault %v: negative after", f)
	case f.Pad < 0 || f.Channel < 0 || f.Src < 0:
		return fmt.Errorf("fault %v: negative pad, channel or source", f)
	}
	return nil
}

// Plan is the faults of one case.
type Plan []Fault

// String joins the faults with "; " ("" for none).
func (p Plan) String() string {
	parts := make([]string, len(p))
	for i, f := range p {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// Validate checks every fault against a world size.
func (p Plan) Validate(world int) error {
	for _, f := range p {
		if err := f.Validate(world); err != nil {
			return err
		}
	}
	return nil
}

// ParsePlan reads the text form of a plan ("" or "none" is the empty plan).
func ParsePlan(s string) (Plan, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return nil, nil
	}
	var p Plan
	for _, part := range strings.Split(s, ";") {
		f, err := parseFault(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("plan %q: %w", s, err)
		}
		p = append(p, f)
	}
	return p, nil
}

func parseFault(s string) (Fault, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Fault{}, fmt.Errorf("empty fault")
	}
	k, err := ParseKind(fields[0])
	if err != nil {
		return Fault{}, err
	}
	f := Fault{Kind: k}
	seen := map[string]bool{}
	for _, kv := range fields[1:] {
		key, val, ok := strings.Cut(kv, "=")
		if !ok {
			return Fault{}, fmt.Errorf("fault %q: %q is not key=value", s, kv)
		}
		if seen[key] {
			return Fault{}, fmt.Errorf("fault %q: %s given twice", s, key)
		}
		seen[key] = true
		var err error
		switch {
		case key == "rank":
			f.Rank, err = strconv.Atoi(val)
		case key == k.counter():
			f.At, err = strconv.ParseInt(val, 10, 64)
		case key == "for" && (k == Delay || k == StoreSlow):
			f.For, err = time.ParseDuration(val)
		case key == "after" && k.isSignal():
			f.After, err = strconv.Atoi(val)
		case key == "pad" && k.isSignal():
			f.Pad, err = strconv.Atoi(val)
		case key == "ch" && k.isSignal():
			f.Channel, err = strconv.Atoi(val)
		case key == "src" && k.isSignal():
			f.Src, err = strconv.Atoi(val)
		default:
			return Fault{}, fmt.Errorf("fault %q: %s takes no %q", s, k, key)
		}
		if err != nil {
			return Fault{}, fmt.Errorf("fault %q: %s: %w", s, key, err)
		}
	}
	for _, need := range []string{"rank", k.counter()} {
		if !seen[need] {
			return Fault{}, fmt.Errorf("fault %q: missing %s=", s, need)
		}
	}
	if (k == Delay || k == StoreSlow) && !seen["for"] {
		return Fault{}, fmt.Errorf("fault %q: missing for=", s)
	}
	if f.At < 0 || f.After < 0 || f.For < 0 || f.Rank < 0 || f.Pad < 0 || f.Channel < 0 || f.Src < 0 {
		return Fault{}, fmt.Errorf("fault %q: negative value", s)
	}
	return f, nil
}

// FaultSet is which faults a case may draw, and so how it is judged.
type FaultSet int

// The fault sets.
const (
	// FaultsNone injects nothing: liveness (every rank finishes, every
	// result is correct).
	FaultsNone FaultSet = iota
	// FaultsSafety draws the faults the protocol must survive safely:
	// crashes, delays, lost and corrupt signal writes, lost messages, lost
	// and wrong fds, slow and failing Store requests. Judged for safety.
	FaultsSafety
	// FaultsAll adds duplicated signal writes, which the pad protocol
	// cannot detect. Judged for safety: a wrong result here is a finding
	// about the protocol's limits, reported like any other.
	FaultsAll
)

func (s FaultSet) String() string {
	switch s {
	case FaultsNone:
		return "none"
	case FaultsSafety:
		return "safety"
	case FaultsAll:
		return "all"
	}
	return fmt.Sprintf("FaultSet(%d)", int(s))
}

// ParseFaultSet accepts none, safety and all.
func ParseFaultSet(s string) (FaultSet, error) {
	switch s {
	case "none":
		return FaultsNone, nil
	case "safety":
		return FaultsSafety, nil
	case "all":
		return FaultsAll, nil
	}
	return 0, fmt.Errorf("unknown fault set %q (want none, safety or all)", s)
}

// kinds lists the kinds a set draws.
func (s FaultSet) kinds() []Kind {
	switch s {
	case FaultsSafety:
		return []Kind{Crash, Delay, SignalLose, SignalCorrupt, IPCLose, FDLose, FDWrong, StoreSlow, StoreFail}
	case FaultsAll:
		return []Kind{Crash, Delay, SignalLose, SignalCorrupt, SignalDup, IPCLose, FDLose, FDWrong, StoreSlow, StoreFail}
	}
	return nil
}

// counts estimates, per rank, how many device operations, kernel
// launches and Store requests a program makes, which bound where the
// triggers of faults are drawn (a trigger past the end never fires).
func counts(p Program) (ops, launches, requests int) {
	ops, launches, requests = 2, 1, 4
	for _, s := range p.Steps {
		reps := max(s.Replays, 1)
		switch s.Kind {
		case StepRealloc:
			requests += 4
		case StepBarrier, StepSignal:
			ops, launches, requests = ops+6, launches+4, requests+6
		case StepTimeout:
			ops, launches, requests = ops+2, launches+1, requests+6
		default:
			n := len(s.Colls) * reps
			ops, launches, requests = ops+4*n, launches+n, requests+6*len(s.Colls)
		}
	}
	return ops, launches, requests
}

// maxChannel bounds the channels signal faults draw.
const maxChannel = 32

// NewPlan draws the fault plan of a seed for program p: for safety and
// all, one fault in most cases, two or three in some, none in one case of
// six (those are judged for liveness). steps is the estimated run length
// (crash steps are drawn below it) and timeout the ranks' timeout (delays
// range from far below it to above it). The plan depends only on its
// arguments.
func NewPlan(seed uint64, set FaultSet, p Program, steps int64, timeout time.Duration) Plan {
	kinds := set.kinds()
	world := p.World
	if len(kinds) == 0 || world < 1 {
		return nil
	}
	ops, launches, requests := counts(p)
	rng := rand.New(rand.NewPCG(seed, 0xfa0175eed))
	n := []int{0, 1, 1, 1, 2, 3}[rng.IntN(6)]
	steps = max(steps, 1)
	durations := []time.Duration{50 * time.Microsecond, time.Millisecond, 20 * time.Millisecond, timeout / 4, timeout / 2, 2 * timeout}
	var plan Plan
	for range n {
		f := Fault{Kind: kinds[rng.IntN(len(kinds))], Rank: rng.IntN(world)}
		switch f.Kind {
		case Crash:
			f.At = rng.Int64N(steps)
		case Delay:
			f.At = int64(rng.IntN(ops))
			f.For = durations[rng.IntN(len(durations))]
		case SignalLose, SignalCorrupt, SignalDup:
			f.At = int64(rng.IntN(launches))
			f.After = rng.IntN(48)
			f.Pad, f.Channel, f.Src = rng.IntN(world), rng.IntN(maxChannel), rng.IntN(world)
		case IPCLose, FDLose, FDWrong:
			f.At = int64(rng.IntN(max(world-1, 1) * 2))
		case StoreSlow:
			f.At = int64(rng.IntN(requests))
			f.For = durations[rng.IntN(len(durations))]
		case StoreFail:
			f.At = int64(rng.IntN(requests))
		}
		plan = append(plan, f)
	}
	return plan
}
