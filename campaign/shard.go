// Package campaign splits a seeded campaign (symmem fuzz, symmem check,
// symmem litmus --seeds) into shards that run on many machines, writes each
// shard's report as JSON lines, and merges the reports into the report one
// process would have given.
//
// A campaign's seeds are first..first+n-1. Shard i of k runs the
// contiguous block [first+n*i/k, first+n*(i+1)/k): the k shards together
// run every seed once (see [Shard.Range]). The shard comes from a flag or,
// without one, from the environment a batch engine sets (see [Resolve]):
// a Slurm job array, a Kubernetes Indexed Job, or a test runner's
// TEST_SHARD_INDEX.
package campaign

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"
)

// MaxShards bounds a shard count.
const MaxShards = 1 << 20

// Shard is one shard of a campaign: Index counts from 0 to Count-1.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Source says where the shard came from: the flag, or the environment
	// variables read, with their values.
	Source string `json:"source"`
	// StatusFile is the file a test runner asks a sharding program to
	// touch (TEST_SHARD_STATUS_FILE); empty otherwise. See [Shard.Touch].
	StatusFile string `json:"-"`
}

// Unsharded is the source of the shard of a run that is not split.
const Unsharded = "unsharded: no --shard and no shard in the environment"

// Whole is the shard of an unsharded run: the whole campaign.
func Whole() Shard { return Shard{Index: 0, Count: 1, Source: Unsharded} }

// String is "i/n".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Sharded reports whether the campaign is split (Count > 1) or a shard was
// asked for explicitly.
func (s Shard) Sharded() bool { return s.Count > 1 || s.Source != Unsharded }

// ParseShard reads "i/n": shard i (from 0) of n.
func ParseShard(v string) (Shard, error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("%q: want i/n, shard i (counting from 0) of n, e.g. 0/4", v)
	}
	return newShard(i, n, "--shard "+v)
}

func newShard(i, n int, source string) (Shard, error) {
	if n < 1 || n > MaxShards {
		return Shard{}, fmt.Errorf("%s: %d shards: want 1 to %d", source, n, MaxShards)
	}
	if i < 0 || i >= n {
		return Shard{}, fmt.Errorf("%s: shard %d of %d: the index counts from 0, want 0 to %d", source, i, n, n-1)
	}
	return Shard{Index: i, Count: n, Source: source}, nil
}

// The environment variables [Resolve] reads.
const (
	SlurmTaskID    = "SLURM_ARRAY_TASK_ID"
	SlurmTaskMin   = "SLURM_ARRAY_TASK_MIN"
	SlurmTaskMax   = "SLURM_ARRAY_TASK_MAX"
	SlurmTaskStep  = "SLURM_ARRAY_TASK_STEP"
	SlurmTaskCount = "SLURM_ARRAY_TASK_COUNT"
	JobIndex       = "JOB_COMPLETION_INDEX"
	ShardCountEnv  = "SYMMEM_SHARD_COUNT"
	TestIndex      = "TEST_SHARD_INDEX"
	TestTotal      = "TEST_TOTAL_SHARDS"
	TestStatusFile = "TEST_SHARD_STATUS_FILE"
)

// Resolve finds the shard of this process. The first of these that is
// present wins:
//
//   - flag, "i/n" (the --shard flag; empty when not given);
//   - a Slurm job array: SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and
//     SLURM_ARRAY_TASK_COUNT (and SLURM_ARRAY_TASK_STEP, SLURM_ARRAY_TASK_MAX
//     when set: an array such as 0-30:10 is 4 shards); an array that is
//     not an evenly spaced range (1,4,9) is refused;
//   - a Kubernetes Indexed Job: JOB_COMPLETION_INDEX, the count from
//     count (the --shard-count flag; 0 when not given) or SYMMEM_SHARD_COUNT;
//   - a test runner: TEST_SHARD_INDEX and TEST_TOTAL_SHARDS (the shard's
//     StatusFile is then TEST_SHARD_STATUS_FILE, see [Shard.Touch]).
//
// Without any of them the process runs the whole campaign ([Whole]).
// count without an index from JOB_COMPLETION_INDEX is refused, and so is
// any variable that is not a number.
func Resolve(flag string, count int, getenv func(string) string) (Shard, error) {
	if count < 0 {
		return Shard{}, fmt.Errorf("--shard-count %d: want a positive number of shards", count)
	}
	if flag != "" {
		s, err := ParseShard(flag)
		if err == nil && count > 0 && count != s.Count {
			err = fmt.Errorf("--shard %s and --shard-count %d disagree", flag, count)
		}
		return s, err
	}
	if getenv(SlurmTaskID) != "" {
		if count > 0 {
			return Shard{}, fmt.Errorf("--shard-count %d goes with %s; a Slurm job array gives its own count (%s)", count, JobIndex, SlurmTaskCount)
		}
		return slurm(getenv)
	}
	if v := getenv(JobIndex); v != "" {
		return kubernetes(v, count, getenv)
	}
	if count > 0 {
		return Shard{}, fmt.Errorf("--shard-count %d: no shard index: want %s in the environment (a Kubernetes Indexed Job), or --shard i/n", count, JobIndex)
	}
	if getenv(TestIndex) != "" || getenv(TestTotal) != "" {
		i, err1 := envInt(getenv, TestIndex)
		n, err2 := envInt(getenv, TestTotal)
		if err := errors.Join(err1, err2); err != nil {
			return Shard{}, err
		}
		s, err := newShard(i, n, fmt.Sprintf("test sharding: %s=%d %s=%d", TestIndex, i, TestTotal, n))
		s.StatusFile = getenv(TestStatusFile)
		return s, err
	}
	return Whole(), nil
}

