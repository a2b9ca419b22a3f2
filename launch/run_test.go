package launch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/internal/livetest"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/rank/ipc"
)

// testSystem is the actor system of every Store the tests serve: a
// process has one remote endpoint, on one system.
var testSystem = actor.NewSystem()

// helperEnv names the mode in which the test binary runs as a rank
// process started by Run.
const helperEnv = "SYMMEM_LAUNCH_PACKAGE_TEST_HELPER"

// TestMain lets the test binary act as a rank process (see helperRank).
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperRank(mode))
	}
	os.Exit(m.Run())
}

// helperRank is a rank process. Mode "env" prints what the rank read from
// its environment; mode "fail1" makes rank 1 exit 3 at once while the
// others wait in the Store for the failure Run publishes and print it.
func helperRank(mode string) int {
	env, ok, err := ProcessEnvFromOS()
	if err != nil || !ok {
		fmt.Fprintln(os.Stderr, "helper: environment:", err, ok)
		return 2
	}
	switch mode {
	case "env":
		fmt.Printf("rank %d world %d local %d store %s token %d bytes job %s\n",
			env.Rank, env.World, env.LocalRank, env.StoreAddr, len(env.Token), env.JobID)
		return 0
	case "fail1":
		if env.Rank == 1 {
			return 3
		}
		c, closeStore, err := store.Dial(env.StoreAddr, env.Token, 20*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper: dial:", err)
			return 2
		}
		defer closeStore()
		if err := c.Wait([]string{FailureKey}, 20*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "helper: wait:", err)
			return 2
		}
		v, err := c.Get(FailureKey)
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper: get:", err)
			return 2
		}
		fmt.Printf("rank %d saw %q\n", env.Rank, v)
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", mode)
	return 2
}

// runSelf runs nproc copies of the test binary as helper ranks in mode.
func runSelf(t *testing.T, mode string, o Options) (stdout, stderr string, err error) {
	t.Helper()
	t.Setenv(helperEnv, mode)
	var out, errOut bytes.Buffer
	o.Stdout, o.Stderr, o.System = &out, &errOut, testSystem
	err = Run(o, []string{os.Args[0], "-test.run=^$"})
	return out.String(), errOut.String(), err
}

func TestRunChecksItsArguments(t *testing.T) {
	for _, c := range []struct {
		o    Options
		args []string
		want string
	}{
		{Options{NProc: 2}, nil, "launch: no command to run"},
		{Options{NProc: 0}, []string{"true"}, "launch: 0 rank processes: want 1..72"},
		{Options{NProc: 73}, []string{"true"}, "launch: 73 rank processes: want 1..72"},
		{Options{NProc: 1, Drain: -time.Second}, []string{"true"}, "launch: drain -1s, grace 0s: want durations >= 0"},
		{Options{NProc: 1, Grace: -time.Second}, []string{"true"}, "launch: drain 0s, grace -1s: want durations >= 0"},
	} {
		if err := Run(c.o, c.args); err == nil || err.Error() != c.want {
			t.Errorf("Run(%+v, %q) = %v, want %q", c.o, c.args, err, c.want)
		}
	}
	err := Run(Options{NProc: 2, System: testSystem}, []string{"/nonexistent/rank-binary"})
	if err == nil || !strings.HasPrefix(err.Error(), "launch: start rank 0 (/nonexistent/rank-binary): ") {
		t.Errorf("Run of a missing binary = %v, want a failure to start rank 0", err)
	}
}

// TestRunGivesEveryRankItsEnvironment: every rank learns its rank, the
// world, its local rank, the Store's address and token and the job id;
// the Store, token and job are the same for all.
func TestRunGivesEveryRankItsEnvironment(t *testing.T) {
	out, errOut, err := runSelf(t, "env", Options{NProc: 3})
	if err != nil {
		t.Fatalf("Run = %v\n%s%s", err, out, errOut)
	}
	line := regexp.MustCompile(`(?m)^rank (\d) world 3 local (\d) store (127\.0\.0\.1:\d+/\S+) token (\d+) bytes job (launch-[0-9a-f]{16})$`)
	got := line.FindAllStringSubmatch(out, -1)
	if len(got) != 3 {
		t.Fatalf("%d ranks reported, want 3:\n%s%s", len(got), out, errOut)
	}
	var ranks []string
	for _, m := range got {
		ranks = append(ranks, m[1])
		if m[2] != m[1] || m[3] != got[0][3] || m[4] == "0" || m[4] != got[0][4] || m[5] != got[0][5] {
			t.Errorf("rank %s's environment %q differs from rank %s's %q", m[1], m[0], got[0][1], got[0][0])
		}
	}
	slices.Sort(ranks)
	if !slices.Equal(ranks, []string{"0", "1", "2"}) {
		t.Errorf("ranks %v, want 0, 1 and 2", ranks)
	}
	if errOut != "" {
		t.Errorf("a successful run wrote to stderr: %s", errOut)
	}
}

