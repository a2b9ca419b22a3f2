package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Limits on what one request may carry. The wire decoder and
// [Request.Validate] enforce them, so an oversized request is answered with
// an error instead of being stored.
const (
	MaxValueSize = 64 << 20 // bytes in one value (and in a compare_set's expected value)
	MaxKeySize   = 64 << 10 // bytes in one key
	MaxKeys      = 1 << 16  // keys in one wait or check
	MaxKeyBytes  = 16 << 20 // bytes in all the keys of one request
	MaxNameSize  = 4 << 10  // bytes in a client name or a token
)

// Op is a store operation.
type Op uint8

// The store operations.
const (
	OpSet        Op = iota + 1 // store Value under the key
	OpGet                      // read the key, waiting up to Timeout for it to appear
	OpWait                     // wait up to Timeout until every key exists
	OpAdd                      // add Delta to the decimal integer under the key (missing = 0)
	OpCompareSet               // replace Expected by Value under the key; answer the current value
	OpCheck                    // report whether every key exists
	OpDelete                   // remove the key; report whether it existed
	OpNumKeys                  // count the keys
)

var opNames = [...]string{
	OpSet:        "set",
	OpGet:        "get",
	OpWait:       "wait",
	OpAdd:        "add",
	OpCompareSet: "compare_set",
	OpCheck:      "check",
	OpDelete:     "delete",
	OpNumKeys:    "num_keys",
}

func (o Op) valid() bool { return o >= OpSet && o <= OpNumKeys }

