package kernels

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/signal"
)

// The kernels' bodies are run here on goroutines over Go memory, without
// the simulator: memSpace is the memory every rank of a test job sees (one
// address space, as after a rendezvous mapped every peer's buffers), and
// memBlock is a thread block over it. Waits poll, with a deadline.

// memSpace is device memory shared by every rank of a test job.
type memSpace struct {
	mu    sync.Mutex
	base  device.Ptr
	mem   []byte
	next  uint64 // bump allocator's next free offset
	start time.Time
}

// memBase is the address of the first byte of a memSpace: addresses below
// it (null included) are unmapped.
const memBase = device.Ptr(0x10000)

func newMemSpace(size int) *memSpace {
	return &memSpace{base: memBase, mem: make([]byte, size), start: time.Now()}
}

// alloc returns n zeroed bytes aligned to 256, followed by a 256-byte gap.
func (m *memSpace) alloc(t *testing.T, n uint64) device.Ptr {
	t.Helper()
	off := (m.next + 255) &^ 255
	if off+n > uint64(len(m.mem)) {
		t.Fatalf("memSpace of %d bytes is full", len(m.mem))
	}
	m.next = off + n + 256
	return m.base.Add(off)
}

// at returns the n bytes at p; it runs with m.mu held.
func (m *memSpace) at(p device.Ptr, n int) ([]byte, error) {
	if p < m.base || uint64(p-m.base)+uint64(n) > uint64(len(m.mem)) {
		return nil, fmt.Errorf("address %v (%d bytes) is not mapped", p, n)
	}
	off := uint64(p - m.base)
	return m.mem[off : off+uint64(n)], nil
}

// write and read copy bytes in and out, outside any kernel.
func (m *memSpace) write(t *testing.T, p device.Ptr, b []byte) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	dst, err := m.at(p, len(b))
	if err != nil {
		t.Fatal(err)
	}
	copy(dst, b)
}

func (m *memSpace) read(t *testing.T, p device.Ptr, n uint64) []byte {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	src, err := m.at(p, int(n))
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), src...)
}

// ptrArray allocates a device array of the given addresses.
func (m *memSpace) ptrArray(t *testing.T, ptrs []device.Ptr) device.Ptr {
	t.Helper()
	b := make([]byte, 8*len(ptrs))
	for i, p := range ptrs {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(p))
	}
	arr := m.alloc(t, uint64(len(b)))
	m.write(t, arr, b)
	return arr
}

// waitCap bounds a wait without a timeout, so that a kernel that would
// wait forever fails the test instead.
const waitCap = 20 * time.Second

// memBlock is one thread block (or one lane of one) of a kernel running
// on a memSpace.
type memBlock struct {
	m                *memSpace
	kernel           string
	dev, index, grid int
	threads, lane    int
}

func (b *memBlock) Kernel() string     { return b.kernel }
func (b *memBlock) Device() int        { return b.dev }
func (b *memBlock) Index() int         { return b.index }
func (b *memBlock) Grid() int          { return b.grid }
func (b *memBlock) Threads() int       { return b.threads }
func (b *memBlock) Lane() int          { return b.lane }
func (b *memBlock) Now() time.Duration { return time.Since(b.m.start) }
func (b *memBlock) Yield(string)       { runtime.Gosched() }

func (b *memBlock) Load(p device.Ptr, dst []byte) error {
	b.m.mu.Lock()
	defer b.m.mu.Unlock()
	src, err := b.m.at(p, len(dst))
	if err != nil {
		return err
	}
	copy(dst, src)
	return nil
}

func (b *memBlock) Store(p device.Ptr, src []byte) error {
	b.m.mu.Lock()
	defer b.m.mu.Unlock()
	dst, err := b.m.at(p, len(src))
	if err != nil {
		return err
	}
	copy(dst, src)
	return nil
}

