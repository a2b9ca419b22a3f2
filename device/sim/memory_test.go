package sim

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// inTask runs fn as the only task of a fresh scheduler over a world of n
// devices.
func inTask(t *testing.T, n int, cfg Config, fn func(w *World) error) *World {
	t.Helper()
	s := actor.NewScheduler(actor.Config{Seed: 1})
	cfg.World = n
	w, err := NewWorld(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ferr error
	s.Go("test", func() { ferr = fn(w) })
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		t.Fatal(ferr)
	}
	return w
}

func wantErr(t *testing.T, err error, substr string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), substr) {
		t.Errorf("got error %v, want one containing %q", err, substr)
	}
}

func TestImportedMemoryAliases(t *testing.T) {
	w := inTask(t, 2, Config{}, func(w *World) error {
		d0, d1 := w.Device(0), w.Device(1)
		h0, err := d0.CreatePhysical(device.Granularity)
		if err != nil {
			return err
		}
		fd, err := d0.ExportHandle(h0)
		if err != nil {
			return err
		}
		fd1, err := w.Transfer(w.PID(0), fd, w.PID(1))
		if err != nil {
			return err
		}
		h1, err := d1.ImportHandle(fd1)
		if err != nil {
			return err
		}
		for _, c := range []struct {
			pid, fd int
		}{{w.PID(0), fd}, {w.PID(1), fd1}} {
			if err := w.Close(c.pid, c.fd); err != nil {
				return err
			}
		}
		p0, err := mapBlock(d0, h0, device.Granularity)
		if err != nil {
			return err
		}
		p1, err := mapBlock(d1, h1, device.Granularity)
		if err != nil {
			return err
		}
		if p0 == p1 {
			t.Errorf("devices 0 and 1 mapped at the same address %v", p0)
		}
		if err := d1.Write(0, p1+100, []byte("hello")); err != nil {
			return err
		}
		got := make([]byte, 5)
		if err := d0.Read(0, got, p0+100); err != nil {
			return err
		}
		if string(got) != "hello" {
			t.Errorf("device 0 reads %q through its mapping, want hello", got)
		}
		// Release everything on both sides: the bytes go when the last
		// reference does.
		if err := d0.ReleasePhysical(h0); err != nil {
			return err
		}
		if err := d0.Unmap(p0, device.Granularity); err != nil {
			return err
		}
		if w.LiveBytes(0) != device.Granularity {
			t.Errorf("memory freed while device 1 still maps it")
		}
		if err := d1.Read(0, got, p1+100); err != nil || string(got) != "hello" {
			t.Errorf("device 1 lost the bytes: %q %v", got, err)
		}
		if err := d1.Unmap(p1, device.Granularity); err != nil {
			return err
		}
		if err := d1.ReleasePhysical(h1); err != nil {
			return err
		}
		if w.LiveBytes(0) != 0 {
			t.Errorf("%d bytes live after every reference is gone", w.LiveBytes(0))
		}
		return nil
	})
	if w.OpenFDs(w.PID(0)) != 0 || w.OpenFDs(w.PID(1)) != 0 {
		t.Error("fds leaked")
	}
}

func TestFDTables(t *testing.T) {
	inTask(t, 2, Config{PIDBase: 500}, func(w *World) error {
		d0 := w.Device(0)
		if w.PID(1) != 501 {
			t.Errorf("PID(1) = %d", w.PID(1))
		}
		h, err := d0.CreatePhysical(device.Granularity)
		if err != nil {
			return err
		}
		fd, err := d0.ExportHandle(h)
		if err != nil {
			return err
		}
		fd2, err := d0.ExportHandle(h)
		if err != nil {
			return err
		}
		if fd != 3 || fd2 != 4 {
			t.Errorf("fds %d, %d: want the lowest free numbers 3, 4", fd, fd2)
		}
		// The fd lives in process 500 only.
		_, err = w.Device(1).ImportHandle(fd)
		wantErr(t, err, "process 501 has no open fd 3")
		_, err = w.Transfer(501, fd, 500)
		wantErr(t, err, "no open fd")
		_, err = w.Transfer(999, fd, 500)
		wantErr(t, err, "no process 999")
		wantErr(t, w.Close(500, 77), "no open fd 77")
		if err := d0.CloseFD(fd); err != nil {
			return err
		}
		wantErr(t, d0.CloseFD(fd), "no open fd 3")
		// Release the handle: the open fd still holds the memory.
		if err := d0.ReleasePhysical(h); err != nil {
			return err
		}
		if w.LiveBytes(0) == 0 {
			t.Error("memory freed while an fd refers to it")
		}
		fdx, err := w.Transfer(500, fd2, 501)
		if err != nil {
			return err
		}
		h1, err := w.Device(1).ImportHandle(fdx)
		if err != nil {
			return err
		}
		if err := d0.CloseFD(fd2); err != nil {
			return err
		}
		if err := w.Device(1).CloseFD(fdx); err != nil {
			return err
		}
		if w.LiveBytes(0) == 0 {
			t.Error("memory freed while device 1 holds a handle")
		}
		if err := w.Device(1).ReleasePhysical(h1); err != nil {
			return err
		}
		if w.LiveBytes(0) != 0 {
			t.Error("memory not freed")
		}
		wantErr(t, w.Device(1).ReleasePhysical(h1), "unknown handle")
		return nil
	})
}

