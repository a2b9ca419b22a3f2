package sim

import (
	"fmt"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/signal"
)

// Defaults of [Config].
const (
	DefaultSMCount     = 132
	DefaultPIDBase     = 1000
	DefaultMemoryLimit = 4 << 30
	nvlinksPerPair     = 18
	firstFD            = 3
)

// Config configures a [World].
type Config struct {
	World   int // number of devices, 1..72
	SMCount int // multiprocessors per device; 0 means DefaultSMCount
	// Multicast is the multicast attribute the devices report (before the
	// SYMMEM_DISABLE_MULTICAST / TORCH_SYMM_MEM_DISABLE_MULTICAST override).
	Multicast bool
	Topology  Topology // NVLink topology; the zero value is fully connected
	// PIDBase is the simulated process id of device 0 (device i runs in
	// process PIDBase+i); 0 means DefaultPIDBase.
	PIDBase int
	// MemoryLimit bounds the physical memory created on each device, in
	// bytes; 0 means DefaultMemoryLimit.
	MemoryLimit uint64
	// WrapBlock, when set, replaces the Block every kernel block runs
	// against (fault injection and the protocol mutation self-test; nil in
	// normal runs). It is called in the block's task before the body runs.
	// PTX launches have no Go body and ignore it.
	WrapBlock func(kernels.Block) kernels.Block
	// Kernels chooses between the kernels' Go twins (the zero value) and
	// their PTX, run thread by thread.
	Kernels Kernels
	// SharedContext makes every device of the world one GPU context, as
	// ranks of one process that each open the same GPU share its primary
	// context. Then the host calls in ContextSync wait for every kernel
	// queued or running on any device of the world and, while they wait,
	// hold the context: every other device's stream calls (launches,
	// copies, reads, writes, synchronizes) wait behind them, as CUDA driver
	// calls wait for a call that synchronises the context. A rank whose
	// peer's kernel spins for it then waits until that kernel times out.
	SharedContext bool
	// ContextSync lists the host calls that synchronise a shared context.
	// The zero value models the CUDA device of this module, which makes
	// none while another rank shares the GPU (it pools what it would free);
	// SyncDestroyStream models a device that frees a stream's pinned host
	// memory when the stream is destroyed, as it did before.
	ContextSync HostCalls
}

// World is a host of simulated devices driven by one scheduler, with the
// per-process fd tables their exported handles live in.
type World struct {
	sched     *actor.Scheduler
	cfg       Config
	devs      []*simDevice
	fds       []map[int]*physical // per device's process
	physSeq   uint64
	launches  uint64
	observe   func(*Access)
	executed  uint64              // instructions the PTX threads of its launches executed
	lockstep  uint64              // those executed by warps in lockstep (ptx.Lockstep)
	scratch   Access              // the access an observer is handed (see emit)
	weak      weakMem             // weak reads of kernel threads (weak.go)
	waits     map[int]*SignalWait // blocked signal waits by task
	timedOut  []SignalWait        // the waits at the first signal timeout
	timeoutAt time.Duration       // when it happened

	// observeWarp takes a warp's plain accesses at once (see
	// ObserveWarp), batch collects them.
	observeWarp func(*WarpAccess)
	batch       warpBatch
	// warp is startWarp's buffers (nil while a call holds them).
	warp *warpStart

	// kernelsPending counts kernel ops queued or running on every device;
	// ctxHolder is the device inside a call that synchronises the shared
	// context (ctxCall), or -1.
	kernelsPending int
	ctxHolder      int
	ctxCall        string
}

// NewWorld builds cfg.World devices on scheduler s.
func NewWorld(s *actor.Scheduler, cfg Config) (*World, error) {
	if s == nil {
		return nil, fmt.Errorf("sim: nil scheduler")
	}
	if err := signal.CheckWorld(cfg.World); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	if cfg.SMCount < 0 {
		return nil, fmt.Errorf("sim: negative SM count %d", cfg.SMCount)
	}
	if cfg.SMCount == 0 {
		cfg.SMCount = DefaultSMCount
	}
	if cfg.PIDBase == 0 {
		cfg.PIDBase = DefaultPIDBase
	}
	if cfg.PIDBase < 0 {
		return nil, fmt.Errorf("sim: negative PID base %d", cfg.PIDBase)
	}
	if cfg.MemoryLimit == 0 {
		cfg.MemoryLimit = DefaultMemoryLimit
	}
	if err := cfg.Topology.check(cfg.World); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	w := &World{sched: s, cfg: cfg, waits: map[int]*SignalWait{}, ctxHolder: -1}
	for i := 0; i < cfg.World; i++ {
		w.devs = append(w.devs, newDevice(w, i))
		w.fds = append(w.fds, map[int]*physical{})
	}
	return w, nil
}

// Size is the number of devices.
func (w *World) Size() int { return len(w.devs) }

// Scheduler is the scheduler the world runs on.
func (w *World) Scheduler() *actor.Scheduler { return w.sched }

