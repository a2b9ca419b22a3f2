package rank

import (
	"errors"
	"fmt"
	"slices"

	"github.com/symmem/symmem/device"
)

// ErrNotSymmetric is returned for a pointer that the allocator did not
// return (or that lies outside every live symmetric allocation).
var ErrNotSymmetric = errors.New("not a symmetric allocation")

// ErrFreed is returned for a pointer whose allocation was already freed.
var ErrFreed = errors.New("symmetric allocation already freed")

// block is one symmetric allocation: [PadRegions signal pads | data] in
// one physical allocation, mapped at base.
type block struct {
	id        string // persistent allocation id, "" if none
	base      device.Ptr
	data      device.Ptr
	padSize   uint64 // the size of each group's pad
	padOffset uint64 // always 0: the pads come first
	padsInUse uint64 // bit i: pad i belongs to a group's rendezvous
	bufSize   uint64 // requested size rounded up to 16 bytes
	size      uint64 // whole block, a multiple of the granularity
	handle    device.Handle
	handles   map[string]*SymmetricMemory // rendezvous results by group
}

// reservation is the address range kept for a persistent allocation id.
type reservation struct {
	base  device.Ptr
	size  uint64
	asked uint64 // the size the id was first allocated with
	live  bool
}

// plain is a non-symmetric device allocation (outputs, local inputs).
type plain struct {
	ptr    device.Ptr
	size   uint64
	handle device.Handle
}

type allocator struct {
	r      *Rank
	blocks []*block // live, in allocation order
	ids    map[string]*reservation
	freed  map[device.Ptr]bool
	plains []plain
	arena  arena
}

func newAllocator(r *Rank) *allocator {
	return &allocator{r: r, ids: map[string]*reservation{}, freed: map[device.Ptr]bool{}, arena: arena{r: r}}
}

func roundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }

func (a *allocator) granularity() uint64 {
	if g := a.r.dev.Attributes().Granularity; g > 0 {
		return g
	}
	return device.Granularity
}

// Alloc allocates a symmetric buffer of size bytes and returns the address
// of its data. The buffer is not zeroed; its signal pad is.
func (r *Rank) Alloc(size uint64) (device.Ptr, error) { return r.AllocID(size, "") }

// AllocID is Alloc with a persistent allocation id: allocating the same id
// again after Free returns the same address. Allocating an id that is still
// alive, or with another size than its first allocation, is an error.
func (r *Rank) AllocID(size uint64, id string) (device.Ptr, error) {
	p, err := r.alloc.alloc(size, id)
	if err != nil {
		return 0, fmt.Errorf("rank %d: alloc %d bytes: %w", r.id, size, err)
	}
	r.logAlloc(size, id, p)
	return p, nil
}

// maxAlloc bounds a single allocation (1 TiB) so a negative size converted
// to uint64 is reported rather than attempted.
const maxAlloc = 1 << 40

func (a *allocator) alloc(size uint64, id string) (device.Ptr, error) {
	if size == 0 {
		return 0, errors.New("size must be positive")
	}
	if size > maxAlloc {
		return 0, fmt.Errorf("size %d exceeds the limit of %d bytes", size, uint64(maxAlloc))
	}
	dev := a.r.dev
	padOffset := roundUp(a.r.padSize*PadRegions, 128)
	b := &block{id: id, padSize: a.r.padSize, bufSize: roundUp(size, 16), handles: map[string]*SymmetricMemory{}}
	b.size = roundUp(padOffset+b.bufSize, a.granularity())
	var res *reservation
	if id != "" {
		res = a.ids[id]
		if res != nil && res.live {
			return 0, fmt.Errorf("allocation id %q is still alive", id)
		}
		if res != nil && res.asked != size {
			return 0, fmt.Errorf("allocation id %q was first allocated with %d bytes, now %d asked: an id keeps its size", id, res.asked, size)
		}
	}
	var at device.Ptr
	if res != nil {
		at = res.base
	}
	var err error
	if b.base, b.handle, err = a.mapNew(at, b.size); err != nil {
		return 0, err
	}
	undo := func() { a.unmapRelease(b.base, b.size, b.handle, res == nil) }
	if err := dev.Memset(a.r.stream, b.base, 0, b.padSize*PadRegions); err != nil {
		undo()
		return 0, fmt.Errorf("zero signal pad: %w", err)
	}
	if err := dev.Synchronize(a.r.stream); err != nil {
		undo()
		return 0, fmt.Errorf("zero signal pad: %w", err)
	}
	b.data = b.base.Add(padOffset)
	if id != "" {
		if res == nil {
			res = &reservation{base: b.base, size: b.size, asked: size}
			a.ids[id] = res
		}
		res.live = true
	}
	delete(a.freed, b.data)
	a.blocks = append(a.blocks, b)
	return b.data, nil
}

