package store

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTimeout is the client timeout used when a caller asks for none.
const DefaultTimeout = 5 * time.Minute

// replyGrace is how much longer than a get's or wait's own timeout a client
// waits for the store's answer before giving up on the store itself.
const replyGrace = 5 * time.Second

// Client is what rank code uses to talk to the job's store. Every method
// is safe for concurrent use in live runs; in a simulation call them from
// scheduler tasks.
type Client interface {
	// Set stores value under key, waking any get or wait for it.
	Set(key string, value []byte) error
	// Get returns the value under key, waiting for the key up to the
	// client's default timeout (a [*MissingKeysError] when it passes).
	Get(key string) ([]byte, error)
	// Wait waits until every key exists, up to timeout (<= 0: the client's
	// default). On timeout it returns a [*MissingKeysError] naming the keys
	// still missing.
	Wait(keys []string, timeout time.Duration) error
	// Add adds delta to the int64 stored as decimal text under key (a
	// missing key counts as 0) and returns the new value.
	Add(key string, delta int64) (int64, error)
	// CompareSet stores desired under key if the key holds expected, and
	// returns the value the key holds afterwards. A missing key counts as
	// holding the empty value; when it is missing and expected is not
	// empty, nothing is stored and the result is empty.
	CompareSet(key string, expected, desired []byte) ([]byte, error)
	// Check reports whether every key exists, without waiting.
	Check(keys []string) (bool, error)
	// Delete removes key and reports whether it existed.
	Delete(key string) (bool, error)
	// NumKeys counts the keys in the whole store (prefix views included).
	NumKeys() (int, error)
	// NextSequence hands out the sequence numbers of [Exchange]: 0, 1, 2,
	// ... for each scope. The clients of this package keep the counters
	// private to their connection, so the numbers follow what this
	// participant has done and nothing else in its process; a prefix view
	// counts in its underlying client, under the view's prefix. Wrappers
	// that do not renumber delegate to the client they wrap.
	NextSequence(scope string) uint64
}

// transport delivers one request to the store and returns its answer,
// giving up after wait.
type transport interface {
	roundTrip(req *Request, wait time.Duration) (Response, error)
}

// client turns the Client methods into requests over a transport.
type client struct {
	name    string
	timeout time.Duration
	tr      transport
	nextID  atomic.Uint64

	mu   sync.Mutex
	seqs map[string]uint64
}

func newClient(name string, timeout time.Duration, tr transport) *client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &client{name: name, timeout: timeout, tr: tr, seqs: map[string]uint64{}}
}

// NextSequence implements [Client].
func (c *client) NextSequence(scope string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.seqs[scope]
	c.seqs[scope] = n + 1
	return n
}

// do sends req and turns a failed response into an error naming the
// operation and its keys.
func (c *client) do(req Request) (Response, error) {
	req.ID = c.nextID.Add(1)
	req.Client = c.name
	if err := req.Validate(); err != nil {
		return Response{}, fmt.Errorf("store %s%s: %w: %v", req.Op, keyList(req.Keys), ErrBadRequest, err)
	}
	wait := c.timeout
	if req.Op == OpGet || req.Op == OpWait {
		wait = req.Timeout + replyGrace
	}
	resp, err := c.tr.roundTrip(&req, wait)
	if err != nil {
		return Response{}, fmt.Errorf("store %s%s: %w", req.Op, keyList(req.Keys), err)
	}
	if resp.ID != req.ID {
		return Response{}, fmt.Errorf("store %s%s: answer to request %d came for request %d", req.Op, keyList(req.Keys), req.ID, resp.ID)
	}
	switch resp.Code {
	case CodeOK:
		return resp, nil
	case CodeTimeout:
		return resp, &MissingKeysError{Op: req.Op.String(), Keys: resp.Keys, After: resp.After}
	case CodeInvalid:
		return resp, fmt.Errorf("store %s%s: %w: %s", req.Op, keyList(req.Keys), ErrBadRequest, resp.Msg)
	case CodeDenied:
		return resp, fmt.Errorf("store %s%s: %w", req.Op, keyList(req.Keys), ErrUnauthorized)
	case CodeClosed:
		return resp, fmt.Errorf("store %s%s: %w: %s", req.Op, keyList(req.Keys), ErrClosed, resp.Msg)
	}
	return resp, fmt.Errorf("store %s%s: unknown response code %v", req.Op, keyList(req.Keys), resp.Code)
}

