package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/actor"
)

// simJob runs body as one scheduler task per rank, each with its own
// in-process client of one simulated store, and returns the scheduler after
// Run.
func simJob(t *testing.T, seed uint64, ranks int, timeout time.Duration, body func(rank int, c Client) error) *actor.Scheduler {
	t.Helper()
	s := actor.NewScheduler(actor.Config{Seed: seed, MaxSteps: 1_000_000})
	srv, err := NewServer(s, actor.NewSystem(), WithDispatcher(s.Dispatcher()))
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, ranks)
	for r := range ranks {
		c := srv.Connect(fmt.Sprintf("rank%d", r), timeout)
		s.Go(fmt.Sprintf("rank%d", r), func() { errs[r] = body(r, c) })
	}
	if err := s.Run(); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	for r, err := range errs {
		if err != nil {
			t.Fatalf("seed %d rank %d: %v", seed, r, err)
		}
	}
	return s
}

// workload has every rank count itself in, publish a value, read its
// neighbour's (waiting for it), elect a leader with compare_set, and wait
// for all ranks.
func workload(ranks int, seen [][]string) func(rank int, c Client) error {
	return func(rank int, c Client) error {
		if _, err := c.Add("arrived", 1); err != nil {
			return err
		}
		if err := c.Set(fmt.Sprintf("val/%d", rank), []byte(fmt.Sprintf("from %d", rank))); err != nil {
			return err
		}
		next := (rank + 1) % ranks
		v, err := c.Get(fmt.Sprintf("val/%d", next))
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("from %d", next); string(v) != want {
			return fmt.Errorf("get val/%d = %q, want %q", next, v, want)
		}
		leader, err := c.CompareSet("leader", nil, []byte(fmt.Sprint(rank)))
		if err != nil {
			return err
		}
		var all []string
		for r := range ranks {
			all = append(all, fmt.Sprintf("val/%d", r))
		}
		if err := c.Wait(all, 0); err != nil {
			return err
		}
		ok, err := c.Check(all)
		if err != nil || !ok {
			return fmt.Errorf("check after wait = %v, %v", ok, err)
		}
		n, err := c.Add("arrived", 0)
		if err != nil {
			return err
		}
		if n != int64(ranks) {
			return fmt.Errorf("arrived = %d after every rank set its value, want %d", n, ranks)
		}
		seen[rank] = []string{string(leader)}
		return nil
	}
}

func TestSimulatedJob(t *testing.T) {
	const ranks = 4
	leaders := map[string]bool{}
	for seed := uint64(0); seed < 10; seed++ {
		seen := make([][]string, ranks)
		simJob(t, seed, ranks, time.Minute, workload(ranks, seen))
		for r := 1; r < ranks; r++ {
			if seen[r][0] != seen[0][0] {
				t.Fatalf("seed %d: rank %d saw leader %q, rank 0 saw %q", seed, r, seen[r][0], seen[0][0])
			}
		}
		leaders[seen[0][0]] = true
	}
	if len(leaders) < 2 {
		t.Errorf("10 seeds always elected %v: the schedule does not vary", leaders)
	}
}

func TestSimulatedTraceIsDeterministic(t *testing.T) {
	const ranks = 4
	hash := func(seed uint64) string {
		s := simJob(t, seed, ranks, time.Minute, workload(ranks, make([][]string, ranks)))
		return s.Trace().Hash()
	}
	distinct := map[string]bool{}
	for seed := uint64(0); seed < 6; seed++ {
		h1, h2 := hash(seed), hash(seed)
		if h1 != h2 {
			t.Fatalf("seed %d: trace %s then %s", seed, h1, h2)
		}
		distinct[h1] = true
	}
	if len(distinct) < 2 {
		t.Fatal("6 seeds gave one trace")
	}
}

