package sim

import (
	"runtime"
	"slices"
	"sync"
)

// Host memory for simulated physical allocations.
//
// A physical allocation's bytes come from [hostRegions]: on Linux, anonymous
// memory mapped outside the Go heap, so that the bytes an allocation never
// touches cost neither a clear nor a page of the host's memory (a 2 MiB
// granule of which a kernel touches 4 KiB costs 4 KiB), and a freed
// allocation's region is kept for the next allocation of its size. Elsewhere
// the bytes are a Go slice, cleared by the runtime.
//
// Stale bytes never show: every page of an allocation gets its garbage on
// first touch ([physical.touch]).

// hostRegions hands out and takes back the bytes of physical allocations.
var hostRegions = regionCache{resident: maxResidentBytes}

// maxResidentBytes bounds the bytes of idle regions that keep their pages
// (128 MiB): reusing them costs no page faults. Beyond it, an idle region
// gives its pages back to the host and keeps only its addresses.
const maxResidentBytes = 128 << 20

// regionCache keeps idle regions by size, safe for concurrent use.
type regionCache struct {
	resident uint64 // idle bytes that keep their pages, at most

	mu   sync.Mutex
	warm uint64 // idle bytes that kept their pages
	idle map[uint64][]region
}

// region is an idle region: its bytes, and whether they kept their pages.
type region struct {
	b    []byte
	warm bool
}

// hostBytes is the region of a live physical allocation. A physical
// allocation that becomes unreachable without being freed (a world never
// released) hands its region back through a cleanup.
type hostBytes struct{ b []byte }

// get gives the allocation p n bytes, holding whatever their last user
// left in them.
func (c *regionCache) get(p *physical, n uint64) error {
	c.mu.Lock()
	var b []byte
	if l := c.idle[n]; len(l) > 0 {
		r := l[len(l)-1]
		l[len(l)-1] = region{}
		c.idle[n] = l[:len(l)-1]
		if r.warm {
			c.warm -= n
		}
		b = r.b
	}
	c.mu.Unlock()
	if b == nil {
		var err error
		if b, err = mapRegion(n); err != nil {
			return err
		}
	}
	p.data, p.host = b, &hostBytes{b: b}
	if mapped {
		runtime.AddCleanup(p, c.put, p.host)
	}
	return nil
}

// put takes back the region of h, once.
func (c *regionCache) put(h *hostBytes) {
	b := h.b
	if b == nil {
		return
	}
	h.b = nil
	n := uint64(len(b))
	c.mu.Lock()
	defer c.mu.Unlock()
	warm := c.warm+n <= c.resident
	if !warm && !mapped {
		return // heap bytes that cannot stay warm go to the garbage collector
	}
	if warm {
		c.warm += n
	} else {
		dropPages(b)
	}
	if c.idle == nil {
		c.idle = map[uint64][]region{}
	}
	c.idle[n] = append(c.idle[n], region{b: b, warm: warm})
}

// warmBytes is how many idle bytes keep their pages.
func (c *regionCache) warmBytes() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.warm
}

// idleRegions returns the idle regions, largest size first.
func (c *regionCache) idleRegions() []region {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []region
	sizes := make([]uint64, 0, len(c.idle))
	for n := range c.idle {
		sizes = append(sizes, n)
	}
	slices.Sort(sizes)
	for _, n := range slices.Backward(sizes) {
		out = append(out, c.idle[n]...)
	}
	return out
}