// keyList formats keys for an error message, eliding long lists.
func keyList(keys []string) string {
	switch {
	case len(keys) == 0:
		return ""
	case len(keys) == 1:
		return fmt.Sprintf(" %q", keys[0])
	case len(keys) <= 8:
		return fmt.Sprintf(" %q", keys)
	}
	return fmt.Sprintf(" %q and %d more", keys[:8], len(keys)-8)
}

func (c *client) Set(key string, value []byte) error {
	_, err := c.do(Request{Op: OpSet, Keys: []string{key}, Value: value})
	return err
}

func (c *client) Get(key string) ([]byte, error) {
	resp, err := c.do(Request{Op: OpGet, Keys: []string{key}, Timeout: c.timeout})
	return resp.Value, err
}

func (c *client) Wait(keys []string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = c.timeout
	}
	_, err := c.do(Request{Op: OpWait, Keys: keys, Timeout: timeout})
	return err
}

func (c *client) Add(key string, delta int64) (int64, error) {
	resp, err := c.do(Request{Op: OpAdd, Keys: []string{key}, Delta: delta})
	return resp.Num, err
}

func (c *client) CompareSet(key string, expected, desired []byte) ([]byte, error) {
	resp, err := c.do(Request{Op: OpCompareSet, Keys: []string{key}, Expected: expected, Value: desired})
	return resp.Value, err
}

func (c *client) Check(keys []string) (bool, error) {
	resp, err := c.do(Request{Op: OpCheck, Keys: keys})
	return resp.Num != 0, err
}

func (c *client) Delete(key string) (bool, error) {
	resp, err := c.do(Request{Op: OpDelete, Keys: []string{key}})
	return resp.Num != 0, err
}

func (c *client) NumKeys() (int, error) {
	resp, err := c.do(Request{Op: OpNumKeys})
	return int(resp.Num), err
}

// WithPrefix returns a view of c in which every key becomes prefix+"/"+key.
// Errors name keys as the view's caller wrote them. NumKeys still counts the
// whole store.
func WithPrefix(c Client, prefix string) Client {
	return &prefixClient{inner: c, prefix: prefix + "/"}
}

type prefixClient struct {
	inner  Client
	prefix string // ends in "/"
}

func (p *prefixClient) key(k string) string { return p.prefix + k }

func (p *prefixClient) keys(ks []string) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = p.prefix + k
	}
	return out
}

// strip rewrites a MissingKeysError from the inner client into the view's
// key space.
func (p *prefixClient) strip(err error) error {
	var mk *MissingKeysError
	if !errors.As(err, &mk) {
		return err
	}
	keys := make([]string, len(mk.Keys))
	for i, k := range mk.Keys {
		keys[i] = strings.TrimPrefix(k, p.prefix)
	}
	return &MissingKeysError{Op: mk.Op, Keys: keys, After: mk.After}
}

func (p *prefixClient) Set(key string, value []byte) error { return p.inner.Set(p.key(key), value) }

func (p *prefixClient) Get(key string) ([]byte, error) {
	v, err := p.inner.Get(p.key(key))
	return v, p.strip(err)
}

func (p *prefixClient) Wait(keys []string, timeout time.Duration) error {
	return p.strip(p.inner.Wait(p.keys(keys), timeout))
}

func (p *prefixClient) Add(key string, delta int64) (int64, error) {
	return p.inner.Add(p.key(key), delta)
}

func (p *prefixClient) CompareSet(key string, expected, desired []byte) ([]byte, error) {
	return p.inner.CompareSet(p.key(key), expected, desired)
}

func (p *prefixClient) Check(keys []string) (bool, error) { return p.inner.Check(p.keys(keys)) }

func (p *prefixClient) Delete(key string) (bool, error) { return p.inner.Delete(p.key(key)) }

func (p *prefixClient) NumKeys() (int, error) { return p.inner.NumKeys() }

// NextSequence counts in the inner client, under the view's prefix.
func (p *prefixClient) NextSequence(scope string) uint64 {
	return p.inner.NextSequence(p.prefix + scope)
}
