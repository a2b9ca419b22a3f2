package campaign

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// env is a fake environment.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestResolve(t *testing.T) {
	for _, c := range []struct {
		name   string
		flag   string
		count  int
		env    func(string) string
		index  int
		total  int
		source string // a part of the source
	}{
		{"flag", "2/5", 0, env(), 2, 5, "--shard 2/5"},
		{"flag wins over the environment", "1/3", 0, env(SlurmTaskID, "7", SlurmTaskMin, "4", SlurmTaskCount, "8", JobIndex, "0"), 1, 3, "--shard 1/3"},
		{"flag with its count", "1/3", 3, env(), 1, 3, "--shard 1/3"},
		{"nothing", "", 0, env(), 0, 1, "unsharded"},
		{"slurm from 0", "", 0, env(SlurmTaskID, "3", SlurmTaskMin, "0", SlurmTaskMax, "3", SlurmTaskCount, "4", SlurmTaskStep, "1"), 3, 4, "SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=4"},
		{"slurm from 1", "", 0, env(SlurmTaskID, "1", SlurmTaskMin, "1", SlurmTaskCount, "4"), 0, 4, "Slurm job array"},
		{"slurm with a step", "", 0, env(SlurmTaskID, "20", SlurmTaskMin, "0", SlurmTaskMax, "30", SlurmTaskCount, "4", SlurmTaskStep, "10"), 2, 4, "SLURM_ARRAY_TASK_STEP=10"},
		{"slurm wins over kubernetes", "", 0, env(SlurmTaskID, "5", SlurmTaskMin, "4", SlurmTaskCount, "2", JobIndex, "0", ShardCountEnv, "9"), 1, 2, "Slurm"},
		{"kubernetes, count from the flag", "", 6, env(JobIndex, "5"), 5, 6, "JOB_COMPLETION_INDEX=5, count 6 from --shard-count"},
		{"kubernetes, count from the environment", "", 0, env(JobIndex, "0", ShardCountEnv, "3"), 0, 3, "SYMMEM_SHARD_COUNT=3"},
		{"kubernetes, the flag wins over the environment", "", 2, env(JobIndex, "1", ShardCountEnv, "3"), 1, 2, "from --shard-count"},
		{"kubernetes wins over test sharding", "", 0, env(JobIndex, "1", ShardCountEnv, "3", TestIndex, "0", TestTotal, "2"), 1, 3, "Kubernetes"},
		{"test sharding", "", 0, env(TestIndex, "1", TestTotal, "2"), 1, 2, "TEST_SHARD_INDEX=1 TEST_TOTAL_SHARDS=2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Resolve(c.flag, c.count, c.env)
			if err != nil {
				t.Fatal(err)
			}
			if s.Index != c.index || s.Count != c.total || !strings.Contains(s.Source, c.source) {
				t.Errorf("got shard %s from %q, want %d/%d from %q", s, s.Source, c.index, c.total, c.source)
			}
		})
	}
}

func TestResolveRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		flag  string
		count int
		env   func(string) string
		want  string // a part of the error
	}{
		{"not i/n", "3", 0, env(), "want i/n"},
		{"index past the count", "4/4", 0, env(), "counts from 0, want 0 to 3"},
		{"negative index", "-1/4", 0, env(), "want 0 to 3"},
		{"no shards", "0/0", 0, env(), "want 1 to"},
		{"flag and count disagree", "1/4", 3, env(), "disagree"},
		{"negative count", "", -1, env(), "--shard-count -1"},
		{"count without an index", "", 4, env(), "no shard index"},
		{"slurm without its count", "", 0, env(SlurmTaskID, "1", SlurmTaskMin, "0"), "SLURM_ARRAY_TASK_COUNT is not set"},
		{"slurm id not a number", "", 0, env(SlurmTaskID, "x", SlurmTaskMin, "0", SlurmTaskCount, "2"), `SLURM_ARRAY_TASK_ID="x"`},
		{"slurm sparse array", "", 0, env(SlurmTaskID, "4", SlurmTaskMin, "1", SlurmTaskMax, "9", SlurmTaskCount, "3", SlurmTaskStep, "1"), "not an evenly spaced range"},
		{"slurm id off the steps", "", 0, env(SlurmTaskID, "5", SlurmTaskMin, "0", SlurmTaskMax, "30", SlurmTaskCount, "4", SlurmTaskStep, "10"), "not on the array's steps"},
		{"slurm with a shard count", "", 4, env(SlurmTaskID, "1", SlurmTaskMin, "0", SlurmTaskCount, "4"), "gives its own count"},
		{"kubernetes without a count", "", 0, env(JobIndex, "2"), "the shard count is missing"},
		{"kubernetes index past the count", "", 0, env(JobIndex, "3", ShardCountEnv, "3"), "want 0 to 2"},
		{"kubernetes index not a number", "", 0, env(JobIndex, "two", ShardCountEnv, "3"), `JOB_COMPLETION_INDEX="two"`},
		{"kubernetes count not a number", "", 0, env(JobIndex, "0", ShardCountEnv, "many"), `SYMMEM_SHARD_COUNT="many"`},
		{"test sharding without a total", "", 0, env(TestIndex, "0"), "TEST_TOTAL_SHARDS is not set"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Resolve(c.flag, c.count, c.env)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got shard %s, error %v; want an error with %q", s, err, c.want)
			}
		})
	}
}

func TestTouchStatusFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "status")
	s, err := Resolve("", 0, env(TestIndex, "0", TestTotal, "2", TestStatusFile, path))
	if err != nil {
		t.Fatal(err)
	}
	if s.StatusFile != path {
		t.Fatalf("status file %q, want %q", s.StatusFile, path)
	}
	if err := s.Touch(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("status file not touched: %v", err)
	}
	s.StatusFile = filepath.Join(t.TempDir(), "no", "such", "dir")
	if err := s.Touch(); err == nil || !strings.Contains(err.Error(), TestStatusFile) {
		t.Fatalf("touching an unwritable status file: %v", err)
	}
}

// TestShardsPartitionSeeds checks, seed by seed, that the shards of a
// range run every seed exactly once, in blocks that follow each other.
func TestShardsPartitionSeeds(t *testing.T) {
	for _, all := range []Range{{0, 0}, {0, 1}, {5, 3}, {0, 100}, {17, 1001}, {1 << 40, 37}} {
		for n := 1; n <= 12; n++ {
			seen := map[uint64]int{}
			next := all.First
			for i := range n {
				r := Shard{Index: i, Count: n}.Range(all)
				if r.First != next {
					t.Fatalf("%s in %d shards: shard %d starts at %d, want %d", all, n, i, r.First, next)
				}
				if lo, hi := all.Count/uint64(n), (all.Count+uint64(n)-1)/uint64(n); r.Count < lo || r.Count > hi {
					t.Errorf("%s in %d shards: shard %d has %d seeds, want %d to %d", all, n, i, r.Count, lo, hi)
				}
				for s := r.First; s < r.First+r.Count; s++ {
					seen[s]++
				}
				next = r.First + r.Count
			}
			if len(seen) != int(all.Count) {
				t.Fatalf("%s in %d shards: %d seeds run, want %d", all, n, len(seen), all.Count)
			}
			for s := all.First; s < all.First+all.Count; s++ {
				if seen[s] != 1 {
					t.Fatalf("%s in %d shards: seed %d run %d times", all, n, s, seen[s])
				}
			}
		}
	}
	// Near the top of the seed space the block bounds do not overflow.
	big := Range{First: 0, Count: 1<<64 - 1}
	if r := (Shard{Index: 2, Count: 3}).Range(big); r.First != 12297829382473034410 || r.First+r.Count != 1<<64-1 {
		t.Errorf("last third of 2^64-1 seeds: %+v", r)
	}
}
