package sim

import (
	"slices"
	"sync"
)

// regions recycles the bytes of freed physical allocations for later
// allocations of their size or smaller: clearing a fresh 2 MiB granule (or a
// larger allocation) for every new allocation dominated the cost of short
// simulations. Where the system allows, regions are mappings of their own
// outside the Go heap (see [mapRegion]): a page costs memory only once an
// allocation touches it, and idle regions neither count towards the
// collector's heap goal nor get scanned or cleared by it. Bytes come back when an allocation is freed, or when
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
	// cold is the regions of mappings of their own that were pushed out:
	// their pages went back to the system (see [releasePages]), their
	// addresses stay mapped, and fresh allocations take them first. A
	// mapping is never unmapped: bytes a stale slice still reaches read
	// as zeros rather than fault, and the cold regions' addresses cost
	// no memory.
	cold   [][]byte
	mapped map[*byte]bool // the first bytes of the regions that are mappings
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
		return c.fresh(n)
	}
	b := c.idle[best]
	c.idle = slices.Delete(c.idle, best, best+1)
	c.held -= uint64(len(b))
	return b[:n]
}

// fresh returns n bytes that no allocation uses: the start of the
// smallest cold region that holds them, else a mapping of their own (see
// [mapRegion]), else bytes of the Go heap. c.mu is held.
func (c *regionCache) fresh(n uint64) []byte {
	best := -1
	for i, b := range c.cold {
		if l := uint64(len(b)); l >= n && (best < 0 || l < uint64(len(c.cold[best]))) {
			best = i
		}
	}
	if best < 0 {
		if b, ok := mapRegion(n); ok {
			if c.mapped == nil {
				c.mapped = make(map[*byte]bool)
			}
			c.mapped[&b[0]] = true
			return b
		}
		return make([]byte, n)
	}
	b := c.cold[best]
	c.cold = slices.Delete(c.cold, best, best+1)
	return b[:n]
}

// drop gives up an idle region: a region of its own mapping goes to the
// cold list, its pages handed back to the system (it reads as zeros until
// an allocation takes it again, and costs no memory meanwhile); the
// collector reclaims any other. c.mu is held.
func (c *regionCache) drop(b []byte) {
	if c.mapped[&b[0]] {
		releasePages(b)
		c.cold = append(c.cold, b)
	}
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
	if n == 0 {
		return
	}
	if n > c.max {
		c.drop(b)
		return
	}
	for c.held+n > c.max {
		c.held -= uint64(len(c.idle[0]))
		c.drop(c.idle[0])
		c.idle[0] = nil
		c.idle = c.idle[1:]
	}
	c.idle = append(c.idle, b)
	c.held += n
}

// bytes is how many bytes the cache holds (not counting cold regions).
func (c *regionCache) bytes() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// heapBytes is how many of the bytes the cache holds are in the Go heap
// (regions that are not mappings of their own).
func (c *regionCache) heapBytes() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n uint64
	for _, b := range c.idle {
		if !c.mapped[&b[0]] {
			n += uint64(len(b))
		}
	}
	return n
}
