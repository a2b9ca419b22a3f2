package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	pa "github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/symmem/symmem/actor"
)

const helperEnv = "SYMMEM_STORE_TEST_HELPER"

// TestHelperProcess is one rank of TestRemoteJobThreeProcesses when the test
// binary is re-executed with helperEnv set; otherwise it does nothing.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("only runs as a child of TestRemoteJobThreeProcesses")
	}
	run := helperRank
	switch os.Getenv("STORE_MODE") {
	case "probe":
		run = helperProbe
	case "load":
		run = helperLoad
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "helper %s rank %s: %v\n", os.Getenv("STORE_MODE"), os.Getenv("STORE_RANK"), err)
		os.Exit(1)
	}
	os.Exit(0)
}

// helperProbe attacks the store from another process: a wrong token and
// malformed bytes must both be refused with an answer.
func helperProbe() error {
	addr := os.Getenv("STORE_ADDR")
	if _, _, err := Dial(addr, "wrong-"+os.Getenv("STORE_TOKEN"), 30*time.Second); !errors.Is(err, ErrUnauthorized) {
		return fmt.Errorf("Dial with a wrong token = %v, want ErrUnauthorized", err)
	}
	resp, err := rawRequest(addr, wrapperspb.Bytes([]byte("\x00\xffnot a request")))
	if err != nil {
		return err
	}
	if resp.Code != CodeInvalid || !strings.Contains(resp.Msg, "missing magic") {
		return fmt.Errorf("answer to garbage = %+v, want invalid", resp)
	}
	c, closeFn, err := Dial(addr, os.Getenv("STORE_TOKEN"), 30*time.Second)
	if err != nil {
		return err
	}
	defer closeFn()
	return c.Set("probe", []byte("survived"))
}

// procValue is a rank's contribution: fixed size, unique to the process.
func procValue(rank, pid int) string { return fmt.Sprintf("rank%d-pid%010d", rank, pid) }

func helperRank() error {
	rank, err := strconv.Atoi(os.Getenv("STORE_RANK"))
	if err != nil {
		return err
	}
	c, closeFn, err := Dial(os.Getenv("STORE_ADDR"), os.Getenv("STORE_TOKEN"), 30*time.Second)
	if err != nil {
		return err
	}
	defer closeFn()
	world := Group{Name: "world", Ranks: []int{0, 1, 2}}
	ex, err := NewExchange(c, "job", world, rank)
	if err != nil {
		return err
	}
	got, err := ex.AllGather([]byte(procValue(rank, os.Getpid())))
	if err != nil {
		return err
	}
	var pids []string
	for i, v := range got {
		prefix := fmt.Sprintf("rank%d-pid", world.Ranks[i])
		if !strings.HasPrefix(string(v), prefix) {
			return fmt.Errorf("position %d holds %q, want rank %d's value", i, v, world.Ranks[i])
		}
		pids = append(pids, strings.TrimPrefix(string(v), prefix))
	}
	if got[rank] == nil || string(got[rank]) != procValue(rank, os.Getpid()) {
		return fmt.Errorf("own value came back as %q", got[rank])
	}
	if _, err := c.Add("arrived", 1); err != nil {
		return err
	}
	if err := ex.Barrier(); err != nil {
		return err
	}
	return c.Set(fmt.Sprintf("result/%d", rank), []byte(strings.Join(pids, ",")))
}

// helper is a child process running TestHelperProcess.
type helper struct {
	cmd *exec.Cmd
	out strings.Builder
}

func startHelper(t *testing.T, ctx context.Context, env ...string) *helper {
	t.Helper()
	h := &helper{cmd: exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")}
	h.cmd.Env = append(append(os.Environ(), helperEnv+"=1"), env...)
	h.cmd.Stdout, h.cmd.Stderr = &h.out, &h.out
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *helper) wait(t *testing.T, what string) {
	t.Helper()
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("%s process: %v\n%s", what, err, h.out.String())
	}
}

func TestRemoteJobThreeProcesses(t *testing.T) {
	token, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	srv := serveForTest(t, token)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hs := make([]*helper, 3)
	for r := range hs {
		hs[r] = startHelper(t, ctx, "STORE_ADDR="+srv.Addr(), "STORE_TOKEN="+token, fmt.Sprintf("STORE_RANK=%d", r))
	}
	pids := make([]string, 3)
	for r, h := range hs {
		h.wait(t, fmt.Sprintf("rank %d", r))
		pids[r] = fmt.Sprintf("%010d", h.cmd.Process.Pid)
	}
	c := srv.Connect("parent", 10*time.Second)
	if n, err := c.Add("arrived", 0); err != nil || n != 3 {
		t.Fatalf("arrived = %d, %v; want 3", n, err)
	}
	want := strings.Join(pids, ",")
	for r := range 3 {
		v, err := c.Get(fmt.Sprintf("result/%d", r))
		if err != nil {
			t.Fatal(err)
		}
		if string(v) != want {
			t.Fatalf("rank %d gathered pids %s, want %s", r, v, want)
		}
	}
}

