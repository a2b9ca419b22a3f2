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
// safe for concurrent use.
type regionCache struct {
	max uint64

	mu   sync.Mutex
	held uint64
	idle map[uint64][][]byte
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
		c.mu.Unlock()
		return b
	}
	c.mu.Unlock()
	return make([]byte, n)
}

// put keeps b for a later get of its length, unless the cache would then
// hold more than max bytes.
func (c *regionCache) put(b []byte) {
	n := uint64(len(b))
	c.mu.Lock()
	defer c.mu.Unlock()
	if n == 0 || c.held+n > c.max {
		return
	}
	if c.idle == nil {
		c.idle = map[uint64][][]byte{}
	}
	c.idle[n] = append(c.idle[n], b)
	c.held += n
}

// bytes is how many bytes the cache holds.
func (c *regionCache) bytes() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}
