// Package workload owns seeded all-reduce jobs with host-side checks: the
// inputs every rank contributes, the program each rank runs, and the
// verdict (float64 reference, bitwise agreement across ranks, untouched
// guard bytes). The command, the test suites and the benchmarks share it.
package workload

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"go.uber.org/zap"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
)

// Algo is an all-reduce algorithm choice, including automatic selection.
type Algo int

// The algorithm choices.
const (
	Auto Algo = iota
	OneShot
	TwoShot
	// LowLatency is the barrier-free one-shot of [rank.LowLatency].
	LowLatency
)

func (a Algo) String() string {
	switch a {
	case Auto:
		return "auto"
	case OneShot:
		return "one-shot"
	case TwoShot:
		return "two-shot"
	case LowLatency:
		return "ll"
	}
	return fmt.Sprintf("Algo(%d)", int(a))
}

// ParseAlgo accepts auto, one-shot, two-shot and ll (or low-latency).
func ParseAlgo(s string) (Algo, error) {
	switch strings.ToLower(strings.ReplaceAll(s, "_", "-")) {
	case "auto":
		return Auto, nil
	case "one-shot", "oneshot":
		return OneShot, nil
	case "two-shot", "twoshot":
		return TwoShot, nil
	case "ll", "low-latency", "lowlatency":
		return LowLatency, nil
	}
	return 0, fmt.Errorf("unknown algorithm %q (want auto, one-shot, two-shot or ll)", s)
}

// Resolve turns Auto into the algorithm used for bytes bytes on world
// ranks: the fastest one measured for that size and world (BENCHMARKS.md,
// nvidia-h200-x4, bf16 sum, host loops and graph replays alike). The
// low-latency one-shot up to [AutoLowLatencyMax] (its 256 KiB limit on
// worlds up to 4, where it beat every other algorithm and PyTorch's best
// from 1 KiB to 256 KiB), two-shot above; one-shot never won a size there
// (two-shot's specialised entries start as fast). Worlds above 4 are not
// measured yet: ll's traffic grows with the world (every rank writes two
// words per element to every peer), so auto keeps it to 64 KiB there.
func (a Algo) Resolve(bytes uint64, world int) Algo {
	if a != Auto {
		return a
	}
	if bytes <= AutoLowLatencyMax(world) {
		return LowLatency
	}
	return TwoShot
}

// AutoLowLatencyMax is the largest tensor Auto gives to the low-latency
// one-shot on world ranks.
func AutoLowLatencyMax(world int) uint64 {
	if world > 4 {
		return 64 << 10
	}
	return rank.LowLatencyMaxBytes
}

// Spec describes one checked all-reduce.
type Spec struct {
	World  int
	Bytes  uint64 // tensor size in bytes
	DType  device.DType
	Op     device.ReduceOp
	Algo   Algo
	Offset uint64 // byte offset of the tensor inside the symmetric buffer
	Seed   uint64
}

// guardBytes of sentinel surround the tensor inside the symmetric buffer.
const guardBytes = 64

// guard is the sentinel byte written around the tensor.
const guard = 0xA5

// MaxBytes is the largest tensor, and the largest offset, of a checked
// run (4 GiB): the host keeps every rank's input and output and a float64
// reference, so a larger run would not fit in memory anyway.
const MaxBytes = 1 << 32

// FieldError is a problem with one field of a [Spec]. Field is the field's
// name in lower case ("world", "bytes", "dtype", "op", "algo", "offset"),
// which is also the name of the command-line flag that sets it.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the problem.
func (e *FieldError) Unwrap() error { return e.Err }

// Validate checks the spec before any rank runs. It reports every problem
// at once, each a [*FieldError] naming the field that causes it.
func (s Spec) Validate() error {
	var errs []error
	bad := func(field string, err error) { errs = append(errs, &FieldError{Field: field, Err: err}) }
	if s.World < 1 {
		bad("world", fmt.Errorf("world size %d, want at least 1", s.World))
	}
	if !s.DType.Valid() {
		bad("dtype", fmt.Errorf("unsupported dtype %v", s.DType))
	}
	if !s.Op.Valid() {
		bad("op", fmt.Errorf("unsupported reduce op %v", s.Op))
	}
	switch s.Algo {
	case Auto, OneShot, TwoShot, LowLatency:
	default:
		bad("algo", fmt.Errorf("unknown algorithm %v", s.Algo))
	}
	if s.Bytes > MaxBytes {
		bad("bytes", fmt.Errorf("%d bytes is above the %d-byte (4 GiB) limit of a checked run", s.Bytes, uint64(MaxBytes)))
	}
	if s.Offset > MaxBytes {
		bad("offset", fmt.Errorf("offset of %d bytes is above the %d-byte (4 GiB) limit of a checked run", s.Offset, uint64(MaxBytes)))
	}
	if s.DType.Valid() {
		// The kernels' alignment rule, checked apart for the size and for the
		// offset so that each problem names its own field.
		if _, err := kernels.CheckAlignment(0, s.Bytes, s.DType); err != nil {
			bad("bytes", err)
		}
		if _, err := kernels.CheckAlignment(s.Offset, 0, s.DType); err != nil {
			bad("offset", err)
		}
	}
	return errors.Join(errs...)
}