// testSys is the actor system of this test process's remote endpoint:
// every store the tests serve lives on it (one endpoint per process).
var testSys = sync.OnceValue(actor.NewSystem)

func serveForTest(t *testing.T, token string) *Server {
	t.Helper()
	srv, err := Serve(testSys(), "127.0.0.1:0", token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if !strings.HasPrefix(srv.Addr(), "127.0.0.1:") || strings.Contains(srv.Addr(), ":0/") {
		t.Fatalf("Addr = %q, want 127.0.0.1 and the chosen port", srv.Addr())
	}
	return srv
}

func TestRemoteClientOperations(t *testing.T) {
	srv := serveForTest(t, "secret")
	c, closeFn, err := Dial(srv.Addr(), "secret", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if err := c.Set("k", []byte("value")); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get("k"); err != nil || string(v) != "value" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if v, err := c.CompareSet("k", []byte("value"), []byte("new")); err != nil || string(v) != "new" {
		t.Fatalf("CompareSet = %q, %v", v, err)
	}
	if n, err := c.Add("n", 41); err != nil || n != 41 {
		t.Fatalf("Add = %d, %v", n, err)
	}
	if ok, err := c.Check([]string{"k", "n"}); err != nil || !ok {
		t.Fatalf("Check = %v, %v", ok, err)
	}
	if ok, err := c.Delete("n"); err != nil || !ok {
		t.Fatalf("Delete = %v, %v", ok, err)
	}
	if n, err := c.NumKeys(); err != nil || n != 1 {
		t.Fatalf("NumKeys = %d, %v", n, err)
	}
	err = c.Wait([]string{"k", "absent"}, 50*time.Millisecond)
	var mk *MissingKeysError
	if !errors.As(err, &mk) || len(mk.Keys) != 1 || mk.Keys[0] != "absent" {
		t.Fatalf("Wait = %v, want a MissingKeysError naming absent", err)
	}
	if _, err := c.Add("k", 1); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("Add on text = %v, want ErrBadRequest", err)
	}
	// A waiter in another process is woken by a set in this one.
	local := srv.Connect("local", 20*time.Second)
	done := make(chan error, 1)
	go func() {
		v, err := c.Get("later")
		if err == nil && string(v) != "here" {
			err = fmt.Errorf("got %q", v)
		}
		done <- err
	}()
	if err := local.Wait([]string{"k"}, 0); err != nil {
		t.Fatal(err)
	}
	if err := local.Set("later", []byte("here")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("remote Get of a later key: %v", err)
	}
}

func TestRemoteWrongTokenRejected(t *testing.T) {
	srv := serveForTest(t, "right-token")
	_, _, err := Dial(srv.Addr(), "wrong-token", 20*time.Second)
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Dial with a wrong token = %v, want ErrUnauthorized", err)
	}
	if !strings.Contains(err.Error(), srv.Addr()) {
		t.Fatalf("error %q does not name the address", err)
	}
}

// TestRemoteProbeFromAnotherProcess sends a wrong token and garbage across
// a real process boundary.
func TestRemoteProbeFromAnotherProcess(t *testing.T) {
	srv := serveForTest(t, "probe-token")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startHelper(t, ctx, "STORE_MODE=probe", "STORE_ADDR="+srv.Addr(), "STORE_TOKEN=probe-token").wait(t, "probe")
	if v, err := srv.Connect("check", 10*time.Second).Get("probe"); err != nil || string(v) != "survived" {
		t.Fatalf("probe key = %q, %v", v, err)
	}
}

// rawRequest sends msg to the store at addr and decodes the answer.
func rawRequest(addr string, msg proto.Message) (Response, error) {
	sys, err := clientSystem()
	if err != nil {
		return Response{}, err
	}
	hostPort, name, _ := strings.Cut(addr, "/")
	res, err := sys.Root.RequestFuture(pa.NewPID(hostPort, name), msg, 20*time.Second).Result()
	if err != nil {
		return Response{}, err
	}
	bv, ok := res.(*wrapperspb.BytesValue)
	if !ok {
		return Response{}, fmt.Errorf("answer is a %T", res)
	}
	return decodeResponse(bv.GetValue())
}

