package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/launch"
	"github.com/symmem/symmem/rank"
)

// testApp is shared: a process serves one remote endpoint.
var testApp = &app{log: zap.NewNop()}

const helperEnv = "SYMMEM_LAUNCH_TEST_HELPER"

// TestMain lets the test binary act as a rank process started by launch:
// a helper rank, or the command itself in mode "symmem ARGS...".
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if args, ok := strings.CutPrefix(mode, "symmem "); ok {
			os.Exit(runMain(strings.Fields(args)))
		}
		if strings.HasPrefix(mode, "peer-") {
			os.Exit(helperProcessRank(mode))
		}
		os.Exit(helperRank(mode))
	}
	os.Exit(m.Run())
}

// spinningDevice stands in for a GPU whose kernels spin until their own
// timeout: Synchronize blocks for spin, then reports a timeout that does
// not name the cause. Only what a rank without allocations uses is
// implemented.
type spinningDevice struct {
	device.Device
	spin time.Duration
}

func (d *spinningDevice) Attributes() device.Attributes                 { return device.Attributes{Name: "spinning"} }
func (d *spinningDevice) NewStream() (device.Stream, error)             { return 1, nil }
func (d *spinningDevice) DestroyStream(s device.Stream) error           { return nil }
func (d *spinningDevice) Launch(s device.Stream, l device.Launch) error { return nil }
func (d *spinningDevice) Synchronize(s device.Stream) error {
	time.Sleep(d.spin)
	return fmt.Errorf("spinning device: kernel timed out after %v", d.spin)
}

