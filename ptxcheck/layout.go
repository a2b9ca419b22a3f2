package ptxcheck

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
)

// layout is where the buffers of one run are: every rank's buffers as
// every device maps them, and the pointer tables the harness passes by
// address, so that reports name an address by buffer and offset, and a
// kernel's access outside all of them is a finding. It also numbers the
// ranks' streams as the harness does. The ranks fill it as they set up;
// only one task of a run runs at a time.
type layout struct {
	regions []region // sorted by base
	hit     region   // the region of the last access inside one
	streams map[streamKey]int
	// stray are the accesses of kernels outside every region, by key, in
	// the order first met.
	stray map[string]*strayAccess
	order []string
	// step is the harness step each device's host is running; ops the
	// step that enqueued each host operation (a memset, a write), so a
	// report names it.
	step map[int]string
	ops  map[opKey]string
}

// opKey names a stream operation of a device.
type opKey struct {
	dev    int
	stream device.Stream
	seq    uint64
}

// region is one declared buffer of one rank as one device maps it, or
// one pointer table.
type region struct {
	base, end uint64
	name      string // the buffer's
	owner     int    // the rank whose buffer it is
	dev       int    // the device that maps it here
	table     bool   // the device array of every rank's address of the buffer
}

type streamKey struct {
	dev    int
	stream device.Stream
}

// strayAccess is the farthest access of one site outside the buffers.
type strayAccess struct {
	access sim.Access
	where  string // the buffer it missed and by how far
	by     uint64 // how far
}

func newLayout() *layout {
	return &layout{streams: map[streamKey]int{}, stray: map[string]*strayAccess{}, step: map[int]string{}, ops: map[opKey]string{}}
}

// running records that device dev's host runs step what (a step's
// description, "step 2 (memset flags)"), and returns what restores the
// step it ran before.
func (l *layout) running(dev int, what string) (restore func()) {
	prev := l.step[dev]
	l.step[dev] = what
	return func() { l.step[dev] = prev }
}

// opStep is the harness step that enqueued a host operation, "" when not
// known (the setup's zeroing of signal buffers, for one). An operation of
// a captured graph is its replay's, which the graph step enqueues.
func (l *layout) opStep(dev int, s device.Stream, seq uint64) string {
	return l.ops[opKey{dev, s, seq}]
}

// add records a region.
func (l *layout) add(r region) {
	l.regions = slices.Insert(l.regions, startingBy(l.regions, r.base), r)
}

// stream records that stream s of device dev is the harness's stream k.
func (l *layout) stream(dev int, s device.Stream, k int) { l.streams[streamKey{dev, s}] = k }

// streamOf is the harness's number of a device's stream, -1 when the
// harness did not make it.
func (l *layout) streamOf(dev int, s device.Stream) int {
	if k, ok := l.streams[streamKey{dev, s}]; ok {
		return k
	}
	return -1
}

// find returns the region holding addr, or else the region whose
// allocation holds it: a buffer's allocation is whole granules of the
// device (device.Granularity), the buffer at its end but for padding, so
// an address of the granules a buffer ends in is past its end (past is
// true), one of the granules it starts in before its start; ok is false
// when no allocation of a region holds addr.
func (l *layout) find(addr uint64) (r region, past, ok bool) {
	const g = device.Granularity
	i := startingBy(l.regions, addr) // regions[:i] start at or before addr
	if i > 0 {
		r = l.regions[i-1]
		if addr < r.end {
			return r, false, true
		}
		if addr < (r.end+g-1)/g*g {
			return r, true, true
		}
	}
	if i < len(l.regions) && addr >= l.regions[i].base/g*g {
		return l.regions[i], false, true
	}
	return region{}, false, false
}

