package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// maxBlocks bounds a launch's grid (far above anything the kernels use).
const maxBlocks = 1 << 16

// simDevice is one simulated device; it implements device.Device.
type simDevice struct {
	w          *World
	index      int
	closed     bool
	handles    map[device.Handle]*physical
	nextHandle device.Handle
	space      space
	streams    map[device.Stream]*stream
	nextStream device.Stream
	events     map[device.Event]*event
	nextEvent  device.Event
	graphs     map[device.Graph]*graph
	nextGraph  device.Graph
	memUsed    uint64
	segs       []segment // scratch for resolve; no access yields midway
	staging    []byte    // scratch for Copy, which does not yield between its read and its write
}

var _ device.Device = (*simDevice)(nil)

func newDevice(w *World, i int) *simDevice {
	d := &simDevice{
		w:          w,
		index:      i,
		handles:    map[device.Handle]*physical{},
		nextHandle: 1,
		space:      newSpace(i),
		streams:    map[device.Stream]*stream{},
		nextStream: 1,
		events:     map[device.Event]*event{},
		nextEvent:  1,
		graphs:     map[device.Graph]*graph{},
		nextGraph:  1,
	}
	d.streams[0] = &stream{dev: d, id: 0}
	return d
}

func (d *simDevice) live(op string) error {
	if d.closed {
		return fmt.Errorf("device %d: %s: device is closed", d.index, op)
	}
	return nil
}

// record appends an interaction of the device to the trace; format
// starts with "dev%d " and args with the device index (see
// [actor.Trace.Addf] for the argument types).
func (d *simDevice) record(kind, format string, args ...any) {
	d.w.sched.Recordf(kind, format, args...)
}

// multicastDisabled reports whether the environment forces multicast off.
func multicastDisabled() bool {
	for _, name := range []string{"SYMMEM_DISABLE_MULTICAST", "TORCH_SYMM_MEM_DISABLE_MULTICAST"} {
		switch strings.ToLower(strings.TrimSpace(os.Getenv(name))) {
		case "", "0", "false", "no", "off":
		default:
			return true
		}
	}
	return false
}

// Attributes describes the device. MulticastSupported reads the environment
// on every call.
func (d *simDevice) Attributes() device.Attributes {
	return device.Attributes{
		Name:               "sim",
		Index:              d.index,
		SMCount:            d.w.cfg.SMCount,
		Granularity:        device.Granularity,
		MulticastSupported: d.w.cfg.Multicast && !multicastDisabled(),
	}
}

// CreatePhysical creates size bytes of physical memory holding a
// deterministic garbage pattern (fresh GPU memory is not zeroed).
func (d *simDevice) CreatePhysical(size uint64) (device.Handle, error) {
	if err := d.live("create physical"); err != nil {
		return 0, err
	}
	if size == 0 || size%device.Granularity != 0 {
		return 0, fmt.Errorf("device %d: create physical: size %d is not a positive multiple of the %d-byte granularity", d.index, size, device.Granularity)
	}
	if size > d.w.cfg.MemoryLimit-d.memUsed {
		return 0, fmt.Errorf("device %d: create physical: out of memory (%d bytes requested, %d of %d in use)", d.index, size, d.memUsed, d.w.cfg.MemoryLimit)
	}
	d.w.physSeq++
	ph := newPhysical(d.w.physSeq, d.index, size)
	d.memUsed += size
	h := d.addHandle(ph)
	d.record("phys", "dev%d create %d bytes phys %d handle %d", d.index, size, ph.id, uint64(h))
	return h, nil
}

func (d *simDevice) addHandle(ph *physical) device.Handle {
	h := d.nextHandle
	d.nextHandle++
	d.handles[h] = ph
	return h
}

func (d *simDevice) handle(op string, h device.Handle) (*physical, error) {
	if err := d.live(op); err != nil {
		return nil, err
	}
	ph := d.handles[h]
	if ph == nil {
		return nil, fmt.Errorf("device %d: %s: unknown handle %d", d.index, op, h)
	}
	return ph, nil
}

// ReleasePhysical drops handle h; the bytes are freed once no handle, mapping
// or fd refers to them.
func (d *simDevice) ReleasePhysical(h device.Handle) error {
	ph, err := d.handle("release physical", h)
	if err != nil {
		return err
	}
	delete(d.handles, h)
	ph.handles--
	d.record("phys", "dev%d release handle %d phys %d", d.index, uint64(h), ph.id)
	d.w.release(ph)
	return nil
}