// helperProcessRank is a rank process run through launch.RunProcess, with a
// device whose kernels never finish. Mode "peer-store" makes rank 1
// SIGKILL itself before RunProcess, while the others wait for it in
// RunProcess's Store all-gather of pids; "peer-stream" makes rank 1 SIGKILL
// itself in its program, while the others wait for their stream;
// "peer-fault" launches an all-reduce kernel and waits for it, with the
// SYMMEM_FAULT_KILL hook of the allreduce command armed. Every survivor
// prints its error on a line "helper rank N: ERROR".
func helperProcessRank(mode string) int {
	env, ok, err := launch.ProcessEnvFromOS()
	if err != nil || !ok {
		fmt.Fprintln(os.Stderr, "helper: environment:", err, ok)
		return 2
	}
	if mode == "peer-store" && env.Rank == 1 {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	var dev device.Device = &spinningDevice{spin: 30 * time.Second}
	program := func(r *rank.Rank) error {
		if mode == "peer-stream" && r.ID() == 1 {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		if mode == "peer-fault" {
			if err := r.Device().Launch(r.Stream(), device.Launch{Kernel: kernels.OneShotAllReduce}); err != nil {
				return err
			}
		}
		return r.Synchronize()
	}
	if mode == "peer-fault" {
		fault, ok, err := parseFaultKill(os.Getenv)
		if err != nil || !ok {
			fmt.Fprintln(os.Stderr, "helper: fault:", err, ok)
			return 2
		}
		program, dev = fault.apply(env.Rank, program, dev)
	}
	err = launch.RunProcess(env, dev, zap.NewNop(), 20*time.Second, program)
	if err != nil {
		fmt.Fprintf(os.Stderr, "helper rank %d: %s\n", env.Rank, strings.ReplaceAll(err.Error(), "\n", "; "))
		return 1
	}
	fmt.Printf("rank %d of %d ok\n", env.Rank, env.World)
	return 0
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
	env, ok, err := launch.ProcessEnvFromOS()
	if err != nil || !ok {
		fmt.Fprintln(os.Stderr, "helper: environment:", err, ok)
		return 2
	}
	if mode == "fork" || mode == "orphan" {
		return helperForkingRank(mode, env.Rank)
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

// helperForkingRank starts a long sleep that shares the rank's output
// pipes and prints its pid. In mode "fork" rank 1 then exits 3 and the
// others wait to be stopped; in mode "orphan" every rank exits 0 at once,
// leaving its sleep behind.
func helperForkingRank(mode string, self int) int {
	c := exec.Command("sleep", "97")
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "helper: start sleep:", err)
		return 2
	}
	fmt.Printf("rank %d forked %d\n", self, c.Process.Pid)
	switch {
	case mode == "orphan":
		return 0
	case self == 1:
		return 3
	}
	time.Sleep(60 * time.Second)
	return 5
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// TestLaunchStopsWhatRanksStarted: ranks that start a child holding their
// output do not keep launch alive. In "fork", rank 1 fails and the others
// are stopped at once (--drain 0): launch signals each rank's process
// group, so every sleep dies with it. In "orphan", every rank succeeds but
// leaves its sleep behind: launch waits at most pipeWait for the output,
// kills the leftovers and succeeds.
func TestLaunchStopsWhatRanksStarted(t *testing.T) {
	forked := regexp.MustCompile(`(?m)^rank (\d) forked (\d+)$`)
	for _, tc := range []struct {
		mode, wantErr, wantOut string
	}{
		{"fork", "rank 1 exited with status 3", "symmem launch: rank 1 exited with status 3; stopping the other ranks"},
		{"orphan", "", "processes it started still held its output after 1s; killed them"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			start := time.Now()
			out, err := launchSelf(t, tc.mode, 3)
			took := time.Since(start)
			if (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
				t.Fatalf("launch = %v, want %q\n%s", err, tc.wantErr, out)
			}
			if !strings.Contains(out, tc.wantOut) {
				t.Errorf("launch output lacks %q:\n%s", tc.wantOut, out)
			}
			if took > 20*time.Second {
				t.Errorf("launch took %v: it waited for the ranks' children", took)
			}
			pids := forked.FindAllStringSubmatch(out, -1)
			if len(pids) != 3 {
				t.Fatalf("%d ranks reported a child, want 3:\n%s", len(pids), out)
			}
			for _, m := range pids {
				pid, _ := strconv.Atoi(m[2])
				for deadline := time.Now().Add(5 * time.Second); alive(pid) && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				if alive(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("rank %s's child %d outlived launch", m[1], pid)
				}
			}
		})
	}
}

func launchSelf(t *testing.T, mode string, nproc int) (string, error) {
	return launchSelfDrain(t, mode, nproc, 0)
}

// launchSelfDrain runs nproc helper ranks in mode under launch with --drain
// drain and --grace 2s.
func launchSelfDrain(t *testing.T, mode string, nproc int, drain time.Duration) (string, error) {
	t.Setenv(helperEnv, mode)
	var out, errOut bytes.Buffer
	err := runLaunch(testApp, &launchFlags{nproc: nproc, drain: drain, grace: 2 * time.Second}, []string{os.Args[0], "-test.run=^$"}, &out, &errOut)
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
	if !strings.Contains(out, "launch: 3 ranks of "+os.Args[0]+" exited 0 in ") {
		t.Errorf("no summary line:\n%s", out)
	}
}

func TestLaunchReportsAFailedRank(t *testing.T) {
	_, err := launchSelf(t, "fail1", 3)
	if err == nil || !strings.Contains(err.Error(), "rank 1 exited with status 3") {
		t.Fatalf("launch = %v, want rank 1's exit status", err)
	}
}

// TestLaunchTearsDownWhenARankIsKilled: survivors that do not watch the
// Store for failures (the helper dials it directly) are stopped once
// --drain has passed.
func TestLaunchTearsDownWhenARankIsKilled(t *testing.T) {
	start := time.Now()
	out, err := launchSelfDrain(t, "kill1", 3, time.Second)
	if err == nil || !strings.Contains(err.Error(), "rank 1 was killed by signal killed") {
		t.Fatalf("launch = %v, want rank 1 killed\n%s", err, out)
	}
	// The survivors block in the all-gather with a 20 s timeout; teardown
	// must not wait for it.
	if time.Since(start) > 15*time.Second {
		t.Fatalf("launch took %v: the surviving ranks were not stopped", time.Since(start))
	}
	if !strings.Contains(out, "2 ranks still running after --drain 1s; sending SIGTERM") {
		t.Errorf("launch did not report the end of the drain:\n%s", out)
	}
}

// TestLaunchSurvivorsNameTheKilledRank: rank 1 SIGKILLs itself; launch
// publishes its death in the Store, and every survivor, blocked in a Store
// all-gather or in a wait for its stream whose kernel would spin for 30 s,
// returns an error naming rank 1 well within its 20 s timeout and exits by
// itself before --drain (15 s) ends.
func TestLaunchSurvivorsNameTheKilledRank(t *testing.T) {
	for _, mode := range []string{"peer-store", "peer-stream", "peer-fault=1:rendezvous", "peer-fault=1:allreduce"} {
		t.Run(mode, func(t *testing.T) {
			mode, fault, _ := strings.Cut(mode, "=")
			t.Setenv(faultKillEnv, fault)
			start := time.Now()
			out, err := launchSelfDrain(t, mode, 3, 15*time.Second)
			took := time.Since(start)
			if err == nil || err.Error() != "rank 1 was killed by signal killed" {
				t.Fatalf("launch = %v, want rank 1 killed\n%s", err, out)
			}
			for _, r := range []int{0, 2} {
				want := regexp.MustCompile(fmt.Sprintf(`(?m)^helper rank %d: .*peer rank 1 was killed by signal killed`, r))
				if !want.MatchString(out) {
					t.Errorf("rank %d's error does not name rank 1 as killed:\n%s", r, out)
				}
			}
			if strings.Contains(out, "SIGTERM;") || strings.Contains(out, "still running") {
				t.Errorf("the survivors had to be stopped:\n%s", out)
			}
			if fault != "" && !strings.Contains(out, "symmem: "+faultKillEnv+"="+fault+": rank process ") {
				t.Errorf("rank 1 did not report the fault hook:\n%s", out)
			}
			if took > 10*time.Second {
				t.Errorf("launch took %v, want the survivors to exit within a few seconds\n%s", took, out)
			}
		})
	}
}

func TestLaunchRejectsNegativeDurations(t *testing.T) {
	err := runLaunch(testApp, &launchFlags{nproc: 1, drain: -time.Second}, []string{"true"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--drain -1s") {
		t.Fatalf("drain -1s: %v", err)
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

func TestParseFaultKill(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == faultKillEnv {
				return v
			}
			return ""
		}
	}
	if _, ok, err := parseFaultKill(env("")); ok || err != nil {
		t.Errorf("unset: ok %v, err %v", ok, err)
	}
	for v, want := range map[string]faultKill{"1:rendezvous": {1, faultAtRendezvous}, "0:allreduce": {0, faultAtAllReduce}} {
		if got, ok, err := parseFaultKill(env(v)); !ok || err != nil || got != want {
			t.Errorf("%q = %+v, %v, %v; want %+v", v, got, ok, err, want)
		}
	}
	for _, v := range []string{"1", "x:allreduce", "-1:allreduce", "1:launch", "1:"} {
		if _, _, err := parseFaultKill(env(v)); err == nil || !strings.Contains(err.Error(), faultKillEnv) {
			t.Errorf("%q: err %v, want a complaint naming %s", v, err, faultKillEnv)
		}
	}
	// Other ranks run unchanged.
	dev := &spinningDevice{}
	if _, d := (faultKill{1, faultAtAllReduce}).apply(0, nil, dev); d != device.Device(dev) {
		t.Errorf("rank 0's device was wrapped")
	}
}

func TestFaultKillNeedsLaunchAndCUDA(t *testing.T) {
	t.Setenv(faultKillEnv, "1:allreduce")
	f := &allReduceFlags{specFlags: specFlags{world: 2, bytes: "4KiB", dtype: "f32", op: "sum", algo: "auto"}, seed: 1, dev: "sim", timeout: time.Second}
	if err := runAllReduce(context.Background(), testApp, f, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "works only under symmem launch") {
		t.Fatalf("allreduce on sim with %s set: %v", faultKillEnv, err)
	}
}

// TestLaunchOfTheSimulatorIsRefused: `symmem launch -- symmem allreduce`
// on the simulator fails at once in every rank, naming the way to run it.
func TestLaunchOfTheSimulatorIsRefused(t *testing.T) {
	out, err := launchSelf(t, "symmem allreduce --device sim", 2)
	if err == nil || !strings.Contains(err.Error(), "exited with status 1") {
		t.Fatalf("launch = %v, want a rank's failure\n%s", err, out)
	}
	want := "symmem: --device sim under symmem launch: the simulator runs all ranks in one process, so each of the launcher's 2 processes would run a separate simulation; run 'symmem allreduce --world 2' without launch"
	if !strings.Contains(out, want) || strings.Contains(out, "trace ") {
		t.Errorf("output lacks the refusal or shows a simulation:\n%s", out)
	}
}