// startingBy is the number of regions of rs that start at or before addr.
func startingBy(rs []region, addr uint64) int {
	lo, hi := 0, len(rs)
	for lo < hi {
		m := (lo + hi) / 2
		if rs[m].base <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// what names a region: "flags of rank 1" or "the pointer table of flags on
// rank 1".
func (r region) what() string {
	if r.table {
		return fmt.Sprintf("the pointer table of %s on rank %d", r.name, r.dev)
	}
	return fmt.Sprintf("%s of rank %d", r.name, r.owner)
}

// name names addr by buffer and offset ("flags+0x40 of rank 1"), and how
// far outside the buffer it is when it is; the address itself when no
// buffer is near.
func (l *layout) name(addr uint64) string {
	r, past, ok := l.find(addr)
	switch {
	case !ok:
		return fmt.Sprintf("%#x (outside every buffer the harness declared)", addr)
	case r.table:
		s := fmt.Sprintf("the pointer table of %s on rank %d", r.name, r.dev)
		if addr != r.base {
			s = fmt.Sprintf("%s+%#x", s, addr-r.base)
		}
		if past || addr < r.base {
			s += " (outside it)"
		}
		return s
	case addr < r.base:
		return fmt.Sprintf("%s-%#x of rank %d (before its start)", r.name, r.base-addr, r.owner)
	case past:
		return fmt.Sprintf("%s+%#x of rank %d (past its %d bytes)", r.name, addr-r.base, r.owner, r.end-r.base)
	}
	return fmt.Sprintf("%s+%#x of rank %d", r.name, addr-r.base, r.owner)
}

// addrText is an address in a message of the simulator.
var addrText = regexp.MustCompile(`0x[0-9a-f]{6,16}`)

// streamText is a device's stream in a message of the simulator.
var streamText = regexp.MustCompile(`device (\d+) stream (\d+)`)

// rewrite names the addresses of s by buffer and offset, and the streams
// by the harness's numbers.
func (l *layout) rewrite(s string) string {
	s = streamText.ReplaceAllStringFunc(s, func(m string) string {
		sub := streamText.FindStringSubmatch(m)
		dev, err1 := strconv.Atoi(sub[1])
		st, err2 := strconv.ParseUint(sub[2], 10, 64)
		if err1 != nil || err2 != nil {
			return m
		}
		if k := l.streamOf(dev, device.Stream(st)); k >= 0 {
			return fmt.Sprintf("device %d stream %d", dev, k)
		}
		return m
	})
	return addrText.ReplaceAllStringFunc(s, func(m string) string {
		a, err := strconv.ParseUint(m[2:], 16, 64)
		if err != nil {
			return m
		}
		if len(l.regions) == 0 || a < l.regions[0].base/device.Granularity*device.Granularity {
			return m // not a device address
		}
		return l.name(a)
	})
}

// observe checks an access of a kernel thread against the regions: one
// not wholly inside one region is recorded under its site.
func (l *layout) observe(c *compiled, a *sim.Access) {
	if a.Kind == sim.Enqueue && a.Kernel == "" {
		if step := l.step[a.Device]; step != "" {
			l.ops[opKey{a.Device, a.Stream, a.Seq}] = step
		}
		return
	}
	if a.Kind != sim.Load && a.Kind != sim.Store && a.Kind != sim.Atomic || a.Size == 0 ||
		a.Kernel == "" || a.Block < 0 || a.Shared || a.Phys>>62 != 0 {
		return
	}
	lo, hi := uint64(a.Addr), uint64(a.Addr)+a.Size
	if lo >= l.hit.base && hi <= l.hit.end {
		return // inside the region of the last access checked
	}
	i := startingBy(l.regions, lo)
	if i > 0 && lo < l.regions[i-1].end && hi <= l.regions[i-1].end {
		l.hit = l.regions[i-1]
		return
	}
	r, _, ok := l.find(lo)
	var where string
	var by uint64
	switch {
	case !ok:
		where, by = "outside every buffer the harness declared", 0
	case lo >= r.base: // past the end, or from inside over it
		where, by = fmt.Sprintf("%d bytes past the end of %s (%d bytes)", hi-r.end, r.what(), r.end-r.base), hi-r.end
	default:
		where, by = fmt.Sprintf("%d bytes before the start of %s (%d bytes)", r.base-lo, r.what(), r.end-r.base), r.base-lo
	}
	key := "bounds " + c.site(*a) + " " + r.name
	if r.table {
		key += " table"
	}
	s := l.stray[key]
	if s == nil {
		s = &strayAccess{}
		l.stray[key] = s
		l.order = append(l.order, key)
	} else if by <= s.by {
		return
	}
	s.access, s.where, s.by = *a, where, by
	s.access.From = nil // the simulator's scratch: not kept
}

// strayFindings are the findings of the accesses outside the buffers.
func (l *layout) strayFindings(c *compiled) []*Finding {
	var out []*Finding
	for _, key := range l.order {
		s := l.stray[key]
		out = append(out, &Finding{Kind: "bounds", key: key,
			Title:   fmt.Sprintf("out of bounds: %s reaches %s", c.site(s.access), s.where),
			Details: []string{"farthest: " + c.access(l, s.access)}})
	}
	return out
}
