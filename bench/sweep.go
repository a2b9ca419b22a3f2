package bench

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

// Sizes returns min, min*step, min*step^2, ... up to and including max
// (at most 64 sizes, since step is at least 2).
func Sizes(min, max, step uint64) ([]uint64, error) {
	switch {
	case min == 0:
		return nil, errors.New("sizes: the smallest size must be positive")
	case max < min:
		return nil, fmt.Errorf("sizes: largest size %d is below the smallest %d", max, min)
	case step < 2:
		return nil, fmt.Errorf("sizes: step %d, want at least 2", step)
	}
	var out []uint64
	for n := min; n <= max; n *= step {
		out = append(out, n)
		if n > max/step {
			break
		}
	}
	return out, nil
}

// ParseStep reads a size step: "x2", "x4", "2", "4" (any factor from 2 to
// 1024).
func ParseStep(s string) (uint64, error) {
	t := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "x")
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || n < 2 || n > 1024 {
		return 0, fmt.Errorf("step %q: want a factor such as x2 or x4", s)
	}
	return n, nil
}

// Plan is what a benchmark sweeps and how it times each case.
type Plan struct {
	Sizes  []uint64 // tensor sizes in bytes
	DTypes []device.DType
	Ops    []device.ReduceOp
	Algos  []workload.Algo
	Warmup int // untimed calls before the timed loops
	Iters  int // calls per timed loop
	Loops  int // timed loops; the median is reported
	Seed   uint64
	// Sync makes every timed call wait for its kernel (what a blocking
	// caller sees). By default the calls of a loop are queued back to back
	// on the rank's stream and the loop is timed by device events, as
	// PyTorch and nccl-tests time theirs.
	Sync bool
	// Graph captures each timed loop's calls once into a graph (a CUDA
	// graph on GPUs; see rank.Rank.Capture) and times its replays: one
	// launch per loop instead of one per call. Rows name the algorithm
	// with a "+graph" suffix. The check replays a captured single call.
	Graph bool
	// MaxBlocks replaces the kernels' limit on blocks per launch when
	// positive (see rank.Rank.SetMaxBlocks).
	MaxBlocks int
	// Check runs each case once more on fresh inputs after timing and
	// counts the elements that differ bitwise from oracle.AllReduce.
	Check bool
}

// Case is one timed configuration.
type Case struct {
	Bytes uint64
	DType device.DType
	Op    device.ReduceOp
	Algo  workload.Algo
}

// Numel is the number of elements reduced.
func (c Case) Numel() uint64 { return c.Bytes / uint64(c.DType.Size()) }

// Ran is the algorithm that runs for c on world ranks: Auto resolved by
// size and world.
func (c Case) Ran(world int) workload.Algo { return c.Algo.Resolve(c.Bytes, world) }

// AlgoName is how reports name c's algorithm on world ranks: "one-shot",
// "two-shot", "ll", or "auto/two-shot" when Auto picked two-shot.
func (c Case) AlgoName(world int) string {
	if c.Algo == workload.Auto {
		return "auto/" + c.Ran(world).String()
	}
	return c.Algo.String()
}

// Validate reports every problem of p at once.
func (p Plan) Validate() error {
	var errs []error
	if len(p.Sizes) == 0 {
		errs = append(errs, errors.New("no sizes"))
	}
	if len(p.DTypes) == 0 {
		errs = append(errs, errors.New("no element types"))
	}
	if len(p.Ops) == 0 {
		errs = append(errs, errors.New("no reduce ops"))
	}
	if len(p.Algos) == 0 {
		errs = append(errs, errors.New("no algorithms"))
	}
	if p.Warmup < 0 {
		errs = append(errs, fmt.Errorf("warmup %d is negative", p.Warmup))
	}
	if p.Iters < 1 {
		errs = append(errs, fmt.Errorf("iters %d, want at least 1", p.Iters))
	}
	if p.Loops < 1 {
		errs = append(errs, fmt.Errorf("loops %d, want at least 1", p.Loops))
	}
	if p.Graph && p.Sync {
		errs = append(errs, errors.New("graph and sync together: a graph's calls cannot be waited for one by one"))
	}
	for _, dt := range p.DTypes {
		if !dt.Valid() {
			errs = append(errs, fmt.Errorf("unsupported dtype %v", dt))
			continue
		}
		for _, n := range p.Sizes {
			if n == 0 || n > MaxBytes {
				errs = append(errs, fmt.Errorf("size %d: want 1..%d bytes", n, uint64(MaxBytes)))
			} else if _, err := kernels.CheckAlignment(0, n, dt); err != nil {
				errs = append(errs, fmt.Errorf("size %d with %v: %w", n, dt, err))
			}
		}
	}
	for _, op := range p.Ops {
		if !op.Valid() {
			errs = append(errs, fmt.Errorf("unsupported reduce op %v", op))
		}
	}
	for _, a := range p.Algos {
		if a != workload.Auto && a != workload.OneShot && a != workload.TwoShot && a != workload.LowLatency {
			errs = append(errs, fmt.Errorf("unknown algorithm %v", a))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench plan: %w", err)
	}
	return nil
}

// MaxBytes is the largest tensor a plan may time (4 GiB).
const MaxBytes = 1 << 32

// Cases lists p's cases in sweep order: by dtype, then op, then algorithm,
// then size. The low-latency algorithm runs only up to
// rank.LowLatencyMaxBytes.
func (p Plan) Cases() []Case {
	var out []Case
	for _, dt := range p.DTypes {
		for _, op := range p.Ops {
			for _, a := range p.Algos {
				for _, n := range p.Sizes {
					if a == workload.LowLatency && n > rank.LowLatencyMaxBytes {
						continue
					}
					out = append(out, Case{Bytes: n, DType: dt, Op: op, Algo: a})
				}
			}
		}
	}
	return out
}

// MaxSize is the largest size of p (0 without sizes).
func (p Plan) MaxSize() uint64 {
	var m uint64
	for _, n := range p.Sizes {
		m = max(m, n)
	}
	return m
}

// FormatSize prints a byte count compactly: 1K, 64K, 1M, 256M, or the plain
// number when it is not a whole multiple.
func FormatSize(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatUint(n>>30, 10) + "G"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatUint(n>>20, 10) + "M"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatUint(n>>10, 10) + "K"
	}
	return strconv.FormatUint(n, 10)
}