func TestVirtualMemoryErrors(t *testing.T) {
	inTask(t, 2, Config{MemoryLimit: 4 * device.Granularity}, func(w *World) error {
		d := w.Device(0)
		_, err := d.CreatePhysical(device.Granularity + 1)
		wantErr(t, err, "multiple of the 2097152-byte granularity")
		_, err = d.CreatePhysical(0)
		wantErr(t, err, "multiple")
		_, err = d.CreatePhysical(8 * device.Granularity)
		wantErr(t, err, "out of memory")
		_, err = d.Reserve(100)
		wantErr(t, err, "granularity")
		h, err := d.CreatePhysical(device.Granularity)
		if err != nil {
			return err
		}
		p, err := d.Reserve(2 * device.Granularity)
		if err != nil {
			return err
		}
		wantErr(t, d.Map(p+device.Granularity*2, device.Granularity, h), "not inside a reserved range")
		wantErr(t, d.Map(p, 2*device.Granularity, h), "exceed")
		wantErr(t, d.Map(p+4096, device.Granularity, h), "aligned")
		wantErr(t, d.Map(p, device.Granularity, 99), "unknown handle")
		if err := d.Map(p, device.Granularity, h); err != nil {
			return err
		}
		wantErr(t, d.Map(p, device.Granularity, h), "overlaps")
		// Mapped but no access yet.
		err = d.Write(0, p, []byte{1})
		var fault *FaultError
		if !errors.As(err, &fault) || !strings.Contains(fault.Reason, "SetAccess") {
			t.Errorf("write before SetAccess: %v", err)
		}
		wantErr(t, d.SetAccess(p, 2*device.Granularity), "not fully mapped")
		if err := d.SetAccess(p, device.Granularity); err != nil {
			return err
		}
		if err := d.Write(0, p+device.Granularity-2, []byte{1, 2}); err != nil {
			return err
		}
		// Past the mapping: reserved, not mapped.
		err = d.Write(0, p+device.Granularity-2, []byte{1, 2, 3})
		if !errors.As(err, &fault) || !strings.Contains(fault.Reason, "reserved") || !fault.Write {
			t.Errorf("write past the mapping: %v", err)
		}
		// Another device's address.
		other, err := w.Device(1).Reserve(device.Granularity)
		if err != nil {
			return err
		}
		err = d.Read(0, make([]byte, 4), other)
		wantErr(t, err, "belongs to device 1's address space, not device 0's")
		err = d.Read(0, make([]byte, 4), 0x1000)
		wantErr(t, err, "no reservation")
		wantErr(t, d.FreeRange(p, 2*device.Granularity), "still maps")
		wantErr(t, d.FreeRange(p, device.Granularity), "not a reserved range")
		wantErr(t, d.Unmap(p, 2*device.Granularity), "not fully mapped")
		if err := d.Unmap(p, device.Granularity); err != nil {
			return err
		}
		if err := d.FreeRange(p, 2*device.Granularity); err != nil {
			return err
		}
		// Freed ranges are reused.
		q, err := d.Reserve(device.Granularity)
		if err != nil {
			return err
		}
		if q != p {
			t.Errorf("reserve after free got %v, want the freed %v", q, p)
		}
		return nil
	})
}