// TestRunPublishesTheFirstFailure: when rank 1 exits 3, Run publishes it
// in the Store, where the others read it and exit by themselves within
// the drain time; Run's error names rank 1.
func TestRunPublishesTheFirstFailure(t *testing.T) {
	start := time.Now()
	out, errOut, err := runSelf(t, "fail1", Options{NProc: 3, Drain: 20 * time.Second, Grace: time.Second})
	if err == nil || err.Error() != "rank 1 exited with status 3" {
		t.Fatalf("Run = %v, want rank 1's exit\n%s%s", err, out, errOut)
	}
	for _, r := range []int{0, 2} {
		if want := fmt.Sprintf("rank %d saw \"rank 1 exited with status 3\"", r); !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s%s", want, out, errOut)
		}
	}
	const note = "symmem launch: rank 1 exited with status 3; stopping the other ranks (told through the Store; SIGTERM in 20s unless they exit first)\n"
	if errOut != note {
		t.Errorf("stderr:\n%s\nwant\n%s", errOut, note)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("Run took %v: the ranks did not exit when told", took)
	}
}

func TestDescribe(t *testing.T) {
	if got := describe(errors.New("wait: no child processes")); got != "wait: no child processes" {
		t.Errorf("describe of a plain error = %q", got)
	}
	c := exec.Command("sh", "-c", "exit 7")
	if got := describe(c.Run()); got != "exited with status 7" {
		t.Errorf("describe of exit 7 = %q", got)
	}
}

// otherSignal is an os.Signal that is not a syscall.Signal.
type otherSignal struct{}

func (otherSignal) String() string { return "other" }
func (otherSignal) Signal()        {}

// TestStopAll: a signal that is not a syscall.Signal is sent as SIGTERM;
// a process that ignores it is killed after the grace time.
func TestStopAll(t *testing.T) {
	// start runs script in its own process group and waits for its first
	// line, "ready".
	start := func(script string) (*exec.Cmd, *bufio.Reader) {
		c := exec.Command("sh", "-c", script)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(out)
		if line, err := r.ReadString('\n'); line != "ready\n" {
			t.Fatalf("%q: first line %q, %v", script, line, err)
		}
		return c, r
	}
	// A shell that reports SIGTERM, and one that ignores it (its sleeps
	// do not, and end with it).
	polite, said := start("trap 'echo terminated; exit 0' TERM; echo ready; while :; do sleep 0.05; done")
	stubborn, _ := start("trap '' TERM; echo ready; while :; do sleep 0.05; done")
	t0 := time.Now()
	stopAll([]*exec.Cmd{polite, nil, stubborn}, otherSignal{}, 300*time.Millisecond)
	if line, _ := said.ReadString('\n'); line != "terminated\n" {
		t.Errorf("the process reporting SIGTERM said %q", line)
	}
	if err := polite.Wait(); err != nil {
		t.Errorf("the process reporting SIGTERM: %v", err)
	}
	if err := stubborn.Wait(); describe(err) != "was killed by signal killed" {
		t.Errorf("process ignoring SIGTERM: %v, want SIGKILL", err)
	}
	if took := time.Since(t0); took < 300*time.Millisecond || took > 10*time.Second {
		t.Errorf("the stubborn process was killed after %v, want the 300ms grace", took)
	}
}

