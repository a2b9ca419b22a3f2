package sim

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/signal"
)

// Virtual address layout: device i's addresses are
// [spaceBase + i<<spaceShift, spaceBase + (i+1)<<spaceShift), so a pointer
// used on the wrong device is recognised and reported as such.
const (
	spaceBase  = device.Ptr(0x7f00_0000_0000)
	spaceShift = 36
	spaceSize  = uint64(1) << spaceShift
)

// physical is one physical allocation. Its bytes live while a handle, a
// mapping or an open fd refers to it. Pages get their garbage on first
// touch, so untouched memory costs the host nothing.
type physical struct {
	id      uint64
	owner   int // device that created it
	data    []byte
	filled  []uint64 // bit per page: garbage written
	handles int
	maps    int
	fds     int
	// weak holds the histories of the locations strong stores wrote (see
	// weak.go); nil until the first.
	weak *weakMemOf
	// watches are the bells of the tasks waiting for bytes of p to
	// change, with the bytes they read, by the watchBucket bytes their
	// first byte falls in, each bucket in the order the watches came: a
	// write to one of their bytes, or p's free, rings them (see
	// [actor.Bell]). widest is the most bytes a watch ever had, so that
	// a write visits the buckets of its own bytes and of the widest
	// bytes before them only. (The lanes of a launch may watch thousands
	// of words of one allocation, coming and going at every spin: one
	// sorted list moved thousands of watches at each.)
	watches map[uint64][]watch
	widest  uint64
}

// watch is a bell that rings on every write to a run of bytes of a
// physical allocation.
type watch struct {
	lo, hi uint64 // the bytes [lo, hi)
	bell   *actor.Bell
}

// watch rings bell on every write to a byte of [off, off+n) of p, and
// when p is freed, until unwatch. The waits that watch read only those
// bytes: a write elsewhere, even to the same word or page, cannot change
// what they wait for (signal pads share their allocations with data,
// written at nearly every step).
func (p *physical) watch(off, n uint64, bell *actor.Bell) {
	w := watch{off, off + max(n, 1), bell}
	p.widest = max(p.widest, w.hi-w.lo)
	if p.watches == nil {
		p.watches = map[uint64][]watch{}
	}
	p.watches[off/watchBucket] = append(p.watches[off/watchBucket], w)
}

// watchBucket is the bytes of p whose watches (by their first byte) share
// a bucket.
const watchBucket = 256

// unwatch stops the rings of watch(off, n, bell).
func (p *physical) unwatch(off uint64, bell *actor.Bell) {
	k := off / watchBucket
	ws := p.watches[k]
	for i, w := range ws {
		if w.lo == off && w.bell == bell {
			if ws = slices.Delete(ws, i, i+1); len(ws) == 0 {
				delete(p.watches, k)
			} else {
				p.watches[k] = ws
			}
			return
		}
	}
}

// written rings the bells that watch a byte of [off, off+n), a range
// about to be written: of the watches that start from off-widest+1 to
// off+n-1, those that end after off. (Ringing is the same in any order:
// a bell makes its waiters ask their conditions again.)
func (p *physical) written(off, n uint64) {
	from := uint64(0)
	if off >= p.widest {
		from = off - p.widest + 1
	}
	first, last := from/watchBucket, (off+n-1)/watchBucket
	if last-first >= uint64(len(p.watches)) {
		// A write longer than the buckets there are: visit those.
		for _, k := range p.watchBuckets() {
			ringWritten(p.watches[k], off, n)
		}
		return
	}
	for k := first; k <= last; k++ {
		if ws, ok := p.watches[k]; ok {
			ringWritten(ws, off, n)
		}
	}
}

// ringWritten rings the bells of ws that watch a byte of [off, off+n).
func ringWritten(ws []watch, off, n uint64) {
	for _, w := range ws {
		if w.lo < off+n && off < w.hi {
			w.bell.Ring()
		}
	}
}

// watchBuckets is the buckets of p's watches, in order.
func (p *physical) watchBuckets() []uint64 {
	return slices.Sorted(maps.Keys(p.watches))
}

// pageSize is the unit in which fresh memory receives its garbage: small,
// so that a run touching a few bytes of a 2 MiB granule fills little.
const pageSize = 4 << 10

func newPhysical(id uint64, owner int, size uint64) *physical {
	p := &physical{id: id, owner: owner, handles: 1, data: regions.get(size)}
	pages := (size + pageSize - 1) / pageSize
	p.filled = make([]uint64, (pages+63)/64)
	return p
}

// touch gives every page of [off, off+n) its garbage if it has none yet.
// The pattern of a page depends only on the allocation and the page index.
func (p *physical) touch(off, n uint64) {
	if n == 0 {
		return
	}
	for pg := off / pageSize; pg <= (off+n-1)/pageSize; pg++ {
		if bit := uint64(1) << (pg % 64); p.filled[pg/64]&bit == 0 {
			p.filled[pg/64] |= bit
			end := min((pg+1)*pageSize, p.size())
			garbage(p.data[pg*pageSize:end], p.id<<32^pg)
		}
	}
}