func (b *memBlock) LoadU64(p device.Ptr) (uint64, error) {
	var w [8]byte
	if err := b.Load(p, w[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(w[:]), nil
}

func (b *memBlock) CAS32(p device.Ptr, old, new uint32, _ signal.Order, _ signal.Scope) (uint32, error) {
	if p%4 != 0 {
		return 0, fmt.Errorf("CAS32 at %v: not 4-byte aligned", p)
	}
	b.m.mu.Lock()
	defer b.m.mu.Unlock()
	w, err := b.m.at(p, 4)
	if err != nil {
		return 0, err
	}
	prev := binary.LittleEndian.Uint32(w)
	if prev == old {
		binary.LittleEndian.PutUint32(w, new)
	}
	return prev, nil
}

// poll calls done until it reports true, an error, or timeout (<= 0:
// waitCap, which is an error) passes.
func (b *memBlock) poll(what string, timeout time.Duration, done func() (bool, error)) error {
	limit := timeout
	if limit <= 0 {
		limit = waitCap
	}
	deadline := time.Now().Add(limit)
	for {
		ok, err := done()
		if ok || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			if timeout > 0 {
				return ErrWaitTimeout
			}
			return fmt.Errorf("%s: still waiting after %v", what, waitCap)
		}
		time.Sleep(20 * time.Microsecond)
	}
}

func (b *memBlock) WaitU32(p device.Ptr, what string, ready func(uint32) bool, timeout time.Duration) error {
	return b.poll(what, timeout, func() (bool, error) {
		b.m.mu.Lock()
		defer b.m.mu.Unlock()
		w, err := b.m.at(p, 4)
		if err != nil {
			return false, err
		}
		return ready(binary.LittleEndian.Uint32(w)), nil
	})
}

func (b *memBlock) StoreU64s(p device.Ptr, vals []uint64) error {
	if p%8 != 0 {
		return fmt.Errorf("StoreU64s at %v: not 8-byte aligned", p)
	}
	b.m.mu.Lock()
	defer b.m.mu.Unlock()
	w, err := b.m.at(p, 8*len(vals))
	if err != nil {
		return err
	}
	for i, v := range vals {
		binary.LittleEndian.PutUint64(w[8*i:], v)
	}
	return nil
}

func (b *memBlock) WaitU64s(p device.Ptr, dst []uint64, what string, ready func([]uint64) bool, timeout time.Duration) error {
	return b.poll(what, timeout, func() (bool, error) {
		b.m.mu.Lock()
		defer b.m.mu.Unlock()
		w, err := b.m.at(p, 8*len(dst))
		if err != nil {
			return false, err
		}
		for i := range dst {
			dst[i] = binary.LittleEndian.Uint64(w[8*i:])
		}
		return ready(dst), nil
	})
}

func (b *memBlock) Lanes(n int, fn func(lane Block) error) error {
	if n > b.threads {
		return fmt.Errorf("%d lanes in a block of %d threads", n, b.threads)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lane := *b
			lane.lane = i
			errs[i] = fn(&lane)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// launchAll runs kernel on every rank at once, with blocks x threads each
// and the arguments args gives each rank, and returns each rank's error
// (that of its lowest failing block).
func launchAll(m *memSpace, kernel string, ranks []int, blocks, threads int, args func(rank int) any) []error {
	k, ok := Lookup(kernel)
	errs := make([]error, len(ranks))
	if !ok {
		for i := range errs {
			errs[i] = fmt.Errorf("unknown kernel %q", kernel)
		}
		return errs
	}
	blockErrs := make([][]error, len(ranks))
	var wg sync.WaitGroup
	for i, r := range ranks {
		blockErrs[i] = make([]error, blocks)
		a := args(r)
		for blk := range blocks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := &memBlock{m: m, kernel: kernel, dev: r, index: blk, grid: blocks, threads: threads, lane: -1}
				blockErrs[i][blk] = k.Run(b, a)
			}()
		}
	}
	wg.Wait()
	for i := range ranks {
		for _, err := range blockErrs[i] {
			if err != nil {
				errs[i] = err
				break
			}
		}
	}
	return errs
}
