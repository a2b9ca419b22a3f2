package mutants

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/fuzz"
	"github.com/symmem/symmem/internal/barriermut"
	"github.com/symmem/symmem/internal/longtest"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/signal"
	"github.com/symmem/symmem/simjob"
)

// fuzzMutant is a broken variant of the protocol that symmem fuzz, with
// its default configuration, must find: apply installs the breakage in a
// job's configuration, on top of the hooks the fuzzer put there.
type fuzzMutant struct {
	name  string
	apply func(*simjob.Config)
}

// blocks installs a block wrapper in every simulated device.
func blocks(wrap func(kernels.Block) kernels.Block) func(*simjob.Config) {
	return func(cfg *simjob.Config) {
		inner := cfg.Device.WrapBlock
		cfg.Device.WrapBlock = func(b kernels.Block) kernels.Block {
			if inner != nil {
				b = inner(b)
			}
			return wrap(b)
		}
	}
}

// barrier installs a barrier mutation.
func barrier(m barriermut.Mutation) func(*simjob.Config) { return blocks(m.Wrap) }

// devices wraps every rank's device, inside the fuzzer's fault injection.
func devices(wrap func(device.Device) device.Device) func(*simjob.Config) {
	return func(cfg *simjob.Config) {
		inner := cfg.WrapDevice
		cfg.WrapDevice = func(r int, d device.Device) device.Device {
			d = wrap(d)
			if inner != nil {
				d = inner(r, d)
			}
			return d
		}
	}
}

// stores wraps every rank's Store client, inside the fuzzer's.
func stores(wrap func(store.Client) store.Client) func(*simjob.Config) {
	return func(cfg *simjob.Config) {
		inner := cfg.WrapStore
		cfg.WrapStore = func(r int, c store.Client) store.Client {
			c = wrap(c)
			if inner != nil {
				c = inner(r, c)
			}
			return c
		}
	}
}

func fuzzMutants() []fuzzMutant {
	relaxed, block, gpu := barriermut.Order(signal.Relaxed), barriermut.Scope(signal.Block), barriermut.Scope(signal.GPU)
	return append([]fuzzMutant{
		// The suite's original mutants.
		{"one-shot end barrier removed", barrier(barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 2, Skip: true})},
		{"two-shot middle barrier put relaxed", barrier(barriermut.Mutation{Kernel: kernels.TwoShotAllReduce, Barrier: 2, Put: relaxed})},
		{"one-shot start barrier wait relaxed", barrier(barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 1, Wait: relaxed})},
		{"one-shot start barrier wait skipped", barrier(barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 1, SkipWait: true})},
		{"channel bound off by world size", devices(func(d device.Device) device.Device { return &wideBound{Device: d} })},
		{"StoreExchange sequence per process", stores(func(c store.Client) store.Client { return &perProcessSeq{Client: c} })},
		{"one pad shared by two groups", stores(func(c store.Client) store.Client { return &unannouncedPads{Client: c} })},
		{"signal kernels on a second stream", devices(func(d device.Device) device.Device { return &sideStream{Device: d} })},
		// Barrier orders and presence.
		{"one-shot start barrier removed", barrier(barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 1, Skip: true})},
		{"two-shot start barrier removed", barrier(barriermut.Mutation{Kernel: kernels.TwoShotAllReduce, Barrier: 1, Skip: true})},
		{"two-shot second barrier removed", barrier(barriermut.Mutation{Kernel: kernels.TwoShotAllReduce, Barrier: 2, Skip: true})},
		{"two-shot _out end barrier removed", barrier(barriermut.Mutation{Kernel: kernels.TwoShotAllReduce, Barrier: 3, Skip: true})},
		{"one-shot copy start put relaxed", barrier(barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 1, Put: relaxed})},
		// (An end barrier whose wait is relaxed is no mutant: the kernel's
		// end acquires what the wait observed, so the rank's next rewrite
		// of its buffer follows the peers' reads; docs/check.md, "Kernel
		// boundaries".)
		{"two-shot _out end barrier put relaxed", barrier(barriermut.Mutation{Kernel: kernels.TwoShotAllReduce, Barrier: 3, Put: relaxed})},
		{"signal barrier kernel removed", barrier(barriermut.Mutation{Kernel: kernels.Barrier, Barrier: 1, Skip: true})},
		// Scopes.
		{"one-shot start barrier at block scope", barrier(barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 1, Scope: block})},
		{"two-shot second barrier at GPU scope", barrier(barriermut.Mutation{Kernel: kernels.TwoShotAllReduce, Barrier: 2, Scope: gpu})},
		// Missing block synchronisation.
		{"one-shot block sync after the start barrier missing", blocks(func(b kernels.Block) kernels.Block {
			if b.Kernel() != kernels.OneShotAllReduce {
				return b
			}
			return &laneZeroOnly{Block: b}
		})},
		// The low-latency all-reduce's workspace and flags.
		{"ll call number never advanced", blocks(func(b kernels.Block) kernels.Block {
			if b.Kernel() != kernels.LowLatencyAllReduce {
				return b
			}
			return &llNoAdvance{Block: b}
		})},
		{"ll workspace halves never alternate", blocks(func(b kernels.Block) kernels.Block {
			if b.Kernel() != kernels.LowLatencyAllReduce {
				return b
			}
			return &llOneHalf{Block: b}
		})},
		{"ll reader ignores the flag", blocks(func(b kernels.Block) kernels.Block {
			if b.Kernel() != kernels.LowLatencyAllReduce {
				return b
			}
			return &llNoFlagCheck{Block: b}
		})},
		{"ll flag of the previous call", blocks(func(b kernels.Block) kernels.Block {
			if b.Kernel() != kernels.LowLatencyAllReduce {
				return b
			}
			return &llStaleFlag{Block: b}
		})},
		// Chunk bounds.
		{"two-shot tail past whole chunks dropped", devices(func(d device.Device) device.Device { return &floorChunks{Device: d} })},
		// Rendezvous, Store and fd exchange.
		{"StoreExchange round number never advances", stores(func(c store.Client) store.Client { return &firstRound{Client: c} })},
		{"fd ring off by one", devices(func(d device.Device) device.Device { return &fdBehind{Device: d, prev: -1} })},
		{"signal pad not zeroed on allocation", devices(func(d device.Device) device.Device { return &padNotZeroed{Device: d} })},
		// Streams.
		{"reads not ordered after the stream", devices(func(d device.Device) device.Device { return &readAside{Device: d} })},
		{"synchronize loses kernel errors", devices(func(d device.Device) device.Device { return &quietSync{Device: d} })},
	}, survivorMutants()...)
}