// BufferBytes is the size of the symmetric buffer a rank of s allocates:
// the offset, the tensor and the guards around it. It fails where the sum
// does not fit in 64 bits (a spec that passed [Spec.Validate] never does).
func (s Spec) BufferBytes() (uint64, error) {
	return SumBytes(s.Offset, guardBytes, s.Bytes, guardBytes)
}

// SumBytes returns the sum of sizes, offsets or counts, or an error where
// the sum does not fit in 64 bits: every size arithmetic on values read
// from flags, programs or case files goes through it (or [CheckSpan]) so
// that a huge value is refused instead of wrapping around.
func SumBytes(sizes ...uint64) (uint64, error) {
	var sum uint64
	for _, n := range sizes {
		if n > math.MaxUint64-sum {
			return 0, fmt.Errorf("the sum of %v overflows 64 bits", sizes)
		}
		sum += n
	}
	return sum, nil
}

// CheckSpan checks that bytes bytes at offset lie inside a buffer of size
// bytes, without computing offset+bytes (which may wrap around).
func CheckSpan(offset, bytes, size uint64) error {
	if bytes > size || offset > size-bytes {
		return fmt.Errorf("%d bytes at offset %d do not fit in %d bytes", bytes, offset, size)
	}
	return nil
}

// Numel is the number of elements reduced.
func (s Spec) Numel() uint64 { return s.Bytes / uint64(s.DType.Size()) }

// Inputs returns every rank's input: seeded values in [-1, 1) (exactly
// representable in the dtype), plus a few integers so sums are exercised.
func (s Spec) Inputs() [][]byte {
	out := make([][]byte, s.World)
	for r := range out {
		rng := rand.New(rand.NewPCG(s.Seed, uint64(r)+1))
		vals := make([]float32, s.Numel())
		for i := range vals {
			if i%17 == 0 {
				vals[i] = float32(rng.IntN(9) - 4)
			} else {
				vals[i] = float32(rng.Float64()*2 - 1)
			}
		}
		b, err := kernels.Encode(s.DType, vals)
		if err != nil {
			panic(err) // unreachable: the dtype was validated
		}
		out[r] = b
	}
	return out
}

// RankResult is what one rank observed.
type RankResult struct {
	Output []byte // the reduced tensor
	Before []byte // guard bytes before the tensor after the run
	After  []byte // guard bytes after the tensor after the run
	Algo   Algo   // the algorithm that ran
}

// Program returns the rank program for s: allocate a symmetric buffer with
// guards, write this rank's input at the offset, reduce, read back.
// results must have one entry per rank.
func (s Spec) Program(inputs [][]byte, results []RankResult) rank.Program {
	return func(r *rank.Rank) error {
		res, err := s.run(r, inputs[r.ID()])
		results[r.ID()] = res
		return err
	}
}

func (s Spec) run(r *rank.Rank, input []byte) (RankResult, error) {
	total, err := s.BufferBytes()
	if err != nil {
		return RankResult{}, err
	}
	lead := s.Offset + guardBytes
	buf, err := r.Alloc(total)
	if err != nil {
		return RankResult{}, err
	}
	defer r.Free(buf)
	whole := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: total / 4}
	fill := bytes.Repeat([]byte{guard}, int(whole.Bytes()))
	if err := r.Write(whole, fill); err != nil {
		return RankResult{}, err
	}
	// Guards sit outside [lead, lead+Bytes); the tensor starts at lead, which
	// keeps the requested offset's alignment (guardBytes is a multiple of 16).
	in := rank.Tensor{Ptr: buf.Add(lead), DType: s.DType, Numel: s.Numel()}
	if err := r.Write(in, input); err != nil {
		return RankResult{}, err
	}
	res := RankResult{Algo: s.Algo.Resolve(s.Bytes, s.World)}
	r.Logger().Debug("all-reduce algorithm", zap.String("group", rank.WorldGroup), zap.Stringer("requested", s.Algo),
		zap.Stringer("algo", res.Algo), zap.Uint64("bytes", s.Bytes), zap.Stringer("dtype", s.DType), zap.Stringer("op", s.Op))
	switch res.Algo {
	case OneShot:
		out, err := r.OneShotAllReduce(in, s.Op, rank.WorldGroup)
		if err != nil {
			return res, err
		}
		res.Output, err = r.Read(out)
		_ = r.FreeTensor(out)
		if err != nil {
			return res, err
		}
	case TwoShot:
		if err := r.TwoShotAllReduce(in, s.Op, rank.WorldGroup); err != nil {
			return res, err
		}
		if res.Output, err = r.Read(in); err != nil {
			return res, err
		}
	case LowLatency:
		if res.Output, err = s.lowLatency(r, in); err != nil {
			return res, err
		}
	}
	after, err := r.Read(whole)
	if err != nil {
		return res, err
	}
	res.Before = after[:lead]
	res.After = after[lead+s.Bytes : lead+s.Bytes+guardBytes]
	return res, nil
}

