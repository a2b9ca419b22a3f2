package backend

import (
	"errors"
	"strings"
	"testing"

	"github.com/symmem/symmem/launch"
	"github.com/symmem/symmem/rank"
)

func TestChooseSimulator(t *testing.T) {
	b, err := Choose(Options{Device: "sim", World: 3, Seed: 5, Command: "allreduce"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind() != Sim || !b.Simulated() || b.World() != 3 || b.Rank() != -1 || b.Kind().String() != "sim" {
		t.Fatalf("backend %v world %d rank %d", b.Kind(), b.World(), b.Rank())
	}
	ran := make([]bool, 3)
	res, err := b.Run(func(r *rank.Rank) error {
		ran[r.ID()] = true
		if r.ID() == 2 {
			return errors.New("rank 2 refuses")
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "rank 2 refuses") {
		t.Errorf("run = %v, want rank 2's error", err)
	}
	if res.Trace == "" || !ran[0] || !ran[1] || !ran[2] {
		t.Errorf("trace %q, ranks run %v", res.Trace, ran)
	}
	again, _ := b.Run(func(*rank.Rank) error { return nil })
	if again.Trace == "" {
		t.Error("no trace")
	}
}

func TestChooseRefuses(t *testing.T) {
	if _, err := Choose(Options{Device: "tpu", World: 2}); err == nil || !strings.Contains(err.Error(), `--device "tpu"`) {
		t.Errorf("device tpu: %v", err)
	}
	t.Setenv(launch.EnvRank, "1")
	t.Setenv(launch.EnvWorld, "4")
	_, err := Choose(Options{Device: "sim", World: 2, Command: "bench"})
	if err == nil || !strings.Contains(err.Error(), "--device sim under symmem launch") || !strings.Contains(err.Error(), "'symmem bench --world 4'") {
		t.Errorf("sim under launch: %v", err)
	}
}

// TestChooseUnderLauncher: with the launcher's environment, cuda runs this
// process's rank in the launcher's world; an explicit other world is an
// error. (Nothing here opens a GPU.)
func TestChooseUnderLauncher(t *testing.T) {
	for k, v := range map[string]string{
		launch.EnvRank: "1", launch.EnvWorld: "4", launch.EnvLocalRank: "1",
		launch.EnvMasterAddr: "127.0.0.1", launch.EnvMasterPort: "1",
	} {
		t.Setenv(k, v)
	}
	b, err := Choose(Options{Device: "cuda", World: 2})
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind() != Process || b.World() != 4 || b.Rank() != 1 || b.Simulated() || b.Kind().String() != "cuda multi-process" {
		t.Errorf("backend %v world %d rank %d", b.Kind(), b.World(), b.Rank())
	}
	if _, err := Choose(Options{Device: "cuda", World: 2, WorldSet: true}); err == nil || !strings.Contains(err.Error(), "--world 2 but the launcher started 4 ranks") {
		t.Errorf("world 2 under a launcher of 4: %v", err)
	}
}