// ExportHandle opens an fd for h in this device's process.
func (d *simDevice) ExportHandle(h device.Handle) (int, error) {
	ph, err := d.handle("export handle", h)
	if err != nil {
		return -1, err
	}
	fd := d.w.openFD(d.index, ph)
	d.record("fd", "dev%d export handle %d phys %d fd %d", d.index, uint64(h), ph.id, fd)
	return fd, nil
}

// ImportHandle returns a handle to the physical memory behind fd, an fd of
// this device's process; the caller still owns fd.
func (d *simDevice) ImportHandle(fd int) (device.Handle, error) {
	if err := d.live("import handle"); err != nil {
		return 0, err
	}
	ph, err := d.w.lookupFD(d.index, fd)
	if err != nil {
		return 0, fmt.Errorf("device %d: import handle: %w", d.index, err)
	}
	ph.handles++
	h := d.addHandle(ph)
	d.record("fd", "dev%d import fd %d phys %d handle %d", d.index, fd, ph.id, uint64(h))
	return h, nil
}

// CloseFD closes fd in this device's process.
func (d *simDevice) CloseFD(fd int) error {
	if err := d.live("close fd"); err != nil {
		return err
	}
	if err := d.w.closeFD(d.index, fd); err != nil {
		return fmt.Errorf("device %d: close fd: %w", d.index, err)
	}
	d.record("fd", "dev%d close fd %d", d.index, fd)
	return nil
}

// Reserve reserves size bytes (a multiple of the granularity) of addresses.
func (d *simDevice) Reserve(size uint64) (device.Ptr, error) {
	if err := d.live("reserve"); err != nil {
		return 0, err
	}
	p, err := d.space.reserve(size)
	if err != nil {
		return 0, fmt.Errorf("device %d: %w", d.index, err)
	}
	d.record("vm", "dev%d reserve %#x + %d", d.index, uint64(p), size)
	return p, nil
}

// FreeRange returns a reserved range that maps nothing.
func (d *simDevice) FreeRange(p device.Ptr, size uint64) error {
	if err := d.live("free range"); err != nil {
		return err
	}
	if err := d.space.free(p, size); err != nil {
		return fmt.Errorf("device %d: %w", d.index, err)
	}
	d.record("vm", "dev%d free %#x + %d", d.index, uint64(p), size)
	return nil
}

// Map maps the first size bytes of h at p, inside a reserved range.
func (d *simDevice) Map(p device.Ptr, size uint64, h device.Handle) error {
	ph, err := d.handle("map", h)
	if err != nil {
		return err
	}
	if err := d.space.mapPhys(p, size, ph); err != nil {
		return fmt.Errorf("device %d: %w", d.index, err)
	}
	d.record("vm", "dev%d map %#x + %d phys %d", d.index, uint64(p), size, ph.id)
	return nil
}

// SetAccess grants access to the mappings that exactly tile [p, p+size).
func (d *simDevice) SetAccess(p device.Ptr, size uint64) error {
	if err := d.live("set access"); err != nil {
		return err
	}
	if err := d.space.setAccess(p, size); err != nil {
		return fmt.Errorf("device %d: %w", d.index, err)
	}
	d.record("vm", "dev%d access %#x + %d", d.index, uint64(p), size)
	return nil
}

// Unmap removes the mappings that exactly tile [p, p+size).
func (d *simDevice) Unmap(p device.Ptr, size uint64) error {
	if err := d.live("unmap"); err != nil {
		return err
	}
	phys, err := d.space.unmap(p, size)
	if err != nil {
		return fmt.Errorf("device %d: %w", d.index, err)
	}
	d.record("vm", "dev%d unmap %#x + %d", d.index, uint64(p), size)
	for _, ph := range phys {
		d.w.release(ph)
	}
	return nil
}

// resolve resolves [p, p+n) for a stream op or kernel, reporting faults.
func (d *simDevice) resolve(p device.Ptr, n uint64, write bool) ([]segment, error) {
	segs, err := d.space.resolve(p, n, write, d.segs[:0])
	if segs != nil {
		d.segs = segs
	}
	return segs, err
}

// Memset sets n bytes at dst to value, in stream order.
func (d *simDevice) Memset(s device.Stream, dst device.Ptr, value byte, n uint64) error {
	st, err := d.stream("memset", s)
	if err != nil {
		return err
	}
	d.submit(st, func(st *stream) {
		d.enqueue(st, "memset", "", func(o *op) error {
			segs, err := d.resolve(dst, n, true)
			if err != nil {
				return err
			}
			for _, sg := range segs {
				if value == 0 {
					clear(sg.b)
				} else {
					for i := range sg.b {
						sg.b[i] = value
					}
				}
				d.emitSeg(Store, o, sg, true)
			}
			return nil
		})
	})
	return nil
}