// Verdict is the host's judgement of a run.
type Verdict struct {
	MaxAbsErr float64 // largest |result - float64 reference| over ranks
	Agree     bool    // every rank's output is bitwise identical
	Problems  []string
}

// OK reports whether the run passed every check.
func (v Verdict) OK() bool { return len(v.Problems) == 0 }

// Check judges results against a float64 reference of inputs.
func (s Spec) Check(inputs [][]byte, results []RankResult) Verdict {
	v := Verdict{Agree: true}
	ref := reference64(s, inputs)
	for r, res := range results {
		if len(res.Output) > 0 && !bytes.Equal(res.Output, results[0].Output) {
			v.Agree = false
			v.Problems = append(v.Problems, fmt.Sprintf("rank %d: output differs bitwise from rank 0's", r))
		}
		s.checkRank(&v, inputs, ref, r, res)
	}
	return v
}

// CheckRank judges one rank's result alone (a rank process of a
// multi-process job sees only its own): it must equal the kernels'
// reference bitwise, which every rank computes identically.
func (s Spec) CheckRank(inputs [][]byte, r int, res RankResult) Verdict {
	v := Verdict{Agree: true}
	s.checkRank(&v, inputs, reference64(s, inputs), r, res)
	if want, err := oracle.AllReduce(s.DType, s.Op, inputs); err != nil || !bytes.Equal(res.Output, want) {
		v.Agree = false
		v.Problems = append(v.Problems, fmt.Sprintf("rank %d: output differs bitwise from the reference every rank must produce", r))
	}
	return v
}

func (s Spec) checkRank(v *Verdict, inputs [][]byte, ref []float64, r int, res RankResult) {
	if uint64(len(res.Output)) != s.Bytes {
		v.Problems = append(v.Problems, fmt.Sprintf("rank %d: output has %d bytes, want %d", r, len(res.Output), s.Bytes))
		v.Agree = false
		return
	}
	if err := oracle.CheckClose(s.DType, s.Op, inputs, res.Output); err != nil {
		v.Problems = append(v.Problems, fmt.Sprintf("rank %d: %v", r, err))
	}
	got, _ := oracle.Decode(s.DType, res.Output)
	for i, g := range got {
		if d := math.Abs(float64(g) - ref[i]); d > v.MaxAbsErr || math.IsNaN(d) {
			v.MaxAbsErr = d
		}
	}
	if !allGuard(res.Before) {
		v.Problems = append(v.Problems, fmt.Sprintf("rank %d: bytes before the tensor were overwritten", r))
	}
	if !allGuard(res.After) {
		v.Problems = append(v.Problems, fmt.Sprintf("rank %d: bytes after the tensor were overwritten", r))
	}
}

func allGuard(b []byte) bool {
	for _, c := range b {
		if c != guard {
			return false
		}
	}
	return true
}

// reference64 reduces the decoded inputs in float64.
func reference64(s Spec, inputs [][]byte) []float64 {
	ref := make([]float64, s.Numel())
	for r, in := range inputs {
		vals, _ := oracle.Decode(s.DType, in)
		for i, x := range vals {
			x := float64(x)
			switch {
			case r == 0:
				ref[i] = x
			case s.Op == device.Sum || s.Op == device.Avg:
				ref[i] += x
			case s.Op == device.Max:
				ref[i] = math.Max(ref[i], x)
			case s.Op == device.Min:
				ref[i] = math.Min(ref[i], x)
			}
		}
	}
	if s.Op == device.Avg {
		for i := range ref {
			ref[i] /= float64(len(inputs))
		}
	}
	return ref
}

// lowLatency reduces in with a fresh [rank.LowLatency] instance into a
// plain tensor and reads the result.
func (s Spec) lowLatency(r *rank.Rank, in rank.Tensor) (_ []byte, err error) {
	l, err := r.NewLowLatency(rank.WorldGroup, max(s.Bytes, 4))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, l.Close()) }()
	out, err := r.Empty(in.Numel, in.DType)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, r.FreeTensor(out)) }()
	if err := l.AllReduce(in, s.Op, out); err != nil {
		return nil, err
	}
	return r.Read(out)
}
