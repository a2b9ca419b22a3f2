package sim

import "sync"

// regions recycles the bytes of freed physical allocations for later
// allocations of the same size: clearing a fresh 2 MiB granule (or a
// larger allocation) for every new allocation dominated the cost of short
// simulations. Bytes come back when an allocation is freed, or when
// [World.Release] frees what a run left behind (a crashed rank never frees
// its memory). Stale bytes never show: every page of an allocation gets its
// garbage on first touch ([physical.touch]).
var regions = regionCache{max: maxPooledBytes}

// maxPooledBytes bounds the bytes regions keeps (128 MiB).
const maxPooledBytes = 128 << 20

// regionCache keeps idle byte slices by length, at most max bytes in all;
// a region that would not fit pushes out the regions idle the longest, so
// that the sizes a run allocates now displace those of earlier runs. Safe
// for concurrent use.
type regionCache struct {
	max uint64

	mu   sync.Mutex
	held uint64
	idle map[uint64][][]byte // by length, the longest idle first
	// order is the lengths of the idle regions, one entry per region, the
	// longest idle first.
	order []uint64
}

// get returns n bytes, recycled (holding what their last user left) or
// new.
func (c *regionCache) get(n uint64) []byte {
	c.mu.Lock()
	if l := c.idle[n]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		c.idle[n] = l[:len(l)-1]
		c.held -= n
		// The region taken is the newest of its length: drop the last
		// entry of that length from order.
		for i := len(c.order) - 1; i >= 0; i-- {
			if c.order[i] == n {
				c.order = append(c.order[:i], c.order[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		return b
	}
	c.mu.Unlock()
	return make([]byte, n)
}

// put keeps b for a later get of its length, dropping the regions idle the
// longest while the cache would otherwise hold more than max bytes; a
// region larger than max is not kept.
func (c *regionCache) put(b []byte) {
	n := uint64(len(b))
	c.mu.Lock()
	defer c.mu.Unlock()
	if n == 0 || n > c.max {
		return
	}
	for c.held+n > c.max {
		m := c.order[0]
		c.order = c.order[1:]
		l := c.idle[m]
		l[0] = nil
		c.idle[m] = l[1:]
		c.held -= m
	}
	if c.idle == nil {
		c.idle = map[uint64][][]byte{}
	}
	c.idle[n] = append(c.idle[n], b)
	c.order = append(c.order, n)
	c.held += n
}

// bytes is how many bytes the cache holds.
func (c *regionCache) bytes() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}