// Copy copies n bytes from src to dst (both addresses of this device; they
// may reach peer memory), in stream order. Overlapping ranges copy as if
// through a temporary buffer.
func (d *simDevice) Copy(s device.Stream, dst, src device.Ptr, n uint64) error {
	st, err := d.stream("copy", s)
	if err != nil {
		return err
	}
	d.submit(st, func(st *stream) {
		d.enqueue(st, "copy", "", func(o *op) error {
			if uint64(cap(d.staging)) < n {
				d.staging = make([]byte, n)
			}
			tmp := d.staging[:n]
			if err := d.read(o, src, tmp); err != nil {
				return err
			}
			return d.write(o, dst, tmp)
		})
	})
	return nil
}

func (d *simDevice) read(o *op, src device.Ptr, dst []byte) error {
	segs, err := d.resolve(src, uint64(len(dst)), false)
	if err != nil {
		return err
	}
	at := 0
	for _, sg := range segs {
		at += copy(dst[at:], sg.b)
		d.emitSeg(Load, o, sg, false)
	}
	return nil
}

func (d *simDevice) write(o *op, dst device.Ptr, src []byte) error {
	segs, err := d.resolve(dst, uint64(len(src)), true)
	if err != nil {
		return err
	}
	at := 0
	for _, sg := range segs {
		at += copy(sg.b, src[at:])
		d.emitSeg(Store, o, sg, true)
	}
	return nil
}

func (d *simDevice) emitSeg(kind AccessKind, o *op, sg segment, write bool) {
	if d.w.observe == nil {
		return
	}
	d.w.emit(&Access{
		Kind: kind, Parent: -1, Device: d.index, Stream: o.stream.id, Seq: o.seq, Op: o.name,
		Block: -1, Lane: -1, Addr: sg.addr, Size: uint64(len(sg.b)), Phys: sg.phys.id,
		PhysOffset: sg.off, Owner: sg.phys.owner, Write: write,
	})
}

// Write copies src to dst after the stream's earlier work and returns when
// done, with the copy's own error (kernel errors stay for Synchronize).
func (d *simDevice) Write(s device.Stream, dst device.Ptr, src []byte) error {
	st, err := d.stream("write", s)
	if err != nil {
		return err
	}
	if err := d.waitable("write", st); err != nil {
		return err
	}
	// From a task, Write returns only once the op has run (or the run is
	// ending), so the op may read src in place; outside a task it returns
	// at once and the op needs its own copy.
	buf := src
	if d.w.sched.Current() == nil {
		buf = append([]byte(nil), src...)
	}
	o := d.enqueue(st, "write", "", func(o *op) error { return d.write(o, dst, buf) })
	return d.await(st, o)
}

// Read copies device bytes at src into dst after the stream's earlier work
// and returns when done, with the copy's own error.
func (d *simDevice) Read(s device.Stream, dst []byte, src device.Ptr) error {
	st, err := d.stream("read", s)
	if err != nil {
		return err
	}
	if err := d.waitable("read", st); err != nil {
		return err
	}
	o := d.enqueue(st, "read", "", func(o *op) error { return d.read(o, src, dst) })
	return d.await(st, o)
}

// Launch checks l and enqueues it. Pointer arguments are copied now, as a
// real launch packs its arguments.
func (d *simDevice) Launch(s device.Stream, l device.Launch) error {
	st, err := d.stream("launch", s)
	if err != nil {
		return err
	}
	k, ok := kernels.Lookup(l.Kernel)
	if !ok {
		return fmt.Errorf("device %d: launch: unknown kernel %q (known: %s)", d.index, l.Kernel, strings.Join(kernels.Names(), ", "))
	}
	if l.Blocks < 1 || l.Blocks > maxBlocks {
		return fmt.Errorf("device %d: launch %s: grid of %d blocks out of range [1, %d]", d.index, l.Kernel, l.Blocks, maxBlocks)
	}
	if l.Threads < 1 || l.Threads > kernels.MaxThreads {
		return fmt.Errorf("device %d: launch %s: %d threads per block out of range [1, %d]", d.index, l.Kernel, l.Threads, kernels.MaxThreads)
	}
	args, err := k.Args(l.Args)
	if err != nil {
		return fmt.Errorf("device %d: launch: %w", d.index, err)
	}
	// Reject the shapes a real device rejects, so both fail alike.
	if err := k.CheckLaunch(l.Blocks, l.Threads, args); err != nil {
		return fmt.Errorf("device %d: launch: %w", d.index, err)
	}
	d.submit(st, func(st *stream) {
		d.w.launches++
		id := d.w.launches
		d.w.kernelsPending++
		d.enqueue(st, "kernel", k.Name, func(o *op) error {
			defer func() { d.w.kernelsPending-- }()
			run := d.runKernel
			if d.w.cfg.Kernels.PTX {
				run = d.runPTX
			}
			err := run(o, k, id, l.Blocks, l.Threads, args)
			device.LabelKernelError(err, l.Group)
			return err
		})
	})
	return nil
}

