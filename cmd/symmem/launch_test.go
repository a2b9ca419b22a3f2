package main

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/rank"
)

// testApp is shared: a process serves one remote endpoint.
var testApp = &app{log: zap.NewNop()}

const helperEnv = "SYMMEM_LAUNCH_TEST_HELPER"

// TestMain lets the test binary act as a rank process started by launch.
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperRank(mode))
	}
	os.Exit(m.Run())
}

// helperRank is a rank process: it reads the launcher's environment, dials
// the Store and all-gathers its rank; mode "fail1" makes rank 1 exit 3,
// "kill1" makes rank 1 SIGKILL itself while the others wait, and
// "interrupt" makes rank 0 send SIGINT to the launcher once every rank is
// up, after which every rank reports the signal it got.
func helperRank(mode string) int {
	var sigs chan os.Signal
	if mode == "interrupt" {
		sigs = make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	}
	env, ok, err := rank.ProcessEnvFromOS()
	if err != nil || !ok {
		fmt.Fprintln(os.Stderr, "helper: environment:", err, ok)
		return 2
	}
	switch {
	case mode == "fail1" && env.Rank == 1:
		return 3
	case mode == "kill1" && env.Rank == 1:
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	st, closeStore, err := store.Dial(env.StoreAddr, env.Token, 20*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: dial:", err)
		return 2
	}
	defer closeStore()
	all := make([]int, env.World)
	for i := range all {
		all[i] = i
	}
	ex, err := store.NewExchange(st, "test", store.Group{Name: "world", Ranks: all}, env.Rank)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	got, err := ex.AllGather([]byte(strconv.Itoa(100 + env.Rank)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: all-gather:", err)
		return 2
	}
	for i, g := range got {
		if string(g) != strconv.Itoa(100+i) {
			fmt.Fprintf(os.Stderr, "helper: rank %d's value %q\n", i, g)
			return 2
		}
	}
	fmt.Printf("rank %d of %d ok\n", env.Rank, env.World)
	if sigs == nil {
		return 0
	}
	if env.Rank == 0 {
		_ = syscall.Kill(os.Getppid(), syscall.SIGINT)
	}
	select {
	case s := <-sigs:
		fmt.Printf("rank %d got %v\n", env.Rank, s)
		return 0
	case <-time.After(20 * time.Second):
		fmt.Fprintf(os.Stderr, "helper: rank %d got no signal\n", env.Rank)
		return 4
	}
}

func launchSelf(t *testing.T, mode string, nproc int) (string, error) {
	t.Setenv(helperEnv, mode)
	var out, errOut bytes.Buffer
	err := runLaunch(testApp, &launchFlags{nproc: nproc, grace: 2 * time.Second}, []string{os.Args[0], "-test.run=^$"}, &out, &errOut)
	return out.String() + errOut.String(), err
}

func TestLaunchRanksMeetThroughTheStore(t *testing.T) {
	out, err := launchSelf(t, "ok", 3)
	if err != nil {
		t.Fatalf("launch: %v\n%s", err, out)
	}
	for i := range 3 {
		if !strings.Contains(out, fmt.Sprintf("rank %d of 3 ok", i)) {
			t.Errorf("rank %d did not report success:\n%s", i, out)
		}
	}
}

func TestLaunchReportsAFailedRank(t *testing.T) {
	_, err := launchSelf(t, "fail1", 3)
	if err == nil || !strings.Contains(err.Error(), "rank 1 exited with status 3") {
		t.Fatalf("launch = %v, want rank 1's exit status", err)
	}
}

func TestLaunchTearsDownWhenARankIsKilled(t *testing.T) {
	start := time.Now()
	_, err := launchSelf(t, "kill1", 3)
	if err == nil || !strings.Contains(err.Error(), "rank 1 was killed by signal killed") {
		t.Fatalf("launch = %v, want rank 1 killed", err)
	}
	// The survivors block in the all-gather with a 20 s timeout; teardown
	// must not wait for it.
	if time.Since(start) > 15*time.Second {
		t.Fatalf("launch took %v: the surviving ranks were not stopped", time.Since(start))
	}
}

// TestLaunchForwardsSignals: SIGINT sent to launch reaches every rank as
// SIGINT, and launch reports the interruption.
func TestLaunchForwardsSignals(t *testing.T) {
	out, err := launchSelf(t, "interrupt", 3)
	if err == nil || !strings.Contains(err.Error(), "interrupted by interrupt") {
		t.Fatalf("launch = %v, want an interruption\n%s", err, out)
	}
	for i := range 3 {
		if !strings.Contains(out, fmt.Sprintf("rank %d got interrupt", i)) {
			t.Errorf("rank %d did not get SIGINT:\n%s", i, out)
		}
	}
}

func TestLaunchRejectsBadNproc(t *testing.T) {
	err := runLaunch(testApp, &launchFlags{nproc: 0}, []string{"true"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--nproc 0") {
		t.Fatalf("nproc 0: %v", err)
	}
}
