package sim

import (
	"math/bits"
	"slices"
	"sync"
)

// regions recycles the bytes of freed physical allocations for later
// allocations of their size or smaller: clearing a fresh 2 MiB granule (or a
// larger allocation) for every new allocation dominated the cost of short
// simulations. Where the system allows, regions are mappings of their own
// outside the Go heap (see [mapRegion]): a page costs memory only once an
// allocation touches it, and idle regions neither count towards the
// collector's goal nor get cleared. Bytes come back when an allocation is
// freed, or when [World.Release] frees what a run left behind (a crashed
// rank never frees its memory). Stale bytes never show: every page of an
// allocation gets its garbage on first touch ([physical.touch]).
var regions = regionCache{max: maxPooledBytes}

// maxPooledBytes bounds the resident bytes of the regions idle in regions
// (128 MiB).
const maxPooledBytes = 128 << 20

// maxIdleRegions bounds how many regions are idle in a regionCache.
const maxIdleRegions = 1024

// regionCache keeps idle byte slices, at most max resident bytes and
// maxIdleRegions regions in all; a region that would not fit pushes out
// the regions idle the longest, so that the sizes a run allocates now
// displace those of earlier runs. A region of the heap is resident
// whole; of a mapping, only the pages its users touched since its pages
// last went back to the system count (see [regionCache.put]): a 2 MiB
// granule that held a few KiB costs a few KiB. A list in the order the
// regions came back serves both bounds. Safe for concurrent use.
type regionCache struct {
	max uint64

	mu   sync.Mutex
	held uint64       // resident bytes of the idle regions
	idle []idleRegion // the longest idle first
	// cold is the regions of mappings of their own that were pushed out:
	// their pages went back to the system (see [releasePages]), their
	// addresses stay mapped, and fresh allocations take them first. A
	// mapping is never unmapped: bytes a stale slice still reaches read
	// as zeros rather than fault, and the cold regions' addresses cost
	// no memory.
	cold [][]byte
	// touched is, for every region of a mapping of its own (by its first
	// byte), its pages that users touched since its pages last went back
	// to the system, a bit each: its resident pages.
	touched map[*byte][]uint64
}

// idleRegion is an idle region and how many of its bytes are resident.
type idleRegion struct {
	b        []byte
	resident uint64
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
		if l := uint64(len(c.idle[i].b)); l >= n && (best < 0 || l < uint64(len(c.idle[best].b))) {
			best = i
		}
	}
	if best < 0 {
		return c.fresh(n)
	}
	r := c.idle[best]
	c.idle = slices.Delete(c.idle, best, best+1)
	c.held -= r.resident
	return r.b[:n]
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
			if c.touched == nil {
				c.touched = make(map[*byte][]uint64)
			}
			c.touched[&b[0]] = make([]uint64, (pagesOf(n)+63)/64)
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
	if t, ok := c.touched[&b[0]]; ok {
		releasePages(b)
		clear(t)
		c.cold = append(c.cold, b)
	}
}

// resident adds the pages of b that filled marks (a bit per page, nil:
// none) to those its users touched, and returns its resident bytes: all
// of them for a region of the heap. c.mu is held.
func (c *regionCache) resident(b []byte, filled []uint64) uint64 {
	t, ok := c.touched[&b[0]]
	if !ok {
		return uint64(len(b))
	}
	var pages int
	for i := range t {
		if i < len(filled) {
			t[i] |= filled[i]
		}
		pages += bits.OnesCount64(t[i])
	}
	return min(uint64(pages)*pageSize, uint64(len(b)))
}

// pagesOf is the number of pages that n bytes span.
func pagesOf(n uint64) uint64 { return (n + pageSize - 1) / pageSize }

// put keeps the region b starts (all of it, when a smaller allocation
// took its start) for later gets of its length or less, dropping the
// regions idle the longest while the cache would otherwise hold more than
// max resident bytes or maxIdleRegions regions; a region with more
// resident bytes than max is not kept. filled marks the pages of b its
// last user touched, a bit each.
func (c *regionCache) put(b []byte, filled []uint64) {
	b = b[:cap(b)] // the whole region, when a smaller allocation used it
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(b) == 0 {
		return
	}
	n := c.resident(b, filled)
	if n > c.max {
		c.drop(b)
		return
	}
	for len(c.idle) > 0 && (c.held+n > c.max || len(c.idle) >= maxIdleRegions) {
		c.held -= c.idle[0].resident
		c.drop(c.idle[0].b)
		c.idle[0] = idleRegion{}
		c.idle = c.idle[1:]
	}
	c.idle = append(c.idle, idleRegion{b, n})
	c.held += n
}

// bytes is how many resident bytes the cache holds.
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
	for _, r := range c.idle {
		if _, mapped := c.touched[&r.b[0]]; !mapped {
			n += uint64(len(r.b))
		}
	}
	return n
}