// TestBadPointerInKernel: a kernel that reads an unmapped address fails the
// launch with a FaultError reported by Synchronize; the stream stays usable.
func TestBadPointerInKernel(t *testing.T) {
	h := newHarness(t, 2, 4)
	h.run(func() error {
		a := h.allReduceArgs(0, device.Float32, device.Sum, 0, 16)
		a.Output = 0x10 // not mapped anywhere
		a.World = 1
		err := h.launch(0, kernels.OneShotAllReduce, 1, 32, a)
		var fault *FaultError
		if !errors.As(err, &fault) || fault.Addr != 0x10 || !fault.Write {
			t.Errorf("launch with a bad Output: %v", err)
		}
		wantErr(t, err, "writing Output")
		// A copy from another device's pointer.
		d := h.dev(0)
		if err := d.Copy(0, h.local[0]+outOff, h.local[1]+outOff, 16); err != nil {
			return err
		}
		wantErr(t, d.Synchronize(0), "belongs to device 1's address space")
		return d.Synchronize(0)
	})
}

func TestMemsetCopy(t *testing.T) {
	inTask(t, 1, Config{}, func(w *World) error {
		d := w.Device(0)
		s, err := d.NewStream()
		if err != nil {
			return err
		}
		h, err := d.CreatePhysical(2 * device.Granularity)
		if err != nil {
			return err
		}
		p, err := mapBlock(d, h, 2*device.Granularity)
		if err != nil {
			return err
		}
		if err := d.Memset(s, p, 7, 10); err != nil {
			return err
		}
		if err := d.Copy(s, p+device.Granularity-5, p, 10); err != nil { // crosses nothing but the middle
			return err
		}
		if err := d.Synchronize(s); err != nil {
			return err
		}
		got := make([]byte, 10)
		if err := d.Read(s, got, p+device.Granularity-5); err != nil {
			return err
		}
		if !bytes.Equal(got, bytes.Repeat([]byte{7}, 10)) {
			t.Errorf("copy got %v", got)
		}
		// Overlapping copies of distinct bytes behave like memmove, both
		// upwards and downwards: a forward byte-by-byte copy would smear.
		seq := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
		for _, tc := range []struct {
			name     string
			dst, src device.Ptr
			want     []byte
		}{
			{"upwards", p + 2, p, []byte{0, 1, 0, 1, 2, 3, 4, 5, 6, 7}},
			{"downwards", p, p + 2, []byte{2, 3, 4, 5, 6, 7, 8, 9, 8, 9}},
		} {
			if err := d.Write(s, p, seq); err != nil {
				return err
			}
			if err := d.Copy(s, tc.dst, tc.src, 8); err != nil {
				return err
			}
			if err := d.Read(s, got, p); err != nil {
				return err
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("overlapping copy %s got %v, want %v", tc.name, got, tc.want)
			}
		}
		return d.DestroyStream(s)
	})
}

// TestGranulesAreRecycled: a freed granule's bytes go back to the pool
// once, Release hands back what a world still holds (each allocation once,
// however many handles, mappings and fds refer to it) and closes its
// devices, and recycled bytes hold fresh garbage.
func TestGranulesAreRecycled(t *testing.T) {
	pooled := func(b []byte) int { // how many times the cache holds b
		n := 0
		for _, r := range regions.idleRegions() {
			if &r[0] == &b[0] {
				n++
			}
		}
		return n
	}
	p := newPhysical(1, 0, device.Granularity)
	freed := p.data
	p.free()
	p.free()
	if n := pooled(freed); n != 1 {
		t.Fatalf("a granule freed twice is pooled %d times, want once", n)
	}

	var held *physical
	w := inTask(t, 2, Config{}, func(w *World) error {
		d := w.Device(0)
		h, err := d.CreatePhysical(device.Granularity)
		if err != nil {
			return err
		}
		held = w.devs[0].handles[h]
		fd, err := d.ExportHandle(h)
		if err != nil {
			return err
		}
		if _, err := w.Transfer(w.PID(0), fd, w.PID(1)); err != nil {
			return err
		}
		p, err := d.Reserve(device.Granularity)
		if err != nil {
			return err
		}
		return d.Map(p, device.Granularity, h) // a handle, a mapping, two fds: never freed
	})
	left := held.data
	w.Release()
	if n := pooled(left); n != 1 || !held.freed() {
		t.Fatalf("a released allocation is pooled %d times (freed %t), want once", n, held.freed())
	}
	if _, err := w.Device(0).CreatePhysical(device.Granularity); err == nil {
		t.Fatal("a released world's device still allocates")
	}

	fresh := newPhysical(3, 0, device.Granularity)
	defer fresh.free()
	fresh.touch(0, pageSize)
	want := make([]byte, pageSize)
	garbage(want, 3<<32)
	if !bytes.Equal(fresh.data[:pageSize], want) {
		t.Fatal("a recycled granule's first page does not hold its own garbage")
	}
	if bytes.Equal(want, make([]byte, pageSize)) {
		t.Fatal("garbage is all zero")
	}
}