// Device returns device i, or nil when i is out of range.
func (w *World) Device(i int) device.Device {
	if i < 0 || i >= len(w.devs) {
		return nil
	}
	return w.devs[i]
}

// PID is the simulated process id of device i's process.
func (w *World) PID(i int) int { return w.cfg.PIDBase + i }

// Observe installs fn to receive every memory access and synchronisation
// event of every device (nil removes it). See [Access]. The access fn is
// handed is valid only during the call: fn copies what it keeps.
func (w *World) Observe(fn func(*Access)) { w.observe, w.observeWarp = fn, nil }

// Observer returns the function installed with Observe, nil when none, so
// that a new observer can pass events on to it.
func (w *World) Observer() func(*Access) { return w.observe }

// PTXInstructions is the number of instructions the threads of the
// world's PTX launches executed so far (their lane-instructions: a warp
// instruction of 32 lanes counts 32).
func (w *World) PTXInstructions() uint64 { return w.executed }

// PTXLockstepInstructions is how many of [World.PTXInstructions] warps
// executed in lockstep, their lanes together.
func (w *World) PTXLockstepInstructions() uint64 { return w.lockstep }

func (w *World) proc(pid int) (int, error) {
	i := pid - w.cfg.PIDBase
	if i < 0 || i >= len(w.devs) {
		return 0, fmt.Errorf("sim: no process %d (processes are %d..%d)", pid, w.cfg.PIDBase, w.cfg.PIDBase+len(w.devs)-1)
	}
	return i, nil
}

// openFD installs ph in process i's fd table at the lowest free number.
func (w *World) openFD(i int, ph *physical) int {
	fd := firstFD
	for w.fds[i][fd] != nil {
		fd++
	}
	w.fds[i][fd] = ph
	ph.fds++
	return fd
}

func (w *World) lookupFD(i, fd int) (*physical, error) {
	ph := w.fds[i][fd]
	if ph == nil {
		return nil, fmt.Errorf("process %d has no open fd %d", w.PID(i), fd)
	}
	return ph, nil
}

func (w *World) closeFD(i, fd int) error {
	ph, err := w.lookupFD(i, fd)
	if err != nil {
		return err
	}
	delete(w.fds[i], fd)
	ph.fds--
	w.release(ph)
	return nil
}

// Transfer duplicates fd of process fromPid into process toPid's table, as
// passing it with SCM_RIGHTS does, and returns its number there.
func (w *World) Transfer(fromPid, fd, toPid int) (int, error) {
	from, err := w.proc(fromPid)
	if err != nil {
		return -1, fmt.Errorf("transfer fd %d: %w", fd, err)
	}
	to, err := w.proc(toPid)
	if err != nil {
		return -1, fmt.Errorf("transfer fd %d: %w", fd, err)
	}
	ph, err := w.lookupFD(from, fd)
	if err != nil {
		return -1, fmt.Errorf("transfer fd %d to process %d: %w", fd, toPid, err)
	}
	nfd := w.openFD(to, ph)
	w.sched.Recordf("fd", "transfer pid %d fd %d -> pid %d fd %d (phys %d)", fromPid, fd, toPid, nfd, ph.id)
	return nfd, nil
}

// Close closes fd in process pid.
func (w *World) Close(pid, fd int) error {
	i, err := w.proc(pid)
	if err != nil {
		return fmt.Errorf("close fd %d: %w", fd, err)
	}
	if err := w.closeFD(i, fd); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	w.sched.Recordf("fd", "close pid %d fd %d", pid, fd)
	return nil
}

// OpenFDs is the number of fds open in process pid (for leak checks).
func (w *World) OpenFDs(pid int) int {
	i, err := w.proc(pid)
	if err != nil {
		return 0
	}
	return len(w.fds[i])
}

// LiveBytes is the physical memory still held on device i (allocations
// not yet freed), for leak checks.
func (w *World) LiveBytes(i int) uint64 {
	if i < 0 || i >= len(w.devs) {
		return 0
	}
	return w.devs[i].memUsed
}

// Release frees the bytes of every allocation the devices still hold, as
// the end of their processes would, and closes the devices, for a caller
// done with the world: a simulation that ended with ranks that never freed
// their memory (a crash, a timeout) hands its bytes back for later worlds
// to reuse. Using a device afterwards fails; nothing of the world may run
// any more.
func (w *World) Release() {
	for _, d := range w.devs {
		d.closed = true
		for _, h := range sortedKeys(d.handles) {
			d.handles[h].free()
		}
		for _, m := range d.space.maps {
			m.phys.free()
		}
		clear(d.handles)
		d.space.maps, d.space.res = nil, nil
	}
	for _, fds := range w.fds {
		for _, fd := range sortedKeys(fds) {
			fds[fd].free()
		}
		clear(fds)
	}
}

// release frees ph's bytes once nothing refers to it.
func (w *World) release(ph *physical) {
	if ph.freed() || ph.handles > 0 || ph.maps > 0 || ph.fds > 0 {
		return
	}
	w.devs[ph.owner].memUsed -= ph.size()
	ph.free()
	w.sched.Recordf("phys", "free %d", ph.id)
}
