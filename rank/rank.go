package rank

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/rank/ipc"
)

// WorldGroup is the name of the group of every rank of a job.
const WorldGroup = "world"

// DefaultTimeout bounds every wait of a rank unless configured otherwise.
const DefaultTimeout = 30 * time.Second

// Program is what every rank of a job runs.
type Program func(r *Rank) error

// Run builds a rank from p, runs program on it and closes the rank: what
// every runner (the simulated job, in-process ranks, a rank process) does
// with each rank.
func Run(p Params, program Program) error {
	r, err := New(p)
	if err != nil {
		return err
	}
	err = program(r)
	if cerr := r.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("rank %d: close: %w", p.ID, cerr))
	}
	return err
}

// DefaultSignalPadSize is the size of each allocation's signal pad in bytes.
const DefaultSignalPadSize = 2048

// PadRegions is how many groups one allocation can be rendezvoused on. Each
// (allocation, group) pair gets a signal pad of its own, so that a group's
// barriers and signals can never consume another group's: an allocation
// holds PadRegions pads of the pad size (16 KiB at the default size) before
// its data, and the members of a group agree at rendezvous on the lowest
// pad none of them uses yet on that allocation. A rendezvous on one group
// more is refused.
const PadRegions = 8

// Rank is one participant of a job. Its methods must be called from the
// rank's own program (one task); a Rank is not safe for concurrent use.
type Rank struct {
	id      int
	world   int
	host    string
	pid     int
	dev     device.Device
	rt      actor.Runtime
	store   store.Client
	abort   context.Context // nil: waits for the stream cannot be aborted
	ipc     ipc.Channel
	stream  device.Stream
	log     *zap.Logger
	timeout time.Duration

	allowOverlap   bool
	async          bool
	maxBlocks      int
	padSize        uint64
	groups         map[string][]int
	intraNodeCount int
	alloc          *allocator
	stage          Tensor // see staging
}

// Params are what a [Rank] is built from; [Run] fills them for each rank.
type Params struct {
	ID, World int
	Host      string // host name, compared during rendezvous
	PID       int    // process id, used to pass file descriptors
	Device    device.Device
	Runtime   actor.Runtime
	Store     store.Client
	IPC       ipc.Channel
	Logger    *zap.Logger
	// Abort, when not nil, ends the rank's waits for its stream early:
	// once it is done they return its cause (in a launched job the
	// [*PeerFailedError] of the peer that failed), wrapped with what was
	// waited for. Nil (the simulator, ranks of one process) waits for the
	// device on the calling task, which keeps simulations deterministic.
	Abort context.Context
	// Timeout bounds every wait (store, fd passing, signals); 0 waits forever.
	Timeout time.Duration
	// AllowOverlappingDevices lets several ranks of one host share a device.
	AllowOverlappingDevices bool
	// SignalPadSize is the pad size of every allocation (default 2048 bytes).
	SignalPadSize uint64
}

// New builds a rank and creates its stream.
func New(p Params) (*Rank, error) {
	if p.World < 1 {
		return nil, fmt.Errorf("rank: world size %d, want at least 1", p.World)
	}
	if p.ID < 0 || p.ID >= p.World {
		return nil, fmt.Errorf("rank: rank %d out of range [0, %d)", p.ID, p.World)
	}
	if p.Device == nil || p.Runtime == nil || p.Store == nil || p.IPC == nil {
		return nil, fmt.Errorf("rank %d: device, runtime, store and IPC channel are required", p.ID)
	}
	log := p.Logger
	if log == nil {
		log = zap.NewNop()
	}
	pad := p.SignalPadSize
	if pad == 0 {
		pad = DefaultSignalPadSize
	}
	if pad%4 != 0 {
		return nil, fmt.Errorf("rank %d: signal pad size %d is not a multiple of 4", p.ID, pad)
	}
	s, err := p.Device.NewStream()
	if err != nil {
		return nil, fmt.Errorf("rank %d: create stream: %w", p.ID, err)
	}
	world := make([]int, p.World)
	for i := range world {
		world[i] = i
	}
	r := &Rank{
		id: p.ID, world: p.World, host: p.Host, pid: p.PID,
		dev: p.Device, rt: p.Runtime, store: p.Store, abort: p.Abort, ipc: p.IPC, stream: s,
		log: log.With(zap.Int("rank", p.ID)), timeout: p.Timeout,
		allowOverlap: p.AllowOverlappingDevices, padSize: pad,
		groups: map[string][]int{WorldGroup: world},
	}
	r.alloc = newAllocator(r)
	return r, nil
}

// ID is the rank's global rank.
func (r *Rank) ID() int { return r.id }

// World is the number of ranks in the job.
func (r *Rank) World() int { return r.world }