func (p *physical) size() uint64 { return uint64(len(p.data)) }

func (p *physical) freed() bool { return p.data == nil }

func (p *physical) free() {
	if p.data != nil {
		regions.put(p.data, p.filled)
	}
	for _, k := range p.watchBuckets() {
		for _, w := range p.watches[k] {
			w.bell.Ring()
		}
	}
	if p.weak != nil {
		p.weak.freed = true // dropped at a settle or the next allocation's first history (dropFreed)
	}
	p.data, p.filled, p.weak, p.watches = nil, nil, nil, nil
}

// garbage fills b with a pattern derived from seed, standing in for the
// stale contents of fresh GPU memory: garbageRun bytes of splitmix64
// output, repeated (copying is much cheaper than drawing every word).
func garbage(b []byte, seed uint64) {
	x := seed
	run := min(len(b), garbageRun)
	for i := 0; i+8 <= run; i += 8 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		binary.LittleEndian.PutUint64(b[i:], z^(z>>31))
	}
	for n := run; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// garbageRun is the length of the pattern garbage repeats.
const garbageRun = 256

type reservation struct {
	base device.Ptr
	size uint64
}

func (r reservation) end() device.Ptr { return r.base.Add(r.size) }

type mapping struct {
	base   device.Ptr
	size   uint64
	phys   *physical
	access bool
}

func (m *mapping) end() device.Ptr { return m.base.Add(m.size) }

// space is one device's virtual address space: reserved ranges and the
// mappings inside them, both sorted by address.
type space struct {
	dev  int
	lo   device.Ptr
	res  []reservation
	maps []*mapping
}

func newSpace(dev int) space {
	return space{dev: dev, lo: spaceBase + device.Ptr(uint64(dev)<<spaceShift)}
}

// FaultError reports an invalid access to device memory.
type FaultError struct {
	Device int
	Addr   device.Ptr
	Size   uint64
	Write  bool
	Reason string
}

func (e *FaultError) Error() string {
	kind := "read"
	if e.Write {
		kind = "write"
	}
	return fmt.Sprintf("device %d: invalid %s of %d bytes at %v: %s", e.Device, kind, e.Size, e.Addr, e.Reason)
}

func checkGranular(what string, p device.Ptr, size uint64) error {
	if size == 0 || size%device.Granularity != 0 {
		return fmt.Errorf("%s: size %d is not a positive multiple of the %d-byte granularity", what, size, device.Granularity)
	}
	if uint64(p)%device.Granularity != 0 {
		return fmt.Errorf("%s: address %v is not aligned to the %d-byte granularity", what, p, device.Granularity)
	}
	if p.Add(size) < p {
		return fmt.Errorf("%s: range %v + %d wraps around", what, p, size)
	}
	return nil
}

// reserve finds the lowest free range of size bytes.
func (s *space) reserve(size uint64) (device.Ptr, error) {
	if err := checkGranular("reserve", s.lo, size); err != nil {
		return 0, err
	}
	at := s.lo
	i := 0
	for ; i < len(s.res); i++ {
		if uint64(s.res[i].base-at) >= size {
			break
		}
		at = s.res[i].end()
	}
	if uint64(at-s.lo)+size > spaceSize {
		return 0, fmt.Errorf("reserve: no free range of %d bytes in device %d's %d-byte address space", size, s.dev, spaceSize)
	}
	s.res = append(s.res, reservation{})
	copy(s.res[i+1:], s.res[i:])
	s.res[i] = reservation{base: at, size: size}
	return at, nil
}

// free returns a reserved range, which must match a reservation exactly and
// hold no mapping.
func (s *space) free(p device.Ptr, size uint64) error {
	i := sort.Search(len(s.res), func(i int) bool { return s.res[i].base >= p })
	if i == len(s.res) || s.res[i].base != p || s.res[i].size != size {
		return fmt.Errorf("free range: %v + %d is not a reserved range of device %d", p, size, s.dev)
	}
	if m := s.firstMapping(p, p.Add(size)); m != nil {
		return fmt.Errorf("free range: %v + %d still maps %v + %d (unmap it first)", p, size, m.base, m.size)
	}
	s.res = append(s.res[:i], s.res[i+1:]...)
	return nil
}

// reservationOf returns the reservation containing p.
func (s *space) reservationOf(p device.Ptr) (reservation, bool) {
	i := sort.Search(len(s.res), func(i int) bool { return s.res[i].end() > p })
	if i < len(s.res) && s.res[i].base <= p {
		return s.res[i], true
	}
	return reservation{}, false
}

// mappingAt returns the index of the mapping containing p, or -1.
func (s *space) mappingAt(p device.Ptr) int {
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].end() > p })
	if i < len(s.maps) && s.maps[i].base <= p {
		return i
	}
	return -1
}

// firstMapping returns the lowest mapping overlapping [lo, hi).
func (s *space) firstMapping(lo, hi device.Ptr) *mapping {
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].end() > lo })
	if i < len(s.maps) && s.maps[i].base < hi {
		return s.maps[i]
	}
	return nil
}

