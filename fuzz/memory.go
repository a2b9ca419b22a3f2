package fuzz

import (
	"slices"

	"github.com/symmem/symmem/kernels"
)

// MaxPTXCaseMemory bounds the estimated live memory ([EstimatePTXMemory])
// of a case drawn with the kernels' PTX interpreted and the default sizes:
// with the collector letting the heap grow to twice what is live, a
// worker running such a case stays under 1 GB.
const MaxPTXCaseMemory = 400 << 20

// EstimatePTXMemory is about how many bytes of live heap a run of p takes
// at its peak with the kernels' PTX interpreted and the race detector on.
// What costs is the strong accesses: each word a kernel stores or loads
// with a strong access keeps a weak-memory history, a detector record and
// a shadow state for as long as the run (until a later access supersedes
// them), where a warp's plain accesses share one state per page. So the
// low-latency all-reduce, which stores and loads a packet of every 4 bytes
// for every peer, costs about 150 bytes per rank squared and byte; every
// other form about 110 bytes per rank and byte; each call of a collective
// (each replay of a captured one) adds its own, as the low-latency form
// alternates between buffers. Measured live heaps (worlds 2 to 8, 16 KiB
// and 64 KiB) stay within 12% below the estimate, but for the smallest.
func EstimatePTXMemory(p Program) uint64 {
	total := uint64(32 << 20)
	for _, s := range p.Steps {
		reps := uint64(max(s.Replays, 1))
		for _, c := range s.Colls {
			total += reps * collPTXMemory(c.Form, len(p.Groups[c.Group]), c.Bytes)
		}
	}
	return total
}

// collPTXMemory is [EstimatePTXMemory]'s share of one call of a collective
// of form f on w ranks of a tensor of n bytes.
func collPTXMemory(f Form, w int, n uint64) uint64 {
	rw := uint64(w)
	if f == LL {
		return 150*rw*rw*n + rw*(4<<20)
	}
	return 110*rw*n + rw*(1<<20)
}

// fitPTXMemory makes p's estimated memory at most limit: it shrinks the
// collective costing the most, call for call, to the next smaller size of
// sizes that keeps its alignment, until the estimate fits or no tensor can
// shrink. A smaller tensor stays inside the region drawn for it.
func fitPTXMemory(p Program, sizes []uint64, limit uint64) Program {
	sizes = slices.Sorted(slices.Values(sizes))
	p.Steps = slices.Clone(p.Steps)
	for i := range p.Steps {
		p.Steps[i].Colls = slices.Clone(p.Steps[i].Colls)
	}
	for EstimatePTXMemory(p) > limit {
		var big *Coll
		var cost uint64
		for i := range p.Steps {
			s := &p.Steps[i]
			for k := range s.Colls {
				c := &s.Colls[k]
				m := uint64(max(s.Replays, 1)) * collPTXMemory(c.Form, len(p.Groups[c.Group]), c.Bytes)
				if smaller(c, sizes) > 0 && m > cost {
					big, cost = c, m
				}
			}
		}
		if big == nil {
			return p
		}
		big.Bytes = smaller(big, sizes)
	}
	return p
}

// smaller is the largest size of sizes (sorted) below c's that keeps c's
// offset and dtype aligned, 0 when none.
func smaller(c *Coll, sizes []uint64) uint64 {
	for i := len(sizes) - 1; i >= 0; i-- {
		if n := sizes[i]; n < c.Bytes {
			if _, err := kernels.CheckAlignment(c.Offset, n, c.DType); err == nil {
				return n
			}
		}
	}
	return 0
}