// Device is the device the rank runs on.
func (r *Rank) Device() device.Device { return r.dev }

// Stream is the rank's stream: every operation of the rank is ordered on it,
// so operations on one signal pad never race each other.
func (r *Rank) Stream() device.Stream { return r.stream }

// Runtime is the runtime the rank runs on.
func (r *Rank) Runtime() actor.Runtime { return r.rt }

// Store is the rank's Store client.
func (r *Rank) Store() store.Client { return r.store }

// Logger is the rank's logger.
func (r *Rank) Logger() *zap.Logger { return r.log }

// Timeout is the rank's default timeout for every wait.
func (r *Rank) Timeout() time.Duration { return r.timeout }

// NewGroup registers a group of global ranks under name, on this rank. Every
// member must register the same group before using it.
func (r *Rank) NewGroup(name string, ranks []int) error {
	if err := r.newGroup(name, ranks); err != nil {
		return fmt.Errorf("rank %d: %w", r.id, err)
	}
	return nil
}

func (r *Rank) newGroup(name string, ranks []int) error {
	if name == "" {
		return errors.New("empty group name")
	}
	if _, ok := r.groups[name]; ok {
		return fmt.Errorf("group %q already exists", name)
	}
	if len(ranks) == 0 {
		return fmt.Errorf("group %q has no ranks", name)
	}
	sorted := slices.Clone(ranks)
	slices.Sort(sorted)
	for i, g := range sorted {
		if g < 0 || g >= r.world {
			return fmt.Errorf("group %q: rank %d out of range [0, %d)", name, g, r.world)
		}
		if i > 0 && sorted[i-1] == g {
			return fmt.Errorf("group %q: rank %d listed twice", name, g)
		}
	}
	r.groups[name] = sorted
	return nil
}

// group returns a registered group's members.
func (r *Rank) group(name string) ([]int, error) {
	g, ok := r.groups[name]
	if !ok {
		return nil, fmt.Errorf("unknown group %q", name)
	}
	return g, nil
}

// Write copies host bytes into t (len(data) must equal t's size).
func (r *Rank) Write(t Tensor, data []byte) error {
	if err := t.checkSize(); err != nil {
		return fmt.Errorf("rank %d: write: %w", r.id, err)
	}
	if uint64(len(data)) != t.Bytes() {
		return fmt.Errorf("rank %d: write of %d bytes into %v (%d bytes)", r.id, len(data), t, t.Bytes())
	}
	if err := r.dev.Write(r.stream, t.Ptr, data); err != nil {
		return fmt.Errorf("rank %d: write %v: %w", r.id, t, err)
	}
	return nil
}

// Read copies t to the host.
func (r *Rank) Read(t Tensor) ([]byte, error) {
	if err := t.checkSize(); err != nil {
		return nil, fmt.Errorf("rank %d: read: %w", r.id, err)
	}
	out := make([]byte, t.Bytes())
	if err := r.dev.Read(r.stream, out, t.Ptr); err != nil {
		return nil, fmt.Errorf("rank %d: read %v: %w", r.id, t, err)
	}
	return out, nil
}

// SetAsync chooses when collectives return. By default (false) each one
// waits for its kernel and returns the kernel's error. With async set they
// return once the kernel is queued on the rank's stream, as CUDA stream
// operations do: back-to-back calls then cost the device's time rather than
// a host round trip each, and a kernel's failure (a signal timeout, a bad
// pointer array) is reported by the next [Rank.Synchronize]. Read and Write
// still wait for the stream's earlier work.
func (r *Rank) SetAsync(async bool) { r.async = async }

// SetMaxBlocks replaces the all-reduce kernels' limit on blocks per launch
// when n is positive (see kernels.ShapeMax); 0 restores the kernels'
// defaults. A launch never has more blocks than the device has
// multiprocessors or, for kernels with barriers, the pad has channels.
func (r *Rank) SetMaxBlocks(n int) { r.maxBlocks = max(n, 0) }

// Async reports whether collectives return before their kernel completes.
func (r *Rank) Async() bool { return r.async }

// Synchronize waits for the work queued on the rank's stream and returns
// the first failure a kernel reported since the last Synchronize.
func (r *Rank) Synchronize() error {
	if err := r.waitStream(); err != nil {
		return fmt.Errorf("rank %d: synchronize: %w", r.id, err)
	}
	return nil
}

// Close frees every allocation and the rank's stream.
func (r *Rank) Close() error {
	err := r.alloc.close()
	if serr := r.dev.DestroyStream(r.stream); serr != nil && err == nil {
		err = fmt.Errorf("rank %d: destroy stream: %w", r.id, serr)
	}
	return err
}