func TestSimulatedTraceRecordsRequests(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 1, KeepEvents: true})
	srv, _ := NewServer(s, actor.NewSystem(), WithDispatcher(s.Dispatcher()))
	c := srv.Connect("solo", time.Second)
	s.Go("solo", func() {
		_ = c.Set("k", []byte("abc"))
		_, _ = c.Add("n", 2)
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range s.Trace().Events() {
		if e.Kind == "store" {
			got = append(got, e.Detail)
		}
	}
	want := []string{`solo#1 set "k" 3B`, `solo#2 add "n" +2`}
	if !slices.Equal(got, want) {
		t.Fatalf("store trace = %q, want %q", got, want)
	}
}

func TestSimulatedWaitTimesOutInVirtualTime(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 7})
	srv, _ := NewServer(s, actor.NewSystem(), WithDispatcher(s.Dispatcher()))
	waiter, setter := srv.Connect("waiter", time.Hour), srv.Connect("setter", time.Hour)
	var waitErr, getErr error
	var at time.Duration
	s.Go("setter", func() {
		_ = setter.Set("a/0/0", nil)
		_ = setter.Set("a/0/2", nil)
	})
	s.Go("waiter", func() {
		waitErr = waiter.Wait([]string{"a/0/0", "a/0/1", "a/0/2", "a/0/3"}, time.Second)
		at = s.Now()
		_, getErr = WithPrefix(waiter, "a").Get("never")
	})
	start := time.Now()
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	var mk *MissingKeysError
	if !errors.As(waitErr, &mk) {
		t.Fatalf("Wait = %v, want a MissingKeysError", waitErr)
	}
	if want := `store wait: timed out after 1s; missing keys ["a/0/1" "a/0/3"]`; waitErr.Error() != want {
		t.Fatalf("Wait = %q, want %q", waitErr, want)
	}
	if at != time.Second {
		t.Fatalf("wait returned at virtual %v, want 1s", at)
	}
	// Get waits the client's default timeout, and a prefix view names the
	// key as its caller wrote it.
	if !errors.As(getErr, &mk) || mk.Op != "get" || !slices.Equal(mk.Keys, []string{"never"}) || mk.After != time.Hour {
		t.Fatalf("Get = %v, want a get timeout after 1h naming \"never\"", getErr)
	}
	if s.Now() != time.Second+time.Hour {
		t.Fatalf("virtual time at the end = %v, want 1h0m1s", s.Now())
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("virtual timeouts took real time")
	}
}

func TestPrefixViews(t *testing.T) {
	simJob(t, 3, 1, time.Minute, func(_ int, c Client) error {
		outer := WithPrefix(WithPrefix(c, "job"), "sub")
		if err := outer.Set("k", []byte("v")); err != nil {
			return err
		}
		if v, err := c.Get("job/sub/k"); err != nil || string(v) != "v" {
			return fmt.Errorf("underlying get = %q, %v", v, err)
		}
		if ok, err := WithPrefix(c, "job").Check([]string{"sub/k"}); err != nil || !ok {
			return fmt.Errorf("check through one view = %v, %v", ok, err)
		}
		if n, err := outer.Add("n", 4); err != nil || n != 4 {
			return fmt.Errorf("add = %d, %v", n, err)
		}
		if v, err := outer.CompareSet("k", []byte("v"), []byte("w")); err != nil || string(v) != "w" {
			return fmt.Errorf("compare_set = %q, %v", v, err)
		}
		if n, err := outer.NumKeys(); err != nil || n != 2 {
			return fmt.Errorf("num_keys = %d, %v", n, err)
		}
		if ok, err := outer.Delete("k"); err != nil || !ok {
			return fmt.Errorf("delete = %v, %v", ok, err)
		}
		if ok, _ := c.Check([]string{"job/sub/k"}); ok {
			return errors.New("key still there after delete through the view")
		}
		return nil
	})
}