func TestProcessEnvFromOS(t *testing.T) {
	good := map[string]string{
		EnvRank: "2", EnvWorld: "4", EnvLocalRank: "1", EnvMasterAddr: "127.0.0.1", EnvMasterPort: "29500",
		EnvStoreActor: "store-2", EnvToken: "secret", ipc.JobEnv: "launch-1",
	}
	set := func(m map[string]string) {
		for _, k := range []string{EnvRank, EnvWorld, EnvLocalRank, EnvMasterAddr, EnvMasterPort, EnvStoreActor, EnvToken, ipc.JobEnv} {
			t.Setenv(k, m[k])
		}
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range good {
			m[a] = b
		}
		m[k] = v
		return m
	}
	set(good)
	env, ok, err := ProcessEnvFromOS()
	want := ProcessEnv{Rank: 2, World: 4, LocalRank: 1, StoreAddr: "127.0.0.1:29500/store-2", Token: "secret", JobID: "launch-1"}
	if err != nil || !ok || env != want {
		t.Fatalf("ProcessEnvFromOS = %+v, %v, %v; want %+v", env, ok, err, want)
	}
	set(with(EnvStoreActor, ""))
	if env, _, err := ProcessEnvFromOS(); err != nil || env.StoreAddr != "127.0.0.1:29500" {
		t.Errorf("without a store actor: %+v, %v", env, err)
	}
	set(with(EnvRank, ""))
	if _, ok, err := ProcessEnvFromOS(); ok || err != nil {
		t.Errorf("without RANK: ok %v, error %v; want not launched", ok, err)
	}
	for _, c := range []struct {
		k, v, want string
	}{
		{EnvWorld, "four", `environment WORLD_SIZE="four": strconv.Atoi: parsing "four": invalid syntax`},
		{EnvLocalRank, "", `environment LOCAL_RANK="": strconv.Atoi: parsing "": invalid syntax`},
		{EnvMasterAddr, "", "environment: MASTER_ADDR and MASTER_PORT must be set"},
		{EnvMasterPort, "", "environment: MASTER_ADDR and MASTER_PORT must be set"},
		{EnvRank, "4", "environment: rank 4 of world 4"},
		{EnvRank, "-1", "environment: rank -1 of world 4"},
		{EnvWorld, "0", "environment: rank 2 of world 0"},
	} {
		set(with(c.k, c.v))
		_, ok, err := ProcessEnvFromOS()
		if !ok || err == nil || err.Error() != c.want {
			t.Errorf("%s=%q: ok %v, error %v; want %q", c.k, c.v, ok, err, c.want)
		}
	}
}

func TestAllowOverlappingFromEnv(t *testing.T) {
	for _, c := range []struct {
		symmem, torch string
		want          bool
	}{
		{"", "", false},
		{"0", "0", false},
		{"1", "", true},
		{"", "yes", true},
	} {
		t.Setenv("SYMMEM_ALLOW_OVERLAPPING_DEVICES", c.symmem)
		t.Setenv("TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES", c.torch)
		if got := AllowOverlappingFromEnv(); got != c.want {
			t.Errorf("SYMMEM_ALLOW_OVERLAPPING_DEVICES=%q TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES=%q: %v, want %v", c.symmem, c.torch, got, c.want)
		}
	}
}

// failingSet is a Store client whose Set fails.
type failingSet struct{ store.Client }

func (failingSet) Set(key string, v []byte) error { return errors.New("store closed") }

func TestPublishFailureError(t *testing.T) {
	err := PublishFailure(failingSet{}, &PeerFailedError{Rank: 2, Status: "exited with status 1"})
	if err == nil || err.Error() != "publish the failure of rank 2: store closed" {
		t.Errorf("PublishFailure = %v", err)
	}
}

// blockingStore's waits block until released, then report the key
// missing or the Store unreachable.
type blockingStore struct {
	store.Client
	fail    bool
	waiting chan struct{} // receives once per wait
	release chan struct{}
}

func (b *blockingStore) Wait(keys []string, timeout time.Duration) error {
	b.waiting <- struct{}{}
	<-b.release
	if b.fail {
		return errors.New("store unreachable")
	}
	return &store.MissingKeysError{Keys: keys}
}

