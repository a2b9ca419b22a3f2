package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pa "github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/symmem/symmem/actor"
)

// maxFrame bounds one gRPC message of protoactor remote, which may batch
// several store messages.
const (
	remoteBatch = 8
	maxFrame    = remoteBatch * maxWireSize
)

// endpoint is the process's protoactor remote endpoint. protoactor's
// Remote.Start installs gRPC's process-wide logger every time it runs, which
// races with the gRPC goroutines of any endpoint already running, so a
// process starts at most one endpoint and keeps it until it exits: the first
// [Serve] starts it on the caller's actor system, or the first [Dial] on a
// private one. Later calls share it.
var endpoint struct {
	mu     sync.Mutex
	sys    *pa.ActorSystem
	addr   string // host:port
	stores int    // stores served so far, for unique actor names
}

// NewToken returns a fresh random job token for [Serve] and [Dial].
func NewToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: new token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Serve spawns a store actor in sys (on the goroutine dispatcher and the
// wall clock) and exposes it to other processes through protoactor remote
// on addr, a loopback "host:port" ("" or port 0: 127.0.0.1 and a free
// port). [Server.Addr] is the address to [Dial]. Remote requests must carry
// token.
//
// A process has one remote endpoint (see [Dial]): the first Serve starts it
// on sys, and later ones must pass the same sys and port 0 or the same
// address; they serve further stores under distinct actor names.
func Serve(sys *pa.ActorSystem, addr, token string) (*Server, error) {
	if token == "" {
		return nil, errors.New("store serve: empty job token")
	}
	if len(token) > MaxNameSize {
		return nil, fmt.Errorf("store serve: job token of %d bytes exceeds the %d-byte limit", len(token), MaxNameSize)
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, port, err := loopback(addr)
	if err != nil {
		return nil, fmt.Errorf("store serve: %w", err)
	}
	endpoint.mu.Lock()
	defer endpoint.mu.Unlock()
	switch {
	case endpoint.sys == nil:
		if err := startRemote(sys, host, port); err != nil {
			return nil, fmt.Errorf("store serve on %s: %w", addr, err)
		}
		endpoint.sys, endpoint.addr = sys, sys.Address()
	case endpoint.sys != sys:
		return nil, fmt.Errorf("store serve on %s: this process already runs its protoactor remote endpoint at %s on another actor system (one endpoint per process)", addr, endpoint.addr)
	case port != 0 && net.JoinHostPort(host, strconv.Itoa(port)) != endpoint.addr:
		return nil, fmt.Errorf("store serve on %s: this process's protoactor remote endpoint already listens at %s", addr, endpoint.addr)
	}
	name := ActorName
	if endpoint.stores > 0 {
		name = fmt.Sprintf("%s-%d", ActorName, endpoint.stores+1)
	}
	srv, err := NewServer(actor.NewLive(), sys, WithActorName(name), withToken(token))
	if err != nil {
		return nil, fmt.Errorf("store serve: %w", err)
	}
	endpoint.stores++
	srv.addr = endpoint.addr + "/" + name
	return srv, nil
}

func withToken(token string) Option { return func(o *options) { o.token = token } }

// loopback splits addr and checks that its host is a loopback address: the
// transport is not encrypted, so the store never listens beyond the host.
func loopback(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return "", 0, fmt.Errorf("address %q: host %q is not a loopback IP (the store transport is unencrypted)", addr, host)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("address %q: bad port %q", addr, p)
	}
	return host, port, nil
}

// startRemote starts protoactor remote on sys. Call it with endpoint.mu
// held, at most once per process.
func startRemote(sys *pa.ActorSystem, host string, port int) (err error) {
	cfg := remote.Configure(host, port,
		remote.WithServerOptions(grpc.MaxRecvMsgSize(maxFrame), grpc.MaxSendMsgSize(maxFrame)),
		remote.WithDialOptions(
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxFrame), grpc.MaxCallSendMsgSize(maxFrame)),
		),
		remote.WithEndpointWriterBatchSize(remoteBatch),
	)
	rem := remote.NewRemote(sys, cfg)
	defer func() {
		// protoactor's Start panics when it cannot listen.
		if r := recover(); r != nil {
			err = fmt.Errorf("start protoactor remote: %v", r)
		}
	}()
	rem.Start()
	return nil
}