// TestRegionsBySize: an allocation takes the smallest idle region that
// holds it (an exact fit first, the newest among equals), a larger region's
// start when no smaller one is idle, and that region comes back whole; the
// cache keeps no more bytes than its bound, pushing out the regions idle
// the longest (so the sizes a run allocates now displace an earlier
// run's), and counts what it holds.
func TestRegionsBySize(t *testing.T) {
	const g = device.Granularity
	c := regionCache{max: 4 * g}
	big, small := c.get(3*g), c.get(g)
	c.put(big, allPages)
	c.put(small, allPages)
	if got := len(c.idleRegions()); got != 2 || c.bytes() != 4*g {
		t.Fatalf("the cache holds %d regions of %d bytes, want 2 of %d", got, c.bytes(), 4*g)
	}
	if b := c.get(g); &b[0] != &small[0] {
		t.Fatal("a 1-granule allocation did not get the freed 1-granule region")
	}
	if b := c.get(3 * g); &b[0] != &big[0] {
		t.Fatal("a 3-granule allocation did not get the freed 3-granule region")
	}
	if c.bytes() != 0 || len(c.idleRegions()) != 0 {
		t.Fatalf("the cache holds %d bytes with every region in use", c.bytes())
	}
	// With only a larger region idle, a smaller allocation takes its
	// start, and the region comes back whole.
	c.put(big, allPages)
	b := c.get(2 * g)
	if &b[0] != &big[0] || uint64(len(b)) != 2*g {
		t.Fatalf("a 2-granule allocation got %d bytes, not the start of the idle 3-granule region", len(b))
	}
	if c.bytes() != 0 {
		t.Fatalf("the cache holds %d bytes with its only region in use", c.bytes())
	}
	if fresh := c.get(4 * g); uint64(len(fresh)) != 4*g {
		t.Fatalf("a 4-granule allocation got %d bytes", len(fresh))
	}
	c.put(b, allPages)
	if got := c.idleRegions(); len(got) != 1 || uint64(len(got[0])) != 3*g || c.bytes() != 3*g {
		t.Fatalf("the region came back as %d regions of %d bytes, want 1 of %d", len(got), c.bytes(), 3*g)
	}
	if b := c.get(g); &b[0] != &big[0] {
		t.Fatal("a 1-granule allocation did not get the only idle region")
	}
	c.put(big, allPages)
	// Full, a new region pushes out the one idle the longest.
	c.put(small, allPages)
	newer := make([]byte, g)
	c.put(newer, allPages) // past the bound: big goes
	if c.bytes() != 2*g || len(c.idleRegions()) != 2 {
		t.Fatalf("after pushing out: %d regions of %d bytes, want 2 of %d", len(c.idleRegions()), c.bytes(), 2*g)
	}
	for _, r := range c.idleRegions() {
		if &r[0] == &big[0] {
			t.Fatal("the region idle the longest was not pushed out")
		}
	}
	if b := c.get(g); &b[0] != &newer[0] {
		t.Fatal("a 1-granule allocation did not get the region freed last")
	}
	if b := c.get(g); &b[0] != &small[0] {
		t.Fatal("a 1-granule allocation did not get the other freed region")
	}
	c.put(make([]byte, 5*g), allPages) // larger than the bound: not kept
	if c.bytes() != 0 {
		t.Fatalf("the cache kept a region larger than its bound: %d bytes", c.bytes())
	}
}

