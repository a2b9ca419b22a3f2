package store

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// apply runs a request that must complete at once.
func apply(t *testing.T, m *Machine, ticket uint64, req Request) Response {
	t.Helper()
	resp, parked, woken := m.Apply(ticket, req)
	if parked {
		t.Fatalf("%s %v parked", req.Op, req.Keys)
	}
	if len(woken) != 0 {
		t.Fatalf("%s %v woke %v unexpectedly", req.Op, req.Keys, woken)
	}
	return resp
}

func TestMachineSetGetDeleteCount(t *testing.T) {
	m := NewMachine()
	val := []byte("v1")
	if r := apply(t, m, 1, Request{ID: 1, Op: OpSet, Keys: []string{"a"}, Value: val}); r.Code != CodeOK || r.ID != 1 {
		t.Fatalf("set = %+v", r)
	}
	val[0] = 'X' // the store must have copied the value
	r := apply(t, m, 2, Request{ID: 2, Op: OpGet, Keys: []string{"a"}, Timeout: time.Second})
	if string(r.Value) != "v1" {
		t.Fatalf("get = %q, want v1", r.Value)
	}
	r.Value[0] = 'Y' // nor may a reader change it
	if r := apply(t, m, 3, Request{ID: 3, Op: OpGet, Keys: []string{"a"}, Timeout: time.Second}); string(r.Value) != "v1" {
		t.Fatalf("get after caller mutation = %q", r.Value)
	}
	apply(t, m, 4, Request{ID: 4, Op: OpSet, Keys: []string{"b"}})
	if r := apply(t, m, 5, Request{ID: 5, Op: OpNumKeys}); r.Num != 2 {
		t.Fatalf("num_keys = %d, want 2", r.Num)
	}
	if r := apply(t, m, 6, Request{ID: 6, Op: OpCheck, Keys: []string{"a", "b"}}); r.Num != 1 {
		t.Fatal("check a,b = false")
	}
	if r := apply(t, m, 7, Request{ID: 7, Op: OpCheck, Keys: []string{"a", "c"}}); r.Num != 0 {
		t.Fatal("check a,c = true")
	}
	if r := apply(t, m, 8, Request{ID: 8, Op: OpDelete, Keys: []string{"a"}}); r.Num != 1 {
		t.Fatal("delete of an existing key reported false")
	}
	if r := apply(t, m, 9, Request{ID: 9, Op: OpDelete, Keys: []string{"a"}}); r.Num != 0 {
		t.Fatal("delete of a missing key reported true")
	}
	if m.Len() != 1 {
		t.Fatalf("Len = %d, want 1", m.Len())
	}
}

func TestMachineAdd(t *testing.T) {
	m := NewMachine()
	for i, tc := range []struct {
		delta, want int64
	}{{5, 5}, {-7, -2}, {0, -2}, {100, 98}} {
		r := apply(t, m, uint64(i), Request{Op: OpAdd, Keys: []string{"n"}, Delta: tc.delta})
		if r.Code != CodeOK || r.Num != tc.want {
			t.Fatalf("add %d = %+v, want %d", tc.delta, r, tc.want)
		}
	}
	if r := apply(t, m, 10, Request{Op: OpGet, Keys: []string{"n"}, Timeout: 1}); string(r.Value) != "98" {
		t.Fatalf("counter stored as %q, want decimal text 98", r.Value)
	}
	apply(t, m, 11, Request{Op: OpSet, Keys: []string{"s"}, Value: []byte("not a number")})
	if r := apply(t, m, 12, Request{Op: OpAdd, Keys: []string{"s"}, Delta: 1}); r.Code != CodeInvalid || !strings.Contains(r.Msg, "not a decimal") {
		t.Fatalf("add to text = %+v, want invalid", r)
	}
	apply(t, m, 13, Request{Op: OpSet, Keys: []string{"big"}, Value: []byte(fmt.Sprint(int64(math.MaxInt64 - 1)))})
	if r := apply(t, m, 14, Request{Op: OpAdd, Keys: []string{"big"}, Delta: 2}); r.Code != CodeInvalid || !strings.Contains(r.Msg, "overflow") {
		t.Fatalf("overflowing add = %+v, want invalid", r)
	}
	if r := apply(t, m, 15, Request{Op: OpAdd, Keys: []string{"big"}, Delta: 1}); r.Num != math.MaxInt64 {
		t.Fatalf("add to max = %+v", r)
	}
}