// slurm is the shard of a Slurm job array task.
func slurm(getenv func(string) string) (Shard, error) {
	id, err1 := envInt(getenv, SlurmTaskID)
	lo, err2 := envInt(getenv, SlurmTaskMin)
	n, err3 := envInt(getenv, SlurmTaskCount)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Shard{}, fmt.Errorf("a Slurm job array task: %w", err)
	}
	step := 1
	if getenv(SlurmTaskStep) != "" {
		var err error
		if step, err = envInt(getenv, SlurmTaskStep); err != nil {
			return Shard{}, fmt.Errorf("a Slurm job array task: %w", err)
		}
		if step < 1 {
			return Shard{}, fmt.Errorf("a Slurm job array task: %s=%d: want a step of at least 1", SlurmTaskStep, step)
		}
	}
	source := fmt.Sprintf("Slurm job array: %s=%d %s=%d %s=%d", SlurmTaskID, id, SlurmTaskMin, lo, SlurmTaskCount, n)
	if step != 1 {
		source += fmt.Sprintf(" %s=%d", SlurmTaskStep, step)
	}
	if getenv(SlurmTaskMax) != "" {
		hi, err := envInt(getenv, SlurmTaskMax)
		if err != nil {
			return Shard{}, fmt.Errorf("a Slurm job array task: %w", err)
		}
		if n < 1 || hi != lo+(n-1)*step {
			return Shard{}, fmt.Errorf("%s: %s=%d is not %d tasks from %d by steps of %d: the array is not an evenly spaced range; give --shard i/n instead",
				source, SlurmTaskMax, hi, n, lo, step)
		}
	}
	if (id-lo)%step != 0 {
		return Shard{}, fmt.Errorf("%s: task %d is not on the array's steps", source, id)
	}
	return newShard((id-lo)/step, n, source)
}

// kubernetes is the shard of a Kubernetes Indexed Job's pod.
func kubernetes(index string, count int, getenv func(string) string) (Shard, error) {
	i, err := strconv.Atoi(index)
	if err != nil {
		return Shard{}, fmt.Errorf("%s=%q: want a number", JobIndex, index)
	}
	source := fmt.Sprintf("Kubernetes Indexed Job: %s=%d", JobIndex, i)
	switch {
	case count > 0:
		source += fmt.Sprintf(", count %d from --shard-count", count)
	case getenv(ShardCountEnv) != "":
		if count, err = envInt(getenv, ShardCountEnv); err != nil {
			return Shard{}, err
		}
		source += fmt.Sprintf(" %s=%d", ShardCountEnv, count)
	default:
		return Shard{}, fmt.Errorf("%s: the shard count is missing: give --shard-count N or set %s (the Job's completions)", source, ShardCountEnv)
	}
	return newShard(i, count, source)
}

// envInt reads the integer variable name.
func envInt(getenv func(string) string, name string) (int, error) {
	v := getenv(name)
	if v == "" {
		return 0, fmt.Errorf("%s is not set", name)
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("%s=%q: want a number", name, v)
	}
	return n, nil
}

// Touch creates the shard's StatusFile, if it has one: a test runner reads
// it as "this program knows about sharding".
func (s Shard) Touch() error {
	if s.StatusFile == "" {
		return nil
	}
	f, err := os.OpenFile(s.StatusFile, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", TestStatusFile, err)
	}
	return f.Close()
}

// Range is a block of seeds: First, First+1, ..., First+Count-1.
type Range struct {
	First uint64 `json:"first"`
	Count uint64 `json:"count"`
}

// String is "first-last", or "none" for an empty range.
func (r Range) String() string {
	switch r.Count {
	case 0:
		return "none"
	case 1:
		return strconv.FormatUint(r.First, 10)
	}
	return fmt.Sprintf("%d-%d", r.First, r.First+r.Count-1)
}

// Range is the block of seeds the shard runs out of all: seeds
// [all.First + all.Count*i/n, all.First + all.Count*(i+1)/n). The blocks of
// the n shards follow each other and cover all; they differ in size by at
// most one seed.
func (s Shard) Range(all Range) Range {
	lo, hi := cut(all.Count, s.Index, s.Count), cut(all.Count, s.Index+1, s.Count)
	return Range{First: all.First + lo, Count: hi - lo}
}

// cut is floor(total*i/n), without overflow.
func cut(total uint64, i, n int) uint64 {
	hi, lo := bits.Mul64(total, uint64(i))
	q, _ := bits.Div64(hi, lo, uint64(n)) // i <= n, so hi < n: no overflow
	return q
}
