package sim

import (
	"slices"
	"sync"
)

// regions recycles the bytes of freed physical allocations for later
// allocations of their size or smaller: clearing a fresh 2 MiB granule (or a
// larger allocation) for every new allocation dominated the cost of short
// simulations. Bytes come back when an allocation is freed, or when
// [World.Release] frees what a run left behind (a crashed rank never frees
// its memory). Stale bytes never show: every page of an allocation gets its
// garbage on first touch ([physical.touch]).
var regions = regionCache{max: maxPooledBytes}

// maxPooledBytes bounds the bytes regions keeps (128 MiB).
const maxPooledBytes = 128 << 20

// regionCache keeps idle byte slices, at most max bytes in all; a region
// that would not fit pushes out the regions idle the longest, so that the
// sizes a run allocates now displace those of earlier runs. It holds a few
// dozen regions at most (128 MiB of 2 MiB granules): a list in the order
// they came back serves both. Safe for concurrent use.
type regionCache struct {
	max uint64

	mu   sync.Mutex
	held uint64
	idle [][]byte // the longest idle first
}

// get returns n bytes: the start of the smallest idle region that holds
// them (the newest of that length among equals), holding what its last user
// left, or new bytes. A region served to a smaller allocation comes back
// whole (see put): lending it costs no fresh memory, where keeping it idle
// for its own size would make the allocation miss (runs of the fuzzer
// allocate regions of a few sizes, in changing numbers).
func (c *regionCache) get(n uint64) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	best := -1
	for i := len(c.idle) - 1; i >= 0; i-- {
		if l := uint64(len(c.idle[i])); l >= n && (best < 0 || l < uint64(len(c.idle[best]))) {
			best = i
		}
	}
	if best < 0 {
		return make([]byte, n)
	}
	b := c.idle[best]
	c.idle = slices.Delete(c.idle, best, best+1)
	c.held -= uint64(len(b))
	return b[:n]
}

// put keeps the region b starts (all of it, when a smaller allocation
// took its start) for later gets of its length or less, dropping the
// regions idle the longest while the cache would otherwise hold more than
// max bytes; a region larger than max is not kept.
func (c *regionCache) put(b []byte) {
	b = b[:cap(b)] // the whole region, when a smaller allocation used it
	n := uint64(len(b))
	c.mu.Lock()
	defer c.mu.Unlock()
	if n == 0 || n > c.max {
		return
	}
	for c.held+n > c.max {
		c.held -= uint64(len(c.idle[0]))
		c.idle[0] = nil
		c.idle = c.idle[1:]
	}
	c.idle = append(c.idle, b)
	c.held += n
}

// bytes is how many bytes the cache holds.
func (c *regionCache) bytes() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}
