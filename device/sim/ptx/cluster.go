package ptx

import (
	"fmt"
	"slices"
)

// ClusterBarrierID is the barrier id under which barrier.cluster arrives
// and leaves through [BarrierEnv]: the simulator launches clusters of one
// block, so the cluster barrier is a barrier of the block's threads with
// a separate arrive and wait.
const ClusterBarrierID = NumBarriers + 32

// clusterBar is the cluster barrier of a block: per thread, its arrivals
// so far and whether it arrived and has yet to wait; per phase, the
// largest token its arrivals released.
type clusterBar struct {
	seq     []uint64
	pending []bool
	waitFor []uint64 // 1 + the phase a thread waits for, 0 when it does not wait
	rel     []uint64
}

// clusterDone reports whether phase k of the cluster barrier completed:
// every thread of the block that has not exited arrived at it.
func (mem *BlockMem) clusterDone(k uint64) bool {
	for i, s := range mem.cluster.seq {
		if s <= k && (i/32 >= len(mem.warps) || mem.warps[i/32].state[i%32] != laneExited) {
			return false
		}
	}
	return true
}

// clusterRelease makes the threads waiting at completed phases of the
// cluster barrier runnable (an arrival or an exit may complete one).
func (mem *BlockMem) clusterRelease() {
	for i, w := range mem.cluster.waitFor {
		if w != 0 && mem.clusterDone(w-1) {
			mem.cluster.waitFor[i] = 0
			mem.leave(Dim{Tid: uint32(i)}, laneRunning, 0)
		}
	}
}

// decodeClusterBar decodes barrier.cluster.arrive{.release,.relaxed}
// {.aligned} and barrier.cluster.wait{.acquire}{.aligned}.
func decodeClusterBar(in *inst, mods []string) error {
	in.op = opClusterBar
	// .aligned promises that the warp executes the instruction together;
	// the barrier does not depend on it.
	rest := slices.DeleteFunc(slices.Clone(mods), func(m string) bool { return m == "cluster" || m == "aligned" })
	switch {
	case len(rest) >= 1 && rest[0] == "arrive" && len(rest) <= 2:
		in.bar, in.sem = barArrive, Release
		if len(rest) == 2 {
			switch rest[1] {
			case "release":
			case "relaxed":
				in.sem = Relaxed
			default:
				return unsupported(in)
			}
		}
	case len(rest) >= 1 && rest[0] == "wait" && (len(rest) == 1 || len(rest) == 2 && rest[1] == "acquire"):
		in.bar, in.sem = barSync, Acquire
	default:
		return unsupported(in)
	}
	return nil
}

// clusterBarrier executes barrier.cluster.arrive or .wait in a cluster of
// one block. An arrival of a thread that arrived and has not waited, and
// a wait without an arrival before it, are errors (PTX leaves them
// undefined). The wait returns once every thread of the block that has
// not exited arrived at the phase the thread arrived at; .release
// arrivals release what their threads did, and the wait acquires it.
func (t *Thread) clusterBarrier(in *inst) error {
	mem := t.mem
	cb := &mem.cluster
	if cb.seq == nil {
		n := int(t.dim.Ntid)
		cb.seq, cb.pending, cb.waitFor = make([]uint64, n), make([]bool, n), make([]uint64, n)
	}
	tid := t.dim.Tid
	env, _ := t.env.(BarrierEnv)
	if in.bar == barArrive {
		if cb.pending[tid] {
			return fmt.Errorf("barrier.cluster.arrive again before barrier.cluster.wait (the thread's arrival %d has not been waited for)", cb.seq[tid]-1)
		}
		n := cb.seq[tid]
		cb.seq[tid]++
		cb.pending[tid] = true
		for uint64(len(cb.rel)) <= n {
			cb.rel = append(cb.rel, 0)
		}
		if in.sem == Release && env != nil {
			env.Arrive(ClusterBarrierID, n, &cb.rel[n])
		}
		mem.clusterRelease()
		return nil
	}
	if !cb.pending[tid] {
		return fmt.Errorf("barrier.cluster.wait without a barrier.cluster.arrive before it")
	}
	cb.pending[tid] = false
	k := cb.seq[tid] - 1
	ready := func() bool { return mem.clusterDone(k) }
	if !ready() {
		if env == nil {
			return fmt.Errorf("%s needs an environment that lets threads wait for one another (BarrierEnv)", in.text)
		}
		wp, lane := mem.warps[tid/32], tid%32
		wp.barID[lane] = ClusterBarrierID
		mem.leave(t.dim, laneAtBarrier, in.line)
		cb.waitFor[tid] = k + 1
		what := fmt.Sprintf("the cluster barrier at line %d (phase %d)", in.line, k)
		werr := env.WaitWarp(what, func() bool { return ready() || mem.failure != nil || mem.stuck() })
		if !ready() {
			cb.waitFor[tid] = 0
			switch {
			case mem.failure != nil:
				return errAbandoned
			case werr != nil:
				return werr
			}
			return mem.Deadlock()
		}
		mem.leave(t.dim, laneRunning, 0)
	}
	if in.sem == Acquire && env != nil {
		var arr []Arrival
		for i, s := range cb.seq {
			if s > k && uint32(i) != tid {
				arr = append(arr, Arrival{Thread: uint32(i), N: k})
			}
		}
		env.Leave(ClusterBarrierID, arr, cb.rel[k])
	}
	return nil
}