// String is the operation's name as the reference spells it ("compare_set").
func (o Op) String() string {
	if o.valid() {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Request is one store operation as the [Machine] sees it.
type Request struct {
	ID       uint64        // chosen by the client, echoed in the response
	Client   string        // the client's name, for traces and errors
	Op       Op            // what to do
	Keys     []string      // one key, except for wait and check (any number) and num_keys (none)
	Value    []byte        // set: the value; compare_set: the desired value
	Expected []byte        // compare_set: the value expected under the key
	Delta    int64         // add: the increment
	Timeout  time.Duration // get and wait: how long to wait for missing keys; must be > 0
}

// Validate reports what is wrong with r, or nil.
func (r *Request) Validate() error {
	if !r.Op.valid() {
		return fmt.Errorf("unknown operation %d", uint8(r.Op))
	}
	if len(r.Client) > MaxNameSize {
		return fmt.Errorf("client name of %d bytes exceeds the %d-byte limit", len(r.Client), MaxNameSize)
	}
	switch r.Op {
	case OpSet, OpGet, OpAdd, OpCompareSet, OpDelete:
		if len(r.Keys) != 1 {
			return fmt.Errorf("%s takes one key, got %d", r.Op, len(r.Keys))
		}
	case OpNumKeys:
		if len(r.Keys) != 0 {
			return fmt.Errorf("%s takes no keys, got %d", r.Op, len(r.Keys))
		}
	}
	if len(r.Keys) > MaxKeys {
		return fmt.Errorf("%d keys exceed the limit of %d per request", len(r.Keys), MaxKeys)
	}
	total := 0
	for i, k := range r.Keys {
		if k == "" {
			return fmt.Errorf("key %d is empty", i)
		}
		if len(k) > MaxKeySize {
			return fmt.Errorf("key %d is %d bytes, over the %d-byte limit", i, len(k), MaxKeySize)
		}
		total += len(k)
	}
	if total > MaxKeyBytes {
		return fmt.Errorf("keys total %d bytes, over the %d-byte limit", total, MaxKeyBytes)
	}
	if len(r.Value) > MaxValueSize {
		return fmt.Errorf("value of %d bytes exceeds the %d-byte limit", len(r.Value), MaxValueSize)
	}
	if len(r.Expected) > MaxValueSize {
		return fmt.Errorf("expected value of %d bytes exceeds the %d-byte limit", len(r.Expected), MaxValueSize)
	}
	if (r.Op == OpGet || r.Op == OpWait) && r.Timeout <= 0 {
		return fmt.Errorf("%s needs a positive timeout, got %v", r.Op, r.Timeout)
	}
	return nil
}

// Code classifies a [Response].
type Code uint8

// Response codes.
const (
	CodeOK      Code = iota // done
	CodeTimeout             // a get or wait timed out; Keys names the keys still missing
	CodeInvalid             // the request was malformed or not applicable; Msg says why
	CodeDenied              // the request carried the wrong token
	CodeClosed              // the store shut down before answering
	numCodes
)

var codeNames = [...]string{
	CodeOK:      "ok",
	CodeTimeout: "timeout",
	CodeInvalid: "invalid",
	CodeDenied:  "denied",
	CodeClosed:  "closed",
}

// String names the code.
func (c Code) String() string {
	if c < numCodes {
		return codeNames[c]
	}
	return fmt.Sprintf("code(%d)", uint8(c))
}

// Response answers one [Request].
type Response struct {
	ID    uint64        // the request's ID
	Code  Code          // the outcome
	Msg   string        // what went wrong, for CodeInvalid, CodeDenied and CodeClosed
	Value []byte        // get: the value; compare_set: the value now under the key
	Num   int64         // add: the new value; num_keys: the count; check, delete: 1 for true, 0 for false
	Keys  []string      // CodeTimeout: the keys still missing, in request order
	After time.Duration // CodeTimeout: the timeout that passed
}

// Woken is the response to a parked request that has now completed.
type Woken struct {
	Ticket uint64
	Resp   Response
}

// Machine is the store's state: a map from keys to values and the requests
// parked until keys appear. It does no I/O and reads no clock, so the same
// sequence of calls always gives the same results. It is not safe for
// concurrent use; the [Server] actor serialises access.
type Machine struct {
	data    map[string][]byte
	parked  map[uint64]*parkedReq // by ticket
	waiters map[string][]uint64   // key -> tickets of parked requests that need it, in arrival order
}

type parkedReq struct {
	req  Request
	keys []string // distinct keys of req, in request order
}

// NewMachine returns an empty store.
func NewMachine() *Machine {
	return &Machine{
		data:    map[string][]byte{},
		parked:  map[uint64]*parkedReq{},
		waiters: map[string][]uint64{},
	}
}

// Len is the number of keys.
func (m *Machine) Len() int { return len(m.data) }

// Pending lists the tickets of parked requests in increasing order.
func (m *Machine) Pending() []uint64 {
	ts := make([]uint64, 0, len(m.parked))
	for t := range m.parked {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// Apply applies req, which the caller identifies by ticket (unique among
// parked requests). A get of a missing key or a wait for missing keys parks:
// parked is true and the response comes later, either in the woken list of a
// later Apply or from [Machine.Expire]. woken lists the parked requests that
// this one completed, in ticket order.
func (m *Machine) Apply(ticket uint64, req Request) (resp Response, parked bool, woken []Woken) {
	resp = Response{ID: req.ID}
	if err := req.Validate(); err != nil {
		return invalid(req.ID, err), false, nil
	}
	if _, dup := m.parked[ticket]; dup && (req.Op == OpGet || req.Op == OpWait) {
		return invalid(req.ID, fmt.Errorf("ticket %d is already parked", ticket)), false, nil
	}
	switch req.Op {
	case OpSet:
		woken = m.put(req.Keys[0], bytes.Clone(req.Value))
	case OpGet:
		v, ok := m.data[req.Keys[0]]
		if !ok {
			m.park(ticket, req)
			return Response{}, true, nil
		}
		resp.Value = bytes.Clone(v)
	case OpWait:
		if !m.present(req.Keys) {
			m.park(ticket, req)
			return Response{}, true, nil
		}
	case OpAdd:
		n, err := m.add(req.Keys[0], req.Delta)
		if err != nil {
			return invalid(req.ID, err), false, nil
		}
		resp.Num = n
		woken = m.put(req.Keys[0], []byte(strconv.FormatInt(n, 10)))
	case OpCompareSet:
		key := req.Keys[0]
		cur, ok := m.data[key]
		switch {
		case !ok && len(req.Expected) == 0:
			// Like the reference: a missing key counts as holding the empty value.
			woken = m.put(key, bytes.Clone(req.Value))
			resp.Value = bytes.Clone(req.Value)
		case !ok:
			// Nothing was swapped. The reference answers the expected value
			// here, which reads as success; answer the truth: no value.
		case bytes.Equal(cur, req.Expected):
			m.data[key] = bytes.Clone(req.Value)
			resp.Value = bytes.Clone(req.Value)
		default:
			resp.Value = bytes.Clone(cur)
		}
	case OpCheck:
		resp.Num = boolNum(m.present(req.Keys))
	case OpDelete:
		_, ok := m.data[req.Keys[0]]
		delete(m.data, req.Keys[0])
		resp.Num = boolNum(ok)
	case OpNumKeys:
		resp.Num = int64(len(m.data))
	}
	return resp, false, woken
}

// Expire times out the parked request under ticket: its response names the
// keys still missing. ok is false when no request is parked under ticket
// (it already completed).
func (m *Machine) Expire(ticket uint64) (resp Response, ok bool) {
	p := m.unpark(ticket)
	if p == nil {
		return Response{}, false
	}
	var missing []string
	for _, k := range p.keys {
		if _, ok := m.data[k]; !ok {
			missing = append(missing, k)
		}
	}
	return Response{ID: p.req.ID, Code: CodeTimeout, Keys: missing, After: p.req.Timeout}, true
}

// Abort fails every parked request with CodeClosed and reason, in ticket
// order.
func (m *Machine) Abort(reason string) []Woken {
	var out []Woken
	for _, t := range m.Pending() {
		p := m.unpark(t)
		out = append(out, Woken{Ticket: t, Resp: Response{ID: p.req.ID, Code: CodeClosed, Msg: reason}})
	}
	return out
}

func (m *Machine) add(key string, delta int64) (int64, error) {
	var cur int64
	if v, ok := m.data[key]; ok {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("value under %q is not a decimal int64 (%d bytes)", key, len(v))
		}
		cur = n
	}
	if (delta > 0 && cur > math.MaxInt64-delta) || (delta < 0 && cur < math.MinInt64-delta) {
		return 0, fmt.Errorf("adding %d to %d under %q overflows int64", delta, cur, key)
	}
	return cur + delta, nil
}

// put stores v under key and, if the key is new, completes the parked
// requests it satisfies.
func (m *Machine) put(key string, v []byte) []Woken {
	_, existed := m.data[key]
	m.data[key] = v
	if existed {
		return nil
	}
	var woken []Woken
	for _, t := range slices.Clone(m.waiters[key]) {
		p := m.parked[t]
		if !m.present(p.keys) {
			continue
		}
		m.unpark(t)
		resp := Response{ID: p.req.ID}
		if p.req.Op == OpGet {
			resp.Value = bytes.Clone(m.data[p.keys[0]])
		}
		woken = append(woken, Woken{Ticket: t, Resp: resp})
	}
	slices.SortFunc(woken, func(a, b Woken) int {
		switch {
		case a.Ticket < b.Ticket:
			return -1
		case a.Ticket > b.Ticket:
			return 1
		}
		return 0
	})
	return woken
}

func (m *Machine) present(keys []string) bool {
	for _, k := range keys {
		if _, ok := m.data[k]; !ok {
			return false
		}
	}
	return true
}

func (m *Machine) park(ticket uint64, req Request) {
	p := &parkedReq{req: req}
	seen := make(map[string]bool, len(req.Keys))
	for _, k := range req.Keys {
		if !seen[k] {
			seen[k] = true
			p.keys = append(p.keys, k)
			m.waiters[k] = append(m.waiters[k], ticket)
		}
	}
	m.parked[ticket] = p
}

func (m *Machine) unpark(ticket uint64) *parkedReq {
	p := m.parked[ticket]
	if p == nil {
		return nil
	}
	delete(m.parked, ticket)
	for _, k := range p.keys {
		ts := slices.DeleteFunc(m.waiters[k], func(t uint64) bool { return t == ticket })
		if len(ts) == 0 {
			delete(m.waiters, k)
		} else {
			m.waiters[k] = ts
		}
	}
	return p
}

func invalid(id uint64, err error) Response {
	return Response{ID: id, Code: CodeInvalid, Msg: err.Error()}
}

func boolNum(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Errors that client calls wrap; test for them with errors.Is.
var (
	// ErrBadRequest marks a request the store refused as malformed or not
	// applicable (an oversized value, add on a non-integer, ...).
	ErrBadRequest = errors.New("bad store request")
	// ErrUnauthorized marks a request the store refused for a wrong token.
	ErrUnauthorized = errors.New("store rejected the job token")
	// ErrClosed marks a request to a store that has shut down.
	ErrClosed = errors.New("store closed")
	// ErrSizeMismatch marks an all_gather whose members contributed
	// payloads of different sizes.
	ErrSizeMismatch = errors.New("payload sizes differ")
)

// MissingKeysError reports a get or wait that timed out. Keys are the keys
// still missing when it did, in request order.
type MissingKeysError struct {
	Op    string // "wait" or "get"
	Keys  []string
	After time.Duration
}

// Error reads like `store wait: timed out after 1s; missing keys ["a/0/1"]`.
func (e *MissingKeysError) Error() string {
	op := e.Op
	if op == "" {
		op = "wait"
	}
	return fmt.Sprintf("store %s: timed out after %v; missing keys %q", op, e.After, e.Keys)
}