func TestMachineCompareSet(t *testing.T) {
	m := NewMachine()
	cs := func(id uint64, expected, desired string) Response {
		return apply(t, m, id, Request{ID: id, Op: OpCompareSet, Keys: []string{"k"}, Expected: []byte(expected), Value: []byte(desired)})
	}
	// Missing key, non-empty expected: nothing stored, nothing claimed.
	if r := cs(1, "x", "y"); r.Code != CodeOK || r.Value != nil || m.Len() != 0 {
		t.Fatalf("compare_set on a missing key with expected x = %+v, len %d", r, m.Len())
	}
	// Missing key, empty expected: stored.
	if r := cs(2, "", "first"); string(r.Value) != "first" {
		t.Fatalf("compare_set on a missing key with empty expected = %q", r.Value)
	}
	// Mismatch: unchanged, current value answered.
	if r := cs(3, "wrong", "second"); string(r.Value) != "first" {
		t.Fatalf("mismatching compare_set = %q, want first", r.Value)
	}
	// Match: swapped.
	if r := cs(4, "first", "second"); string(r.Value) != "second" {
		t.Fatalf("matching compare_set = %q, want second", r.Value)
	}
	if r := apply(t, m, 5, Request{Op: OpGet, Keys: []string{"k"}, Timeout: 1}); string(r.Value) != "second" {
		t.Fatalf("value after swap = %q", r.Value)
	}
}

func TestMachineWaitersWakeInTicketOrder(t *testing.T) {
	m := NewMachine()
	park := func(ticket uint64, req Request) {
		t.Helper()
		if _, parked, _ := m.Apply(ticket, req); !parked {
			t.Fatalf("ticket %d did not park", ticket)
		}
	}
	park(10, Request{ID: 100, Op: OpWait, Keys: []string{"a", "b", "a"}, Timeout: time.Second})
	park(11, Request{ID: 101, Op: OpGet, Keys: []string{"b"}, Timeout: time.Second})
	park(12, Request{ID: 102, Op: OpWait, Keys: []string{"c"}, Timeout: time.Second})
	if got := m.Pending(); !slices.Equal(got, []uint64{10, 11, 12}) {
		t.Fatalf("pending = %v", got)
	}
	// a alone wakes nobody.
	if _, _, woken := m.Apply(1, Request{Op: OpSet, Keys: []string{"a"}, Value: []byte("A")}); len(woken) != 0 {
		t.Fatalf("set a woke %+v", woken)
	}
	// b completes both the wait for a,b and the get of b.
	_, _, woken := m.Apply(2, Request{Op: OpAdd, Keys: []string{"b"}, Delta: 3})
	if len(woken) != 2 || woken[0].Ticket != 10 || woken[1].Ticket != 11 {
		t.Fatalf("woken = %+v, want tickets 10 and 11", woken)
	}
	if woken[0].Resp.ID != 100 || woken[0].Resp.Code != CodeOK {
		t.Fatalf("wait response = %+v", woken[0].Resp)
	}
	if woken[1].Resp.ID != 101 || string(woken[1].Resp.Value) != "3" {
		t.Fatalf("get response = %+v, want value 3", woken[1].Resp)
	}
	// Overwriting an existing key wakes nobody; compare_set creating c does.
	if _, _, w := m.Apply(3, Request{Op: OpSet, Keys: []string{"b"}}); len(w) != 0 {
		t.Fatalf("overwrite woke %+v", w)
	}
	_, _, woken = m.Apply(4, Request{Op: OpCompareSet, Keys: []string{"c"}, Value: []byte("C")})
	if len(woken) != 1 || woken[0].Ticket != 12 {
		t.Fatalf("compare_set woke %+v, want ticket 12", woken)
	}
	if len(m.Pending()) != 0 {
		t.Fatalf("pending after all woke = %v", m.Pending())
	}
}

func TestMachineWaitNeedsAllKeysAtOnce(t *testing.T) {
	m := NewMachine()
	if _, parked, _ := m.Apply(1, Request{Op: OpWait, Keys: []string{"x", "y"}, Timeout: time.Second}); !parked {
		t.Fatal("wait did not park")
	}
	m.Apply(2, Request{Op: OpSet, Keys: []string{"x"}})
	m.Apply(3, Request{Op: OpDelete, Keys: []string{"x"}})
	if _, _, w := m.Apply(4, Request{Op: OpSet, Keys: []string{"y"}}); len(w) != 0 {
		t.Fatalf("wait completed with x deleted: %+v", w)
	}
	if _, _, w := m.Apply(5, Request{Op: OpSet, Keys: []string{"x"}}); len(w) != 1 {
		t.Fatalf("wait did not complete once x and y exist: %+v", w)
	}
}