func (s *space) mapPhys(p device.Ptr, size uint64, ph *physical) error {
	if err := checkGranular("map", p, size); err != nil {
		return err
	}
	r, ok := s.reservationOf(p)
	if !ok || p.Add(size) > r.end() {
		return fmt.Errorf("map: %v + %d is not inside a reserved range of device %d", p, size, s.dev)
	}
	if m := s.firstMapping(p, p.Add(size)); m != nil {
		return fmt.Errorf("map: %v + %d overlaps the mapping at %v + %d", p, size, m.base, m.size)
	}
	if size > ph.size() {
		return fmt.Errorf("map: %d bytes exceed the %d-byte physical allocation", size, ph.size())
	}
	m := &mapping{base: p, size: size, phys: ph}
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].base > p })
	s.maps = append(s.maps, nil)
	copy(s.maps[i+1:], s.maps[i:])
	s.maps[i] = m
	ph.maps++
	return nil
}

// covering returns the indexes [i, j) of the mappings that exactly tile
// [p, p+size).
func (s *space) covering(what string, p device.Ptr, size uint64) (int, int, error) {
	if size == 0 || p.Add(size) < p {
		return 0, 0, fmt.Errorf("%s: empty or wrapping range %v + %d", what, p, size)
	}
	i := s.mappingAt(p)
	if i < 0 || s.maps[i].base != p {
		return 0, 0, fmt.Errorf("%s: no mapping of device %d starts at %v", what, s.dev, p)
	}
	end := p.Add(size)
	j := i
	for at := p; at < end; j++ {
		if j == len(s.maps) || s.maps[j].base != at {
			return 0, 0, fmt.Errorf("%s: %v + %d is not fully mapped on device %d (hole at %v)", what, p, size, s.dev, at)
		}
		at = s.maps[j].end()
		if at > end {
			return 0, 0, fmt.Errorf("%s: range %v + %d splits the mapping at %v + %d", what, p, size, s.maps[j].base, s.maps[j].size)
		}
	}
	return i, j, nil
}

func (s *space) setAccess(p device.Ptr, size uint64) error {
	i, j, err := s.covering("set access", p, size)
	if err != nil {
		return err
	}
	for _, m := range s.maps[i:j] {
		m.access = true
	}
	return nil
}

// unmap removes the mappings tiling [p, p+size) and returns their physical
// allocations.
func (s *space) unmap(p device.Ptr, size uint64) ([]*physical, error) {
	i, j, err := s.covering("unmap", p, size)
	if err != nil {
		return nil, err
	}
	var phys []*physical
	for _, m := range s.maps[i:j] {
		m.phys.maps--
		phys = append(phys, m.phys)
	}
	s.maps = append(s.maps[:i], s.maps[j:]...)
	return phys, nil
}

// segment is the part of an access that falls in one mapping.
type segment struct {
	addr device.Ptr
	phys *physical
	off  uint64 // offset in phys
	b    []byte // phys.data[off:off+len]
}

// resolve splits the access [p, p+n) into mapped segments, or reports why
// it faults. A write rings the bells that watch the bytes it reaches (see
// [physical.watch]): its caller writes the segments before the running
// task's next scheduling point.
func (s *space) resolve(p device.Ptr, n uint64, write bool, segs []segment) ([]segment, error) {
	fault := func(reason string) error {
		return &FaultError{Device: s.dev, Addr: p, Size: n, Write: write, Reason: reason}
	}
	if n == 0 {
		return segs, nil
	}
	if p.Add(n) < p {
		return nil, fault("range wraps around the address space")
	}
	at, end := p, p.Add(n)
	for at < end {
		i := s.mappingAt(at)
		if i < 0 {
			return nil, fault(s.whyUnmapped(at))
		}
		m := s.maps[i]
		if !m.access {
			return nil, fault(fmt.Sprintf("mapping %v + %d has no access (SetAccess not called)", m.base, m.size))
		}
		off := uint64(at - m.base)
		k := min(uint64(end-at), m.size-off)
		m.phys.touch(off, k)
		if write && len(m.phys.watches) > 0 {
			m.phys.written(off, k)
		}
		segs = append(segs, segment{addr: at, phys: m.phys, off: off, b: m.phys.data[off : off+k]})
		at = at.Add(k)
	}
	return segs, nil
}

func (s *space) whyUnmapped(at device.Ptr) string {
	if at >= spaceBase {
		if d := uint64(at-spaceBase) >> spaceShift; int(d) != s.dev && d < signal.MaxWorld {
			return fmt.Sprintf("%v belongs to device %d's address space, not device %d's", at, d, s.dev)
		}
	}
	if r, ok := s.reservationOf(at); ok {
		return fmt.Sprintf("%v is reserved (%v + %d) but not mapped", at, r.base, r.size)
	}
	return fmt.Sprintf("%v is not mapped (no reservation)", at)
}
