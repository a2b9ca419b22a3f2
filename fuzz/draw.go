package fuzz

import (
	"math/rand/v2"
	"runtime"
	"slices"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

// DefaultAlgos are the algorithms the fuzzer draws from: every form of
// one-shot and two-shot, the low-latency all-reduce, and (for auto) the
// intra-node service, which picks one of the first two itself.
var DefaultAlgos = []workload.Algo{workload.OneShot, workload.TwoShot, workload.LowLatency, workload.Auto}

// DefaultWorlds are the world sizes the fuzzer draws from.
var DefaultWorlds = []int{2, 3, 4, 5, 6, 7, 8}

// forms lists the collective forms algos allow on a world of w ranks.
func forms(algos []workload.Algo, w int) []Form {
	var out []Form
	for _, a := range algos {
		switch a {
		case workload.OneShot:
			out = append(out, OneShot, OneShotOut, OneShotCopy)
		case workload.TwoShot:
			out = append(out, TwoShot, TwoShotOut)
		case workload.LowLatency:
			out = append(out, LL)
		case workload.Auto:
			if w >= 2 && w <= 8 {
				out = append(out, IntraNode)
			}
		}
	}
	if len(out) == 0 {
		out = []Form{OneShot}
	}
	return out
}

// slots is how many tensors of one group fit side by side in a buffer, so
// that the collectives of one batch never overlap.
const slots = 3

// largeShare is one over the share of collectives that draw from
// DefaultLargeSizes when no sizes are given.
const largeShare = 64

// largeShareIntraNode is largeShare for the intra-node service, whose
// two-shot path only sizes past 256 KiB take.
const largeShareIntraNode = 12

// maxDrawnMemory bounds the simulator's memory estimate
// ([simjob.EstimateSimMemory]) of a large tensor drawn by default.
const maxDrawnMemory = 256 << 20

// DrawProgram draws the program of a seed: a world size from worlds (nil:
// DefaultWorlds), up to two subgroups, one or two buffers, and two to six
// steps: single, back-to-back asynchronous and captured collectives of the
// forms algos allow (nil: DefaultAlgos) on sizes from sizes, signal
// barriers and point-to-point signals with peer reads, waits that nothing
// signals (which must time out), and re-allocations. With sizes nil, a
// collective draws from DefaultSizes, or one time in largeShare (in
// largeShareIntraNode for the intra-node service) from DefaultLargeSizes (those the simulator's memory estimate allows on the
// world; the low-latency form stops at its largest size). Every group's
// tensors lie in a region of their own in each buffer, so groups
// interleave on one allocation. The program depends only on its
// arguments.
func DrawProgram(seed uint64, worlds []int, sizes []uint64, algos []workload.Algo) Program {
	if worlds == nil {
		worlds = DefaultWorlds
	}
	mixed := sizes == nil
	if mixed {
		sizes = DefaultSizes
	}
	if algos == nil {
		algos = DefaultAlgos
	}
	rng := rand.New(rand.NewPCG(seed, 0xca5e5eed))
	w := worlds[rng.IntN(len(worlds))]
	p := Program{World: w, Groups: [][]int{make([]int, w)}}
	for i := range w {
		p.Groups[0][i] = i
	}
	switch {
	case w == 2 && rng.IntN(4) == 0:
		p.Groups = append(p.Groups, []int{0, 1}) // the world's ranks under another name
	case w >= 3:
		for range rng.IntN(3) {
			n := 2 + rng.IntN(w-2)
			g := rng.Perm(w)[:n]
			slices.Sort(g)
			p.Groups = append(p.Groups, g)
		}
	}
	nbufs := 1 + rng.IntN(2)
	pool := forms(algos, w)
	var capturable []Form
	for _, f := range pool {
		if f.capturable() {
			capturable = append(capturable, f)
		}
	}
	dtypes := []device.DType{device.Float32, device.Float32, device.BFloat16, device.Float16}
	ops := []device.ReduceOp{device.Sum, device.Sum, device.Avg, device.Max, device.Min}
	offsets := []uint64{0, 0, 4, 8, 16}
	// Offsets are relative to the tensor's slot until the slot size is
	// known.
	type placed struct {
		step, item, slot int
	}
	var where []placed
	item := func(forms []Form) Coll {
		c := Coll{
			Form: forms[rng.IntN(len(forms))], Group: rng.IntN(len(p.Groups)), Buf: rng.IntN(nbufs),
			Bytes: sizes[rng.IntN(len(sizes))], DType: dtypes[rng.IntN(len(dtypes))], Op: ops[rng.IntN(len(ops))],
			Offset: offsets[rng.IntN(len(offsets))],
		}
		share := largeShare
		if c.Form == IntraNode {
			share = largeShareIntraNode
		}
		if mixed && rng.IntN(share) == 0 {
			if n := DefaultLargeSizes[rng.IntN(len(DefaultLargeSizes))]; simjob.EstimateSimMemory(w, n) <= maxDrawnMemory {
				c.Bytes = n
			}
		}
		if c.Form == LL {
			c.Bytes = min(c.Bytes, rank.LowLatencyMaxBytes)
		}
		if c.Form == IntraNode {
			c.Group, c.Op = 0, device.Sum
		}
		if _, err := kernels.CheckAlignment(c.Offset, c.Bytes, c.DType); err != nil {
			c.Offset = 0
		}
		if _, err := kernels.CheckAlignment(c.Offset, c.Bytes, c.DType); err != nil {
			c.DType = device.Float32
		}
		return c
	}
	n := 2 + rng.IntN(5)
	for i := range n {
		kinds := []StepKind{StepColl, StepColl, StepColl, StepColl, StepAsync, StepAsync, StepCapture, StepBarrier, StepSignal, StepTimeout}
		if i > 0 {
			kinds = append(kinds, StepRealloc)
		}
		s := Step{Kind: kinds[rng.IntN(len(kinds))]}
		if s.Kind == StepCapture && len(capturable) == 0 {
			s.Kind = StepColl
		}
		switch s.Kind {
		case StepRealloc:
			s.Buf = rng.IntN(nbufs)
		case StepTimeout:
			s.Region = Coll{Group: rng.IntN(len(p.Groups)), Buf: rng.IntN(nbufs)}
			s.Channel = rng.IntN(8)
		case StepBarrier, StepSignal:
			s.Region = Coll{Group: rng.IntN(len(p.Groups)), Buf: rng.IntN(nbufs), DType: device.Float32, Op: device.Sum,
				Bytes: min(sizes[rng.IntN(len(sizes))], 1024), Offset: offsets[rng.IntN(len(offsets))]}
			s.Channel = rng.IntN(8)
			where = append(where, placed{step: i, item: -1, slot: rng.IntN(slots)})
		default:
			count := []int{1, 1, 1, 2}[rng.IntN(4)]
			pick := pool
			switch s.Kind {
			case StepAsync:
				count = 2 + rng.IntN(2)
			case StepCapture:
				count, pick, s.Replays = 1+rng.IntN(2), capturable, 1+rng.IntN(3)
			}
			for k := range count {
				c := item(pick)
				if k > 0 && rng.IntN(2) == 0 {
					// Back to back: the same form on the same group,
					// as a loop of one collective makes them.
					prev := s.Colls[k-1]
					c.Form, c.Group = prev.Form, prev.Group
					if c.Form == IntraNode {
						c.Op = device.Sum
					}
					if c.Form == LL {
						c.Bytes = min(c.Bytes, rank.LowLatencyMaxBytes)
					}
				}
				s.Colls = append(s.Colls, c)
				where = append(where, placed{step: i, item: k, slot: k % slots})
			}
		}
		p.Steps = append(p.Steps, s)
	}
	// Lay out the slots: each buffer holds, one after the other, the slots
	// of each group that use it, each as long as its largest tensor (with
	// its offset and guards).
	type slotKey struct{ buf, group, slot int }
	extent := map[slotKey]uint64{}
	key := func(at placed) (slotKey, *Coll) {
		c := &p.Steps[at.step].Region
		if at.item >= 0 {
			c = &p.Steps[at.step].Colls[at.item]
		}
		return slotKey{c.Buf, c.Group, at.slot}, c
	}
	for _, at := range where {
		k, c := key(at)
		extent[k] = max(extent[k], (c.Offset+c.Bytes+2*guardBytes+63)&^63)
	}
	base := map[slotKey]uint64{}
	p.Bufs = make([]uint64, nbufs)
	for b := range nbufs {
		at := uint64(0)
		for g := range p.Groups {
			for k := range slots {
				if n, ok := extent[slotKey{b, g, k}]; ok {
					base[slotKey{b, g, k}] = at
					at += n
				}
			}
		}
		p.Bufs[b] = max(at, 64)
	}
	for _, at := range where {
		k, c := key(at)
		c.Offset += base[k] + guardBytes
	}
	return p
}

// EstimateSteps is about how many scheduling steps a fault-free run of p
// takes: what PCT spreads its change points over and crash faults are
// drawn below. It grows with the collectives, the ranks taking part and
// the rendezvous the program needs.
func EstimateSteps(p Program) int64 {
	var steps int64 = 40 * int64(p.World)
	type use struct{ buf, group int }
	seen := map[use]bool{}
	rendezvous := func(buf, group int) {
		if !seen[use{buf, group}] {
			seen[use{buf, group}] = true
			w := int64(len(p.Groups[group]))
			steps += 60*w + 6*w*w
		}
	}
	for _, s := range p.Steps {
		switch s.Kind {
		case StepRealloc:
			for u := range seen {
				if u.buf == s.Buf {
					delete(seen, u)
				}
			}
			steps += 4 * int64(p.World)
		case StepBarrier, StepSignal, StepTimeout:
			rendezvous(s.Region.Buf, s.Region.Group)
			w := int64(len(p.Groups[s.Region.Group]))
			steps += 20*w + 4*w*w
		default:
			reps := int64(max(s.Replays, 1))
			for _, c := range s.Colls {
				rendezvous(c.Buf, c.Group)
				w := int64(len(p.Groups[c.Group]))
				vecs := int64(c.Bytes/16) + 1
				steps += reps * (20*w + 8*w*w + w*min(vecs, 64))
			}
		}
	}
	return steps
}

// StepBudget is the step bound of a run of p when none is given: ample for
// a fault-free run, so that reaching it means a livelock. It is
// DefaultMaxSteps or, for a larger program, eight times its estimated
// length ([EstimateSteps]); with the kernels' PTX interpreted (ptx), whose
// every thread's access to peer memory is a scheduling point, it adds for
// each collective twice its ranks squared times its bytes over two (the
// low-latency all-reduce, the costliest, stores and loads a packet per 4
// bytes, per peer, per rank).
func StepBudget(p Program, ptx bool) int64 {
	budget := 8 * EstimateSteps(p)
	if ptx {
		for _, s := range p.Steps {
			for _, c := range s.Colls {
				w := int64(len(p.Groups[c.Group]))
				budget += 2 * int64(max(s.Replays, 1)) * w * w * int64(c.Bytes/2)
			}
		}
	}
	return max(budget, DefaultMaxSteps)
}

// DefaultConfig is the configuration `symmem fuzz` runs with its default
// flags: a thousand seeds of drawn programs under the portfolio strategy,
// safety faults, the race detector on, each case's step bound sized from
// its program, every failure shrunk, one worker per CPU.
func DefaultConfig() Config {
	return Config{
		Seeds: 1000, Strategy: StrategyPortfolio, Depth: DefaultDepth, Faults: FaultsSafety,
		Workers: min(runtime.NumCPU(), MaxWorkers), Worlds: DefaultWorlds, Algos: DefaultAlgos,
		Timeout: DefaultTimeout, Race: true, Shrink: true, Budget: DefaultShrinkRuns, ShrinkTime: DefaultShrinkTime,
	}
}
