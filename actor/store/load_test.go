package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/symmem/symmem/actor"
)

// loadRoundsEnv names the environment variable that sets the number of
// all_gathers each rank of a load test runs; without it the tests run the
// reduced CI counts below. The full load is 1000.
const loadRoundsEnv = "SYMMEM_LOAD_ROUNDS"

// The reduced counts keep the tests to seconds under the race detector,
// where a round of 64 simulated ranks takes about a second.
const (
	simLoadRanks     = 64
	simLoadCIRounds  = 5
	procLoadRanks    = 8
	procLoadCIRounds = 20
)

// loadRounds is the number of all_gathers per rank: the value of
// loadRoundsEnv, else ci.
func loadRounds(t *testing.T, ci int) int {
	t.Helper()
	v := os.Getenv(loadRoundsEnv)
	if v == "" {
		return ci
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number of rounds", loadRoundsEnv, v)
	}
	return n
}

// loadValue is rank's contribution to all_gather number round: the same
// size for every rank and round, and different for every (rank, round), so
// a value from another rank or another round is caught.
func loadValue(rank, round int) []byte {
	return fmt.Appendf(nil, "rank%03d-round%06d", rank, round)
}

// loadRanks runs rounds all_gathers of the group world/0..n-1 for rank
// over c, checking every value it gets back.
func loadRanks(c Client, rank, n, rounds int) error {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	ex, err := NewExchange(c, "load", Group{Name: "world", Ranks: all}, rank)
	if err != nil {
		return err
	}
	for round := range rounds {
		got, err := ex.AllGather(loadValue(rank, round))
		if err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		if len(got) != n {
			return fmt.Errorf("round %d: %d values, want %d", round, len(got), n)
		}
		for q, v := range got {
			if want := loadValue(q, round); !bytes.Equal(v, want) {
				return fmt.Errorf("round %d: rank %d's value is %q, want %q", round, q, v, want)
			}
		}
	}
	return nil
}

// TestLoadSimulatedRanks: 64 simulated ranks, each with its own client of
// one simulated store, run all_gathers back to back (5, or
// SYMMEM_LOAD_ROUNDS), every value checked; at the end only the last
// round's keys are left in the store.
func TestLoadSimulatedRanks(t *testing.T) {
	rounds := loadRounds(t, simLoadCIRounds)
	start := time.Now()
	s := actor.NewScheduler(actor.Config{Seed: 1})
	srv, err := NewServer(s, actor.NewSystem(), WithDispatcher(s.Dispatcher()))
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, simLoadRanks)
	finished := 0 // tasks run one at a time: no lock needed
	for r := range simLoadRanks {
		c := srv.Connect(fmt.Sprintf("rank%d", r), time.Minute)
		s.Go(fmt.Sprintf("rank%d", r), func() {
			errs[r] = loadRanks(c, r, simLoadRanks, rounds)
			finished++
		})
	}
	var keys int
	var countErr error
	s.Go("count", func() {
		countErr = s.Wait("every rank done", func() bool { return finished == simLoadRanks }, 0)
		if countErr == nil {
			keys, countErr = srv.Connect("count", time.Minute).NumKeys()
		}
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if countErr != nil {
		t.Fatalf("count the store's keys: %v", countErr)
	}
	// Each rank deletes its key of the previous round as it finishes a
	// round, so only the last round's keys remain.
	if keys != simLoadRanks {
		t.Fatalf("%d keys left in the store, want %d (the last round's)", keys, simLoadRanks)
	}
	wall := time.Since(start)
	t.Logf("%d simulated ranks x %d all_gathers (%d bytes each), every value checked: virtual time %v, %d scheduler steps, wall %v (%.1f all_gathers/s per rank)",
		simLoadRanks, rounds, len(loadValue(0, 0)), s.Now(), s.Steps(), wall.Round(time.Millisecond), float64(rounds)/wall.Seconds())
}

// helperLoad is one rank process of TestLoadProcesses.
func helperLoad() error {
	rank, err := strconv.Atoi(os.Getenv("STORE_RANK"))
	if err != nil {
		return err
	}
	rounds, err := strconv.Atoi(os.Getenv("STORE_ROUNDS"))
	if err != nil {
		return err
	}
	c, closeFn, err := Dial(os.Getenv("STORE_ADDR"), os.Getenv("STORE_TOKEN"), time.Minute)
	if err != nil {
		return err
	}
	defer closeFn()
	start := time.Now()
	if err := loadRanks(c, rank, procLoadRanks, rounds); err != nil {
		return err
	}
	took := time.Since(start)
	if err := c.Set(fmt.Sprintf("took/%d", rank), []byte(took.String())); err != nil {
		return err
	}
	return c.Set(fmt.Sprintf("done/%d", rank), loadValue(rank, rounds-1))
}

// TestLoadProcesses: 8 OS processes on loopback run all_gathers through
// the remote store back to back (20, or SYMMEM_LOAD_ROUNDS), every value
// checked by every process.
func TestLoadProcesses(t *testing.T) {
	rounds := loadRounds(t, procLoadCIRounds)
	token, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	srv := serveForTest(t, token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	hs := make([]*helper, procLoadRanks)
	for r := range hs {
		hs[r] = startHelper(t, ctx, "STORE_MODE=load", "STORE_ADDR="+srv.Addr(), "STORE_TOKEN="+token,
			fmt.Sprintf("STORE_RANK=%d", r), fmt.Sprintf("STORE_ROUNDS=%d", rounds))
	}
	for r, h := range hs {
		h.wait(t, fmt.Sprintf("load rank %d", r))
	}
	wall := time.Since(start)
	c := srv.Connect("parent", 10*time.Second)
	var slowest time.Duration
	for r := range procLoadRanks {
		v, err := c.Get(fmt.Sprintf("done/%d", r))
		if err != nil {
			t.Fatal(err)
		}
		if want := loadValue(r, rounds-1); !bytes.Equal(v, want) {
			t.Fatalf("rank %d finished with %q, want %q", r, v, want)
		}
		v, err = c.Get(fmt.Sprintf("took/%d", r))
		if err != nil {
			t.Fatal(err)
		}
		took, err := time.ParseDuration(string(v))
		if err != nil {
			t.Fatalf("rank %d's loop time %q: %v", r, v, err)
		}
		slowest = max(slowest, took)
	}
	t.Logf("%d processes x %d all_gathers through the remote store on loopback, every value checked: slowest process's all_gather loop %v (%.0f all_gathers/s), wall %v including process start and exit",
		procLoadRanks, rounds, slowest.Round(time.Millisecond), float64(rounds)/slowest.Seconds(), wall.Round(time.Millisecond))
}