func TestRemoteMalformedRejected(t *testing.T) {
	srv := serveForTest(t, "tok")
	huge := encodeRequest("tok", &Request{ID: 77, Op: OpSet, Keys: []string{"k"}})
	huge = binary.AppendUvarint(huge[:len(huge)-2], MaxValueSize+1) // value length over the limit
	cases := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"garbage", wrapperspb.Bytes([]byte("\x00\xffnot a request")), "missing magic"},
		{"oversized value", wrapperspb.Bytes(huge), "exceeds the 67108864-byte limit"},
		{"wrong type", wrapperspb.String("hello"), "unexpected message type"},
		{"invalid request", wrapperspb.Bytes(encodeRequest("tok", &Request{ID: 5, Op: OpWait, Keys: []string{"k"}})), "positive timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := rawRequest(srv.Addr(), tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Code != CodeInvalid || !strings.Contains(resp.Msg, tc.want) {
				t.Fatalf("answer = %+v, want invalid mentioning %q", resp, tc.want)
			}
		})
	}
	// The store still serves.
	c, closeFn, err := Dial(srv.Addr(), "tok", 20*time.Second)
	if err != nil {
		t.Fatalf("Dial after malformed messages: %v", err)
	}
	defer closeFn()
	if err := c.Set("still", []byte("alive")); err != nil {
		t.Fatal(err)
	}
}

func TestServedStoresAreSeparate(t *testing.T) {
	a, b := serveForTest(t, "a"), serveForTest(t, "b")
	if a.Addr() == b.Addr() {
		t.Fatalf("two stores share the address %s", a.Addr())
	}
	ca, closeA, err := Dial(a.Addr(), "a", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cb, closeB, err := Dial(b.Addr(), "b", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer closeB()
	if err := ca.Set("only-in-a", nil); err != nil {
		t.Fatal(err)
	}
	if ok, err := cb.Check([]string{"only-in-a"}); err != nil || ok {
		t.Fatalf("store b sees store a's key: %v, %v", ok, err)
	}
	if _, err := Serve(actor.NewSystem(), "", "c"); err == nil || !strings.Contains(err.Error(), "one endpoint per process") {
		t.Fatalf("Serve on a second actor system = %v, want an error", err)
	}
	closeA()
	if err := ca.Set("x", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Set after close = %v, want ErrClosed", err)
	}
}

func TestServeAndDialValidateArguments(t *testing.T) {
	sys := actor.NewSystem()
	if _, err := Serve(sys, "", ""); err == nil || !strings.Contains(err.Error(), "empty job token") {
		t.Errorf("Serve without token = %v", err)
	}
	if _, err := Serve(sys, "0.0.0.0:0", "t"); err == nil || !strings.Contains(err.Error(), "not a loopback") {
		t.Errorf("Serve on all interfaces = %v", err)
	}
	if _, _, err := Dial("127.0.0.1:0", "t", time.Second); err == nil || !strings.Contains(err.Error(), "no port") {
		t.Errorf("Dial to port 0 = %v", err)
	}
	if _, _, err := Dial("example.com:80", "t", time.Second); err == nil || !strings.Contains(err.Error(), "not a loopback") {
		t.Errorf("Dial to a remote host = %v", err)
	}
}

// TestLiveClientsConcurrent runs in-process clients on goroutines against
// the wall-clock runtime (run with -race).
func TestLiveClientsConcurrent(t *testing.T) {
	srv, err := NewServer(actor.NewLive(), actor.NewSystem())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const ranks, adds = 4, 25
	g := Group{Name: "world", Ranks: []int{0, 1, 2, 3}}
	shared := srv.Connect("shared", 20*time.Second)
	var wg sync.WaitGroup
	errs := make([]error, ranks)
	for r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				for range adds {
					if _, err := shared.Add("count", 1); err != nil {
						return err
					}
				}
				ex, err := NewExchange(srv.Connect(fmt.Sprintf("rank%d", r), 20*time.Second), "live", g, r)
				if err != nil {
					return err
				}
				got, err := ex.AllGather(gatherValue("live", r))
				if err != nil {
					return err
				}
				return checkGather("live", got, g.Ranks)
			}()
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if n, err := shared.Add("count", 0); err != nil || n != ranks*adds {
		t.Fatalf("count = %d, %v; want %d", n, err, ranks*adds)
	}
}