// find returns the live block whose data region holds [p, p+n).
func (a *allocator) find(p device.Ptr, n uint64) (*block, error) {
	if b := a.lookup(p, n); b != nil {
		return b, nil
	}
	if a.freed[p] {
		return nil, fmt.Errorf("%v: %w", p, ErrFreed)
	}
	return nil, fmt.Errorf("%v (%d bytes): %w", p, n, ErrNotSymmetric)
}

// lookup returns the symmetric block holding [p, p+n), or nil.
func (a *allocator) lookup(p device.Ptr, n uint64) *block {
	for _, b := range a.blocks {
		// Compared without p-b.data+n, which a huge n would wrap around.
		if p >= b.data && n <= b.bufSize && uint64(p-b.data) <= b.bufSize-n {
			return b
		}
	}
	return nil
}

// padAddr is the address of pad region within a block mapped at base.
func (b *block) padAddr(base device.Ptr, region int) device.Ptr {
	return base.Add(b.padOffset + uint64(region)*b.padSize)
}

// AllocSize is the usable size of the symmetric allocation at p.
func (r *Rank) AllocSize(p device.Ptr) (uint64, error) {
	b, err := r.alloc.find(p, 0)
	if err != nil {
		return 0, fmt.Errorf("rank %d: alloc size: %w", r.id, err)
	}
	return b.bufSize, nil
}

// Free releases the symmetric allocation whose data starts at p, with the
// peer mappings of every rendezvous it took part in.
func (r *Rank) Free(p device.Ptr) error {
	if err := r.alloc.free(p); err != nil {
		return fmt.Errorf("rank %d: free: %w", r.id, err)
	}
	r.logFree(p)
	return nil
}

func (a *allocator) free(p device.Ptr) error {
	i := slices.IndexFunc(a.blocks, func(b *block) bool { return b.data == p })
	if i < 0 {
		_, err := a.find(p, 0)
		if err == nil {
			err = fmt.Errorf("%v is inside a symmetric allocation, not its start: %w", p, ErrNotSymmetric)
		}
		return err
	}
	b := a.blocks[i]
	a.blocks = slices.Delete(a.blocks, i, i+1)
	a.freed[p] = true
	return a.release(b)
}