func TestMachineExpireNamesMissingKeys(t *testing.T) {
	m := NewMachine()
	m.Apply(1, Request{Op: OpSet, Keys: []string{"a/0/0"}})
	m.Apply(2, Request{Op: OpSet, Keys: []string{"a/0/2"}})
	keys := []string{"a/0/0", "a/0/1", "a/0/2", "a/0/3"}
	if _, parked, _ := m.Apply(3, Request{ID: 7, Op: OpWait, Keys: keys, Timeout: time.Second}); !parked {
		t.Fatal("wait did not park")
	}
	resp, ok := m.Expire(3)
	if !ok || resp.Code != CodeTimeout || resp.ID != 7 || resp.After != time.Second {
		t.Fatalf("Expire = %+v, %v", resp, ok)
	}
	if !slices.Equal(resp.Keys, []string{"a/0/1", "a/0/3"}) {
		t.Fatalf("missing = %q", resp.Keys)
	}
	if _, ok := m.Expire(3); ok {
		t.Fatal("expired twice")
	}
	// The expired waiter no longer wakes.
	if _, _, w := m.Apply(4, Request{Op: OpSet, Keys: []string{"a/0/1"}}); len(w) != 0 {
		t.Fatalf("expired waiter woke: %+v", w)
	}
	err := &MissingKeysError{Op: "wait", Keys: resp.Keys, After: resp.After}
	if want := `store wait: timed out after 1s; missing keys ["a/0/1" "a/0/3"]`; err.Error() != want {
		t.Fatalf("error = %q, want %q", err, want)
	}
}

func TestMachineAbort(t *testing.T) {
	m := NewMachine()
	m.Apply(5, Request{ID: 1, Op: OpGet, Keys: []string{"k"}, Timeout: time.Second})
	m.Apply(2, Request{ID: 2, Op: OpWait, Keys: []string{"k"}, Timeout: time.Second})
	w := m.Abort("bye")
	if len(w) != 2 || w[0].Ticket != 2 || w[1].Ticket != 5 || w[0].Resp.Code != CodeClosed || w[1].Resp.Msg != "bye" {
		t.Fatalf("Abort = %+v", w)
	}
	if len(m.Pending()) != 0 {
		t.Fatal("requests still parked after Abort")
	}
	if _, _, woken := m.Apply(6, Request{Op: OpSet, Keys: []string{"k"}}); len(woken) != 0 {
		t.Fatalf("aborted request woke: %+v", woken)
	}
}

func TestMachineRejectsBadRequests(t *testing.T) {
	cases := []struct {
		name string
		req  Request
		want string
	}{
		{"unknown op", Request{Op: 99}, "unknown operation"},
		{"set without key", Request{Op: OpSet}, "takes one key"},
		{"get two keys", Request{Op: OpGet, Keys: []string{"a", "b"}, Timeout: 1}, "takes one key"},
		{"num_keys with key", Request{Op: OpNumKeys, Keys: []string{"a"}}, "takes no keys"},
		{"empty key", Request{Op: OpCheck, Keys: []string{"a", ""}}, "key 1 is empty"},
		{"long key", Request{Op: OpDelete, Keys: []string{strings.Repeat("k", MaxKeySize+1)}}, "over the"},
		{"huge value", Request{Op: OpSet, Keys: []string{"a"}, Value: make([]byte, MaxValueSize+1)}, "exceeds"},
		{"wait without timeout", Request{Op: OpWait, Keys: []string{"a"}}, "positive timeout"},
		{"get negative timeout", Request{Op: OpGet, Keys: []string{"a"}, Timeout: -1}, "positive timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine()
			resp, parked, _ := m.Apply(1, tc.req)
			if parked || resp.Code != CodeInvalid || !strings.Contains(resp.Msg, tc.want) {
				t.Fatalf("Apply = %+v parked=%v, want invalid mentioning %q", resp, parked, tc.want)
			}
			if m.Len() != 0 {
				t.Fatal("a rejected request changed the store")
			}
		})
	}
}