// runKernel runs every block as its own task and waits for all of them.
func (d *simDevice) runKernel(o *op, k *kernels.Kernel, id uint64, grid, threads int, args any) error {
	ln := &launch{dev: d, op: o, kernel: k.Name, id: id, grid: grid, threads: threads, args: args}
	d.record("kernel", "dev%d start %s#%d grid %d x %d", d.index, k.Name, id, grid, threads)
	return d.runBlocks(ln, func(ctx *blockCtx) error {
		var kb kernels.Block = ctx
		if wrap := d.w.cfg.WrapBlock; wrap != nil {
			kb = wrap(ctx)
		}
		return k.Run(kb, args)
	})
}

// runBlocks runs body for every block of ln, each block a labelled task,
// all of them resident at once, waits for all of them and returns the
// error of the lowest block.
func (d *simDevice) runBlocks(ln *launch, body func(ctx *blockCtx) error) error {
	return d.runResident(ln, Residency{Blocks: ln.grid}, body)
}

// firstError returns the error of the lowest index, noting how many more
// failed.
func firstError(errs []error, what string) error {
	var first error
	more := 0
	for _, err := range errs {
		switch {
		case err == nil:
		case first == nil:
			first = err
		default:
			more++
		}
	}
	if more > 0 {
		return fmt.Errorf("%w (and %d more %s failed)", first, more, what)
	}
	return first
}

// NVLinkMatrix reports the configured topology.
func (d *simDevice) NVLinkMatrix() ([][]int, error) {
	if err := d.live("nvlink matrix"); err != nil {
		return nil, err
	}
	return d.w.cfg.Topology.Matrix(len(d.w.devs)), nil
}

// Close releases the device's handles, mappings, reservations, streams,
// events and its process's fds. It refuses while a stream has work queued.
func (d *simDevice) Close() error {
	if err := d.live("close"); err != nil {
		return err
	}
	if err := d.syncContext(SyncClose, "close"); err != nil {
		return err
	}
	for _, id := range sortedKeys(d.streams) {
		if st := d.streams[id]; len(st.queue) > 0 {
			return fmt.Errorf("device %d: close: stream %d has %d ops queued (synchronize first)", d.index, id, len(st.queue))
		}
	}
	for len(d.space.maps) > 0 {
		m := d.space.maps[0]
		if err := d.Unmap(m.base, m.size); err != nil {
			return err
		}
	}
	d.space.res = nil
	for _, h := range sortedKeys(d.handles) {
		if err := d.ReleasePhysical(h); err != nil {
			return err
		}
	}
	for _, fd := range sortedKeys(d.w.fds[d.index]) {
		if err := d.w.closeFD(d.index, fd); err != nil {
			return err
		}
	}
	d.streams = map[device.Stream]*stream{}
	d.events = map[device.Event]*event{}
	d.graphs = map[device.Graph]*graph{}
	d.closed = true
	d.record("device", "dev%d close", d.index)
	return nil
}

func sortedKeys[K ~uint64 | ~int, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// loadU32 reads a little-endian uint32 from b.
func loadU32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

var errNotTask = errors.New("must be called from a scheduler task")

// wait blocks the calling task until ready, with no timeout: everything a
// device waits for finishes or times out on its own. ready can turn true
// only where bell rings (nil: anywhere).
func (d *simDevice) wait(what string, ready func() bool, bell *actor.Bell) error {
	if ready() {
		return nil
	}
	if d.w.sched.Current() == nil {
		return fmt.Errorf("device %d: waiting for %s: %w", d.index, what, errNotTask)
	}
	return d.w.sched.WaitBell(what, ready, bell, 0)
}