// clientSystem returns the actor system of the process's remote endpoint,
// starting one on a private system if the process has none.
func clientSystem() (*pa.ActorSystem, error) {
	endpoint.mu.Lock()
	defer endpoint.mu.Unlock()
	if endpoint.sys == nil {
		sys := actor.NewSystem()
		if err := startRemote(sys, "127.0.0.1", 0); err != nil {
			return nil, err
		}
		endpoint.sys, endpoint.addr = sys, sys.Address()
	}
	return endpoint.sys, nil
}

// Dial connects to the store at addr ("host:port/actor-name" from
// [Server.Addr]; "host:port" means the actor [ActorName]), authenticating
// with token, and checks the connection with one request. Answers come back
// through the process's remote endpoint, which Dial starts on a private
// actor system if the process has none; it lives until the process exits.
// The returned function closes the client (later requests fail with
// [ErrClosed]). defaultTimeout bounds Get, a Wait given no timeout, and
// every other request (<= 0: [DefaultTimeout]).
func Dial(addr, token string, defaultTimeout time.Duration) (Client, func() error, error) {
	hostPort, name, _ := strings.Cut(addr, "/")
	if name == "" {
		name = ActorName
	}
	if strings.Contains(name, "/") {
		return nil, nil, fmt.Errorf("store dial: address %q: bad actor name %q", addr, name)
	}
	host, port, err := loopback(hostPort)
	if err != nil {
		return nil, nil, fmt.Errorf("store dial: %w", err)
	}
	if port == 0 {
		return nil, nil, fmt.Errorf("store dial: address %q has no port", addr)
	}
	if len(token) > MaxNameSize {
		return nil, nil, fmt.Errorf("store dial %s: job token of %d bytes exceeds the %d-byte limit", addr, len(token), MaxNameSize)
	}
	sys, err := clientSystem()
	if err != nil {
		return nil, nil, fmt.Errorf("store dial %s: %w", addr, err)
	}
	target := net.JoinHostPort(host, strconv.Itoa(port))
	rt := &remoteTransport{sys: sys, store: pa.NewPID(target, name), token: token, addr: addr}
	c := newClient(fmt.Sprintf("pid%d@%s", os.Getpid(), sys.Address()), defaultTimeout, rt)
	closeFn := func() error { rt.closed.Store(true); return nil }
	if _, err := c.NumKeys(); err != nil {
		return nil, nil, fmt.Errorf("store dial %s: %w", addr, err)
	}
	return c, closeFn, nil
}

// remoteTransport carries requests to a store in another process.
type remoteTransport struct {
	sys    *pa.ActorSystem
	store  *pa.PID
	token  string
	addr   string
	closed atomic.Bool
}

func (rt *remoteTransport) roundTrip(req *Request, wait time.Duration) (Response, error) {
	if rt.closed.Load() {
		return Response{}, ErrClosed
	}
	msg := &wrapperspb.BytesValue{Value: encodeRequest(rt.token, req)}
	res, err := rt.sys.Root.RequestFuture(rt.store, msg, wait).Result()
	switch {
	case errors.Is(err, pa.ErrDeadLetter):
		return Response{}, fmt.Errorf("store at %s unreachable (request %s#%d): %w", rt.addr, req.Client, req.ID, err)
	case err != nil:
		return Response{}, fmt.Errorf("no answer from the store at %s to request %s#%d within %v: %w", rt.addr, req.Client, req.ID, wait, err)
	}
	bv, ok := res.(*wrapperspb.BytesValue)
	if !ok {
		return Response{}, fmt.Errorf("store at %s answered request %s#%d with a %T", rt.addr, req.Client, req.ID, res)
	}
	resp, err := decodeResponse(bv.GetValue())
	if err != nil {
		return Response{}, fmt.Errorf("answer from the store at %s to request %s#%d: %w", rt.addr, req.Client, req.ID, err)
	}
	return resp, nil
}