func TestClientRejectsBadRequestsLocally(t *testing.T) {
	simJob(t, 4, 1, time.Minute, func(_ int, c Client) error {
		if err := c.Set("", []byte("x")); !errors.Is(err, ErrBadRequest) {
			return fmt.Errorf("set of an empty key = %v, want ErrBadRequest", err)
		}
		if err := c.Set("big", make([]byte, MaxValueSize+1)); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "exceeds") {
			return fmt.Errorf("oversized set = %v, want ErrBadRequest", err)
		}
		if err := c.Set("text", []byte("abc")); err != nil {
			return err
		}
		// The store itself refuses add on a non-integer.
		if _, err := c.Add("text", 1); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), `"text"`) {
			return fmt.Errorf("add on text = %v, want ErrBadRequest naming the key", err)
		}
		return nil
	})
}

func TestServerCloseFailsWaiters(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 2})
	srv, _ := NewServer(s, actor.NewSystem(), WithDispatcher(s.Dispatcher()))
	c := srv.Connect("c", time.Minute)
	var getErr, afterErr error
	s.Go("reader", func() { _, getErr = c.Get("never") })
	s.Go("closer", func() {
		s.Sleep(time.Second)
		_ = srv.Close()
		_, afterErr = c.NumKeys()
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(getErr, ErrClosed) {
		t.Fatalf("parked get after close = %v, want ErrClosed", getErr)
	}
	if !errors.Is(afterErr, ErrClosed) {
		t.Fatalf("request after close = %v, want ErrClosed", afterErr)
	}
}

// gatherValue is rank r's contribution to round round: 8 bytes.
func gatherValue(round string, r int) []byte { return []byte(fmt.Sprintf("%s-r%03d", round[:4], r)) }

func checkGather(name string, got [][]byte, ranks []int) error {
	if len(got) != len(ranks) {
		return fmt.Errorf("%s: %d values, want %d", name, len(got), len(ranks))
	}
	for i, r := range ranks {
		if want := gatherValue(name, r); !bytes.Equal(got[i], want) {
			return fmt.Errorf("%s: position %d = %q, want %q", name, i, got[i], want)
		}
	}
	return nil
}

func TestExchangeSubgroupThenWorld(t *testing.T) {
	world := Group{Name: "world", Ranks: []int{0, 1, 2, 3}}
	pair := Group{Name: "pair01", Ranks: []int{0, 1}}
	for seed := uint64(0); seed < 8; seed++ {
		simJob(t, seed, 4, 10*time.Second, func(rank int, c Client) error {
			if rank <= 1 {
				ex, err := NewExchange(c, "job", pair, rank)
				if err != nil {
					return err
				}
				got, err := ex.AllGather(gatherValue("pair", rank))
				if err != nil {
					return err
				}
				if err := checkGather("pair", got, pair.Ranks); err != nil {
					return err
				}
			}
			ex, err := NewExchange(c, "job", world, rank)
			if err != nil {
				return err
			}
			for _, round := range []string{"wld1", "wld2", "wld3"} {
				got, err := ex.AllGather(gatherValue(round, rank))
				if err != nil {
					return err
				}
				if err := checkGather(round, got, world.Ranks); err != nil {
					return err
				}
			}
			if err := ex.Barrier(); err != nil {
				return err
			}
			// A fresh Exchange on the same connection continues the count.
			again, _ := NewExchange(c, "job", world, rank)
			got, err := again.AllGather(gatherValue("last", rank))
			if err != nil {
				return err
			}
			return checkGather("last", got, world.Ranks)
		})
	}
}

func TestExchangeDeletesOldRounds(t *testing.T) {
	g := Group{Name: "g", Ranks: []int{0, 1, 2}}
	var keys []int
	simJob(t, 5, 3, 10*time.Second, func(rank int, c Client) error {
		ex, err := NewExchange(c, "p", g, rank)
		if err != nil {
			return err
		}
		for range 6 {
			if err := ex.Barrier(); err != nil {
				return err
			}
		}
		// Each round deletes its member's key of the round before, so only
		// rounds 4 and 5 can remain.
		n, err := c.NumKeys()
		keys = append(keys, n)
		return err
	})
	for _, n := range keys {
		if n > 2*len(g.Ranks) {
			t.Fatalf("store holds %d keys after 6 barriers of 3 ranks: old rounds were not deleted", n)
		}
	}
}

func TestExchangeSizeMismatch(t *testing.T) {
	g := Group{Name: "world", Ranks: []int{0, 1, 2, 3}}
	simJob(t, 9, 4, 10*time.Second, func(rank int, c Client) error {
		ex, err := NewExchange(c, "job", g, rank)
		if err != nil {
			return err
		}
		v := make([]byte, 8)
		if rank == 2 {
			v = v[:4]
		}
		_, err = ex.AllGather(v)
		if !errors.Is(err, ErrSizeMismatch) {
			return fmt.Errorf("AllGather = %v, want ErrSizeMismatch", err)
		}
		// Sizes are listed in order of first appearance, the same on every rank.
		if want := "8 bytes from ranks [0 1 3], 4 bytes from ranks [2]"; !strings.Contains(err.Error(), want) {
			return fmt.Errorf("error %q lacks %q", err, want)
		}
		return nil
	})
}

func TestExchangeTimeoutNamesMissingRanks(t *testing.T) {
	g := Group{Name: "world", Ranks: []int{0, 1, 2}}
	errs := make([]error, 3)
	simJob(t, 11, 3, 2*time.Second, func(rank int, c Client) error {
		if rank == 2 {
			return nil // never shows up
		}
		ex, err := NewExchange(c, "job", g, rank)
		if err != nil {
			return err
		}
		_, errs[rank] = ex.AllGather([]byte{byte(rank)})
		return nil
	})
	for r := range 2 {
		var mk *MissingKeysError
		if !errors.As(errs[r], &mk) || !slices.Equal(mk.Keys, []string{"job/world/0/2"}) {
			t.Fatalf("rank %d: AllGather = %v, want missing job/world/0/2", r, errs[r])
		}
		if !strings.Contains(errs[r].Error(), "ranks [2] did not arrive") {
			t.Fatalf("rank %d: %q does not name rank 2", r, errs[r])
		}
	}
}

func TestNewExchangeValidates(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 1})
	srv, _ := NewServer(s, actor.NewSystem(), WithDispatcher(s.Dispatcher()))
	c := srv.Connect("c", time.Second)
	cases := []struct {
		g    Group
		rank int
		want string
	}{
		{Group{Ranks: []int{0}}, 0, "no name"},
		{Group{Name: "a/b", Ranks: []int{0}}, 0, "contains '/'"},
		{Group{Name: "g"}, 0, "no members"},
		{Group{Name: "g", Ranks: []int{1, 0}}, 0, "strictly increasing"},
		{Group{Name: "g", Ranks: []int{0, 0}}, 0, "strictly increasing"},
		{Group{Name: "g", Ranks: []int{-1, 0}}, 0, "negative"},
		{Group{Name: "g", Ranks: []int{0, 2}}, 1, "not a member"},
	}
	for _, tc := range cases {
		if _, err := NewExchange(c, "p", tc.g, tc.rank); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewExchange(%+v, %d) = %v, want an error mentioning %q", tc.g, tc.rank, err, tc.want)
		}
	}
}

func TestSequencesArePerConnectionAndScope(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 1})
	srv, _ := NewServer(s, actor.NewSystem(), WithDispatcher(s.Dispatcher()))
	a, b := srv.Connect("a", time.Second), srv.Connect("b", time.Second)
	sa, sb := a, b
	sa.NextSequence("x")
	sa.NextSequence("x")
	if n := sa.NextSequence("x"); n != 2 {
		t.Fatalf("third sequence of x = %d, want 2", n)
	}
	if n := sa.NextSequence("y"); n != 0 {
		t.Fatalf("first sequence of y = %d, want 0", n)
	}
	if n := sb.NextSequence("x"); n != 0 {
		t.Fatalf("another connection's first sequence of x = %d, want 0", n)
	}
	// A view counts in its client under its prefix: views nest outside in.
	sa.NextSequence("outer/inner/z")
	if n := WithPrefix(WithPrefix(a, "outer"), "inner").NextSequence("z"); n != 1 {
		t.Fatalf("sequence of z through two views = %d, want 1 (counted in the client as outer/inner/z)", n)
	}
}