func (a *allocator) release(b *block) error {
	var errs []error
	groups := make([]string, 0, len(b.handles))
	for g := range b.handles {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	for _, g := range groups {
		errs = append(errs, b.handles[g].release())
	}
	errs = append(errs, a.unmapRelease(b.base, b.size, b.handle, b.id == ""))
	if b.id != "" {
		a.ids[b.id].live = false
	}
	return errors.Join(errs...)
}

// Empty allocates a plain (non-symmetric) tensor on the rank's device. Its
// contents are undefined.
func (r *Rank) Empty(numel uint64, dt device.DType) (Tensor, error) {
	t, err := r.empty(numel, dt)
	if err != nil {
		return Tensor{}, fmt.Errorf("rank %d: %w", r.id, err)
	}
	return t, nil
}

func (r *Rank) empty(numel uint64, dt device.DType) (Tensor, error) {
	if !dt.Valid() {
		return Tensor{}, fmt.Errorf("empty tensor: invalid dtype %v", dt)
	}
	bytes := numel * uint64(dt.Size())
	if numel > maxAlloc || bytes > maxAlloc {
		return Tensor{}, fmt.Errorf("empty tensor of %d elements exceeds the limit of %d bytes", numel, uint64(maxAlloc))
	}
	p, err := r.alloc.plainAlloc(bytes)
	if err != nil {
		return Tensor{}, fmt.Errorf("empty tensor of %d bytes: %w", bytes, err)
	}
	return Tensor{Ptr: p, DType: dt, Numel: numel}, nil
}

// FreeTensor frees a tensor returned by Empty or by an all-reduce.
func (r *Rank) FreeTensor(t Tensor) error {
	if err := r.alloc.plainFree(t.Ptr); err != nil {
		return fmt.Errorf("rank %d: free tensor %v: %w", r.id, t, err)
	}
	return nil
}

// mapNew creates size bytes of physical memory and maps them with access,
// at at when non-zero (a range already reserved), else in a new range.
func (a *allocator) mapNew(at device.Ptr, size uint64) (device.Ptr, device.Handle, error) {
	dev := a.r.dev
	h, err := dev.CreatePhysical(size)
	if err != nil {
		return 0, 0, err
	}
	p := at
	if p == 0 {
		if p, err = dev.Reserve(size); err != nil {
			_ = dev.ReleasePhysical(h)
			return 0, 0, err
		}
	}
	err = dev.Map(p, size, h)
	if err == nil {
		if err = dev.SetAccess(p, size); err != nil {
			_ = dev.Unmap(p, size)
		}
	}
	if err != nil {
		if at == 0 {
			_ = dev.FreeRange(p, size)
		}
		_ = dev.ReleasePhysical(h)
		return 0, 0, err
	}
	return p, h, nil
}

func (a *allocator) plainAlloc(bytes uint64) (device.Ptr, error) {
	size := roundUp(max(bytes, 1), a.granularity())
	p, h, err := a.mapNew(0, size)
	if err != nil {
		return 0, err
	}
	a.plains = append(a.plains, plain{ptr: p, size: size, handle: h})
	return p, nil
}

func (a *allocator) plainFree(p device.Ptr) error {
	i := slices.IndexFunc(a.plains, func(pl plain) bool { return pl.ptr == p })
	if i < 0 {
		return errors.New("not a tensor of this rank (already freed?)")
	}
	pl := a.plains[i]
	a.plains = slices.Delete(a.plains, i, i+1)
	return a.unmapRelease(pl.ptr, pl.size, pl.handle, true)
}

// unmapRelease undoes mapNew once the stream is idle; freeRange keeps the
// address range reserved when false (persistent allocation ids).
func (a *allocator) unmapRelease(p device.Ptr, size uint64, h device.Handle, freeRange bool) error {
	dev := a.r.dev
	errs := []error{dev.Synchronize(a.r.stream), dev.Unmap(p, size), dev.ReleasePhysical(h)}
	if freeRange {
		errs = append(errs, dev.FreeRange(p, size))
	}
	return errors.Join(errs...)
}

// close frees everything the allocator holds.
func (a *allocator) close() error {
	var errs []error
	for len(a.blocks) > 0 {
		errs = append(errs, a.free(a.blocks[0].data))
	}
	errs = append(errs, a.arena.close())
	for len(a.plains) > 0 {
		errs = append(errs, a.plainFree(a.plains[0].ptr))
	}
	ids := make([]string, 0, len(a.ids))
	for id := range a.ids {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		errs = append(errs, a.r.dev.FreeRange(a.ids[id].base, a.ids[id].size))
	}
	a.ids = map[string]*reservation{}
	return errors.Join(errs...)
}

// arenaSlot is the size of one slot of the pointer-array arena: room for
// the buffer and pad address arrays of up to 128 ranks.
const arenaSlot = 2048

// arena hands out small device slots for the per-rendezvous pointer arrays,
// carved from granularity-sized plain allocations.
type arena struct {
	r      *Rank
	chunks []device.Ptr
	free   []device.Ptr // free slots, reused last in, first out
}

func (ar *arena) get() (device.Ptr, error) {
	if len(ar.free) == 0 {
		p, err := ar.r.alloc.plainAlloc(ar.r.alloc.granularity())
		if err != nil {
			return 0, fmt.Errorf("pointer arena: %w", err)
		}
		ar.chunks = append(ar.chunks, p)
		n := ar.r.alloc.granularity() / arenaSlot
		ar.free = slices.Grow(ar.free, int(n)) // one allocation, not a doubling series
		for i := n; i > 0; i-- {
			ar.free = append(ar.free, p.Add((i-1)*arenaSlot))
		}
	}
	s := ar.free[len(ar.free)-1]
	ar.free = ar.free[:len(ar.free)-1]
	return s, nil
}

func (ar *arena) put(p device.Ptr) { ar.free = append(ar.free, p) }

func (ar *arena) close() error {
	var errs []error
	for _, c := range ar.chunks {
		errs = append(errs, ar.r.alloc.plainFree(c))
	}
	ar.chunks, ar.free = nil, nil
	return errors.Join(errs...)
}
