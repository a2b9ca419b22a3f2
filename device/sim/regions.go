package sim

import (
	"slices"
	"sync"
)

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

// get returns n bytes, recycled (the newest idle region of that length,
// holding what its last user left) or new.
func (c *regionCache) get(n uint64) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.idle) - 1; i >= 0; i-- {
		if b := c.idle[i]; uint64(len(b)) == n {
			c.idle = slices.Delete(c.idle, i, i+1)
			c.held -= n
			return b
		}
	}
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