// laneZeroOnly: the lanes of the start barrier other than lane 0 report
// their wait done at once, so the block goes on once lane 0's peer has
// arrived (a __syncthreads missing after the barrier, with thread 0's
// peer the only one waited for).
type laneZeroOnly struct {
	kernels.Block
	calls int
}

func (b *laneZeroOnly) Lanes(n int, fn func(kernels.Block) error) error {
	b.calls++
	if b.calls != 1 {
		return b.Block.Lanes(n, fn)
	}
	return b.Block.Lanes(n, func(l kernels.Block) error {
		if l.Lane() == 0 {
			return fn(l)
		}
		return fn(&skipWait{Block: l})
	})
}

type skipWait struct{ kernels.Block }

func (l *skipWait) CAS32(p device.Ptr, old, new uint32, o signal.Order, s signal.Scope) (uint32, error) {
	if old == signal.Raised {
		return signal.Raised, nil
	}
	return l.Block.CAS32(p, old, new, o, s)
}

// llNoAdvance: the last block never stores the call's number (the store
// after the finished-block count), so every call reuses number 1.
type llNoAdvance struct {
	kernels.Block
	counted bool
}

func (b *llNoAdvance) CAS32(p device.Ptr, old, new uint32, o signal.Order, s signal.Scope) (uint32, error) {
	b.counted = true
	return b.Block.CAS32(p, old, new, o, s)
}

func (b *llNoAdvance) Store(p device.Ptr, src []byte) error {
	if b.counted {
		return nil
	}
	return b.Block.Store(p, src)
}

// llOneHalf: every call number is odd (1, 3, 5, ...), so every call uses
// the same workspace half. The kernel's second load is the last call's
// number (the first is the buffer pointer array).
type llOneHalf struct {
	kernels.Block
	loads int
}

func (b *llOneHalf) Load(p device.Ptr, dst []byte) error {
	b.loads++
	if err := b.Block.Load(p, dst); err != nil || b.loads != 2 || len(dst) != 4 {
		return err
	}
	if last := binary.LittleEndian.Uint32(dst); last%2 == 1 {
		binary.LittleEndian.PutUint32(dst, last+1)
	}
	return nil
}

// llNoFlagCheck: the reader takes the packets as they are, arrived or not.
type llNoFlagCheck struct{ kernels.Block }

func (b *llNoFlagCheck) WaitU64s(p device.Ptr, dst []uint64, what string, _ func([]uint64) bool, timeout time.Duration) error {
	return b.Block.WaitU64s(p, dst, what, func([]uint64) bool { return true }, timeout)
}

// llStaleFlag: packets carry the previous call's number.
type llStaleFlag struct{ kernels.Block }

func (b *llStaleFlag) StoreU64s(p device.Ptr, vals []uint64) error {
	out := make([]uint64, len(vals))
	for i, v := range vals {
		out[i] = v - 1<<32
	}
	return b.Block.StoreU64s(p, out)
}

// floorChunks: two-shot reduces only the elements that fill whole chunks
// of world x vector, leaving a ragged tail as it was.
type floorChunks struct{ device.Device }

func (d *floorChunks) Launch(s device.Stream, l device.Launch) error {
	if a, ok := l.Args.(kernels.AllReduceArgs); ok && l.Kernel == kernels.TwoShotAllReduce {
		unit := uint64(a.World) * 16 / uint64(a.DType.Size())
		if a.Numel > unit {
			a.Numel -= a.Numel % unit
		}
		l.Args = a
	}
	return d.Device.Launch(s, l)
}