// TestWatcherStopsWhileWaiting: a watcher stopped during a Store wait, or
// during its pause after a Store error, exits without firing.
func TestWatcherStopsWhileWaiting(t *testing.T) {
	b := &blockingStore{waiting: make(chan struct{}, 1), release: make(chan struct{})}
	w := watchFailures(b, 0, time.Hour, nil)
	<-b.waiting
	w.Stop()
	close(b.release)
	livetest.Within(t, w.exited, 5*time.Second, "exit of a watcher stopped during a wait")
	if w.ab.ctx.Err() != nil {
		t.Error("a watcher stopped during a wait fired")
	}

	core, logs := observer.New(zap.WarnLevel)
	b = &blockingStore{fail: true, waiting: make(chan struct{}, 1), release: make(chan struct{})}
	close(b.release)
	w = watchFailures(b, 3, time.Hour, zap.New(core))
	for deadline := time.Now().Add(5 * time.Second); logs.Len() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no warning after a Store error")
		}
	}
	if e := logs.All()[0]; e.Message != "rank 3: watching the Store for peer failures" || e.ContextMap()["error"] != "store unreachable" {
		t.Errorf("warning %q %v", e.Message, e.ContextMap())
	}
	w.Stop()
	livetest.Within(t, w.exited, 5*time.Second, "exit of a watcher pausing after a Store error")
	if w.ab.ctx.Err() != nil {
		t.Error("a watcher stopped in its pause fired")
	}
}

// stubDevice is the least a rank of one process needs of a device when
// its program touches nothing.
type stubDevice struct {
	device.Device
	mu      sync.Mutex
	streams int
}

func (d *stubDevice) Attributes() device.Attributes { return device.Attributes{Name: "stub"} }
func (d *stubDevice) NewStream() (device.Stream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.streams++
	return device.Stream(d.streams), nil
}
func (d *stubDevice) DestroyStream(s device.Stream) error { return nil }
func (d *stubDevice) Synchronize(s device.Stream) error   { return nil }

// serveStore serves a Store on loopback for the test's duration and
// returns the environment of rank r of world ranks using it.
func serveStore(t *testing.T, r, world int) ProcessEnv {
	t.Helper()
	token, err := store.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := store.Serve(testSystem, "127.0.0.1:0", token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return ProcessEnv{Rank: r, World: world, StoreAddr: srv.Addr(), Token: token, JobID: fmt.Sprintf("launch-test-%d", time.Now().UnixNano())}
}

// TestRunProcessOneRank: a job of one rank runs its program on the
// device it was given.
func TestRunProcessOneRank(t *testing.T) {
	env := serveStore(t, 0, 1)
	ran := false
	err := RunProcess(env, &stubDevice{}, nil, 10*time.Second, func(r *rank.Rank) error {
		ran = r.ID() == 0 && r.World() == 1
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("RunProcess = %v, program ran as rank 0 of 1: %v", err, ran)
	}
	fails := errors.New("the program fails")
	if err := RunProcess(env, &stubDevice{}, nil, 10*time.Second, func(*rank.Rank) error { return fails }); !errors.Is(err, fails) {
		t.Errorf("RunProcess of a failing program = %v, want its error", err)
	}
}

// TestRunProcessFailures: what goes wrong before the program runs is
// reported with the rank and the step.
func TestRunProcessFailures(t *testing.T) {
	err := RunProcess(ProcessEnv{Rank: 0, World: 1, StoreAddr: "127.0.0.1"}, &stubDevice{}, nil, 0, nil)
	if err == nil || err.Error() != `rank 0: dial store 127.0.0.1: store dial: address "127.0.0.1": address 127.0.0.1: missing port in address` {
		t.Errorf("RunProcess with a bad Store address = %v", err)
	}
	env := serveStore(t, 0, 0)
	if err := RunProcess(env, &stubDevice{}, nil, time.Second, nil); err == nil || !strings.HasPrefix(err.Error(), "rank 0: ") {
		t.Errorf("RunProcess in a world of 0 = %v", err)
	}
	// Rank 1 of the job sends what is not a pid, then the pid 0.
	for _, c := range []struct{ pid, want string }{
		{"not-a-pid!", `rank 0: rank 1's pid "not-a-pid!": strconv.Atoi`},
		{"0000000000", "rank 0: ipc: "},
	} {
		env := serveStore(t, 0, 2)
		peer, closePeer, err := store.Dial(env.StoreAddr, env.Token, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := store.NewExchange(peer, "launch", store.Group{Name: "pids", Ranks: []int{0, 1}}, 1)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := ex.AllGather([]byte(c.pid))
			done <- err
		}()
		err = RunProcess(env, &stubDevice{}, nil, 10*time.Second, func(*rank.Rank) error { return nil })
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("RunProcess with rank 1's pid %q = %v, want %q...", c.pid, err, c.want)
		}
		if err := <-done; err != nil {
			t.Errorf("rank 1's all-gather: %v", err)
		}
		closePeer()
	}
}