// TestRegionsPushedOutGoCold: a region of a mapping of its own that the
// cache pushes out keeps its addresses but hands its pages back (it reads
// as zeros), is no longer counted, and is what the next fresh allocation
// that fits takes, before any new mapping; a region of the heap is
// dropped. Only mappings stay out of the heap count PooledBytes reports.
func TestRegionsPushedOutGoCold(t *testing.T) {
	const g = device.Granularity
	c := regionCache{max: 2 * g}
	a := c.get(2 * g)
	if _, mapped := c.touched[&a[0]]; !mapped {
		t.Skip("this system gives no mappings of their own: regions are heap bytes")
	}
	for i := range a {
		a[i] = 0xa5
	}
	c.put(a, allPages)
	heap := make([]byte, g)
	c.put(heap, allPages) // past the bound: a goes cold
	if c.bytes() != g || len(c.cold) != 1 || &c.cold[0][0] != &a[0] {
		t.Fatalf("after pushing out: %d bytes held, %d cold regions, want %d and a's", c.bytes(), len(c.cold), g)
	}
	if !bytes.Equal(a, make([]byte, 2*g)) {
		t.Fatal("a region pushed out still holds its bytes")
	}
	if got := c.heapBytes(); got != g {
		t.Fatalf("heapBytes = %d, want %d (the heap region only)", got, g)
	}
	if b := c.get(2 * g); &b[0] != &a[0] || len(c.cold) != 0 {
		t.Fatal("a fresh allocation did not take the cold region")
	}
	c.put(a, allPages)  // pushes the heap region out
	big := c.get(3 * g) // larger than the bound: not kept, but not lost
	c.put(big, allPages)
	if len(c.cold) != 1 || &c.cold[0][0] != &big[0] || c.bytes() != 2*g {
		t.Fatalf("a region larger than the bound: %d cold regions, %d bytes held", len(c.cold), c.bytes())
	}
}

// TestRegionsCountResidentPages: a region of a mapping counts, towards
// the cache's bound, the pages its users touched since its pages last
// went back (the union over its users), not its length; pushed out, it
// counts none again; and the cache keeps at most maxIdleRegions regions,
// however few bytes they hold.
func TestRegionsCountResidentPages(t *testing.T) {
	const g = device.Granularity
	pages := func(ps ...int) []uint64 {
		b := make([]uint64, g/pageSize/64)
		for _, p := range ps {
			b[p/64] |= 1 << (p % 64)
		}
		return b
	}
	c := regionCache{max: 4 * pageSize}
	a := c.get(g)
	if _, mapped := c.touched[&a[0]]; !mapped {
		t.Skip("this system gives no mappings of their own: regions are heap bytes")
	}
	c.put(a, pages(0, 1))
	if c.bytes() != 2*pageSize {
		t.Fatalf("a 2 MiB region with 2 pages touched counts %d bytes, want %d", c.bytes(), 2*pageSize)
	}
	if b := c.get(g); &b[0] != &a[0] {
		t.Fatal("the idle region was not reused")
	}
	c.put(a, pages(1, 2))
	if c.bytes() != 3*pageSize {
		t.Fatalf("after a second user: %d bytes, want the union of 3 pages", c.bytes())
	}
	b := c.get(g) // a
	other := c.get(g)
	c.put(other, pages(7, 8))
	c.put(b, pages(9)) // a's 4 pages with other's 2: other, idle the longest, goes
	if c.bytes() != 4*pageSize || len(c.cold) != 1 || &c.cold[0][0] != &other[0] {
		t.Fatalf("after pushing out: %d bytes, %d cold regions, want %d and the other region", c.bytes(), len(c.cold), 4*pageSize)
	}
	if got := c.get(g); &got[0] != &a[0] {
		t.Fatal("an allocation did not take the idle region")
	}
	if got := c.get(g); &got[0] != &other[0] {
		t.Fatal("a fresh allocation did not take the cold region")
	}
	c.put(other, pages(5))
	if c.bytes() != pageSize {
		t.Fatalf("a region back from the cold counts %d bytes, want one page", c.bytes())
	}

	many := regionCache{max: maxPooledBytes}
	for range maxIdleRegions + 10 {
		many.put(many.get(pageSize), nil)
	}
	if n := len(many.idleRegions()); n > maxIdleRegions {
		t.Fatalf("the cache keeps %d idle regions, more than %d", n, maxIdleRegions)
	}
}

// allPages marks every page of a region of up to 64 MiB as touched.
var allPages = func() []uint64 {
	b := make([]uint64, (64<<20)/pageSize/64)
	for i := range b {
		b[i] = ^uint64(0)
	}
	return b
}()

// idleRegions returns what the cache holds, the longest idle first.
func (c *regionCache) idleRegions() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]byte
	for _, r := range c.idle {
		out = append(out, r.b)
	}
	return out
}