// firstRound numbers every collective of every group 0, so a rendezvous
// reads the keys an earlier one of its group left.
type firstRound struct{ store.Client }

func (c *firstRound) NextSequence(string) uint64 { return 0 }

// fdBehind imports, for each fd received, the one received before it: the
// peers' handles land one place off around the ring.
type fdBehind struct {
	device.Device
	prev int
}

func (d *fdBehind) ImportHandle(fd int) (device.Handle, error) {
	use := fd
	if d.prev >= 0 {
		use = d.prev
	}
	d.prev = fd
	return d.Device.ImportHandle(use)
}

// padNotZeroed skips the memset that zeroes a new allocation's pads.
type padNotZeroed struct{ device.Device }

func (d *padNotZeroed) Memset(s device.Stream, dst device.Ptr, v byte, n uint64) error {
	if v == 0 && n == rank.DefaultSignalPadSize*rank.PadRegions {
		return nil
	}
	return d.Device.Memset(s, dst, v, n)
}

// readAside copies device memory to the host on a stream of its own, not
// after the work queued on the rank's stream.
type readAside struct {
	device.Device
	aside device.Stream
	made  bool
}

func (d *readAside) Read(s device.Stream, dst []byte, src device.Ptr) error {
	if !d.made {
		st, err := d.Device.NewStream()
		if err != nil {
			return err
		}
		d.aside, d.made = st, true
	}
	return d.Device.Read(d.aside, dst, src)
}

// quietSync reports success from every synchronize, losing the failures
// of the kernels it waited for.
type quietSync struct{ device.Device }

func (d *quietSync) Synchronize(s device.Stream) error {
	_ = d.Device.Synchronize(s)
	return nil
}

// fuzzBudget is the schedules the fuzzer gets per mutant.
const fuzzBudget = 2000

// smokeMutants are the mutants the default test run tries, each killed
// within a few schedules: the shapes of past survivors but the slowest.
var smokeMutants = map[string]bool{
	"max drops a NaN from rank >= 1":               true,
	"min ties go to the later rank (sign of zero)": true,
	"bf16 avg divides before summing":              true,
	"wait_signal loses its timeout":                true,
}

// TestFuzzerKillsMutants runs symmem fuzz's default configuration
// (fuzz.DefaultConfig, one worker, no shrinking) against each mutant until
// a case fails, and logs the table of schedules each took. Every mutant
// runs with SYMMEM_LONG=1 (about a minute under the race detector), the
// smokeMutants otherwise; SYMMEM_MUTANTS, a comma-separated list of mutant
// numbers (or all), picks some. SYMMEM_MUTANT_TABLE names a file for the
// Markdown table.
func TestFuzzerKillsMutants(t *testing.T) {
	all := fuzzMutants()
	pick := make([]bool, len(all))
	switch v := os.Getenv("SYMMEM_MUTANTS"); v {
	case "":
		for i, m := range all {
			pick[i] = longtest.Enabled() || smokeMutants[m.name]
		}
	case "all":
		for i := range pick {
			pick[i] = true
		}
	default:
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > len(all) {
				t.Fatalf("SYMMEM_MUTANTS=%q: want all or mutant numbers in [1, %d]", v, len(all))
			}
			pick[n-1] = true
		}
	}
	var rows []string
	for i, m := range all {
		if !pick[i] {
			continue
		}
		cfg := fuzz.DefaultConfig()
		cfg.Seeds, cfg.Workers, cfg.Shrink, cfg.StopOnFailure, cfg.Instrument = fuzzBudget, 1, false, true, m.apply
		start := time.Now()
		rep, err := fuzz.Fuzz(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		took := time.Since(start).Round(time.Millisecond)
		if len(rep.Failures) == 0 {
			t.Errorf("mutant %d %q survived %d schedules of symmem fuzz", i+1, m.name, rep.Cases)
			rows = append(rows, fmt.Sprintf("| %d | %s | no | > %d | | %v |", i+1, m.name, rep.Cases, took))
			continue
		}
		o := rep.Failures[0].First
		line, _, _ := strings.Cut(o.Failure.Error(), "\n")
		if len(line) > 160 {
			line = line[:160] + "..."
		}
		rows = append(rows, fmt.Sprintf("| %d | %s | yes | %d | %s | %v |", i+1, m.name, rep.Cases, strings.ReplaceAll(line, "|", "/"), took))
		t.Logf("%s: found after %d schedules (seed %d): %s", m.name, rep.Cases, o.Case.Seed, o.Case.Command())
	}
	table := "| # | mutant | found | schedules | first failure | time |\n|---|---|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
	t.Logf("symmem fuzz (default flags) against the mutants, budget %d schedules each:\n%s", fuzzBudget, table)
	if path := os.Getenv("SYMMEM_MUTANT_TABLE"); path != "" {
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Fatalf("write kill table: %v", err)
		}
	}
}