// TestWatchRingsOnWritesToItsBytes: a watch rings on a write that reaches
// one of its bytes, not on writes elsewhere in the allocation (its word
// and page included), and on the allocation's free; unwatch stops it.
func TestWatchRingsOnWritesToItsBytes(t *testing.T) {
	p := newPhysical(9, 0, device.Granularity)
	var word, run actor.Bell
	p.watch(pageSize+8, 4, &word)  // bytes 8-11 of page 1
	p.watch(3*pageSize-4, 8, &run) // the last 4 bytes of page 2, the first 4 of page 3
	cases := []struct {
		off, n    uint64
		word, run uint64 // rings after the write
	}{
		{0, 8, 0, 0},                   // page 0
		{pageSize + 100, 4, 0, 0},      // page 1, another word
		{pageSize + 4, 4, 0, 0},        // the bytes just before
		{pageSize + 12, 4, 0, 0},       // the bytes just after
		{pageSize + 11, 1, 1, 0},       // the last byte
		{pageSize + 4, 5, 2, 0},        // across the first byte
		{3*pageSize - 8, 4, 2, 0},      // the bytes just before run
		{3*pageSize + 3, 2, 2, 1},      // run's last byte and the next
		{2*pageSize - 1, 2, 2, 1},      // pages 1 and 2, neither's bytes
		{4 * pageSize, pageSize, 2, 1}, // page 4
		{0, 6 * pageSize, 3, 2},        // all
	}
	for _, c := range cases {
		p.written(c.off, c.n)
		if word.Rings() != c.word || run.Rings() != c.run {
			t.Fatalf("after a write of %d bytes at %d: rings %d and %d, want %d and %d", c.n, c.off, word.Rings(), run.Rings(), c.word, c.run)
		}
	}
	p.unwatch(pageSize+8, &word)
	p.written(pageSize+8, 4)
	if word.Rings() != 3 {
		t.Fatal("an unwatched bell rang")
	}
	p.free()
	if run.Rings() != 3 {
		t.Fatalf("the free rang %d times, want once", run.Rings()-2)
	}
}

// TestWatchesRingAsAScanWould: with many watches of different widths
// (some across buckets), some starting at the same byte, every write
// (some longer than all the buckets) rings exactly the bells
// whose bytes it reaches (the watches a scan of all of them finds), and
// unwatch stops one watch only.
func TestWatchesRingAsAScanWould(t *testing.T) {
	p := newPhysical(10, 0, device.Granularity)
	type w struct {
		lo, hi uint64
		bell   *actor.Bell
	}
	var all []w
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		lo, n := rng.Uint64N(2048), 1+rng.Uint64N(16)
		if i%20 == 0 {
			n = 1 + rng.Uint64N(600) // wide: across buckets
		}
		b := &actor.Bell{}
		p.watch(lo, n, b)
		all = append(all, w{lo, lo + n, b})
	}
	check := func() {
		for i := range 2000 {
			off, n := rng.Uint64N(2100), 1+rng.Uint64N(24)
			if i%50 == 0 {
				n = 1 + rng.Uint64N(3000) // longer than the buckets there are
			}
			want := make([]uint64, len(all))
			for i, x := range all {
				want[i] = x.bell.Rings()
				if x.lo < off+n && off < x.hi {
					want[i]++
				}
			}
			p.written(off, n)
			for i, x := range all {
				if x.bell.Rings() != want[i] {
					t.Fatalf("a write of %d bytes at %d: the watch of [%d, %d) rang %d times, want %d", n, off, x.lo, x.hi, x.bell.Rings(), want[i])
				}
			}
		}
	}
	check()
	var kept, gone []w
	var rang []uint64
	for i, x := range all {
		if i%2 == 1 {
			kept = append(kept, x)
			continue
		}
		p.unwatch(x.lo, x.bell)
		gone, rang = append(gone, x), append(rang, x.bell.Rings())
	}
	all = kept
	check()
	for i, x := range gone {
		if x.bell.Rings() != rang[i] {
			t.Fatalf("the unwatched bell of [%d, %d) rang", x.lo, x.hi)
		}
	}
	left := 0
	for _, ws := range p.watches {
		left += len(ws)
	}
	if left != len(kept) {
		t.Fatalf("%d watches left, want %d", left, len(kept))
	}
}
