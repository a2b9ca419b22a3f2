package store

import (
	"crypto/subtle"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pa "github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/symmem/symmem/actor"
)

// Server is the store of one job: a protoactor actor that owns a
// [Machine]. Requests are applied one at a time in mailbox order; gets and
// waits of missing keys park until the keys appear or their timeout, taken
// from the runtime, passes. Every request is recorded in the runtime's trace
// under kind "store".
type Server struct {
	rt   actor.Runtime
	sys  *pa.ActorSystem
	disp pa.Dispatcher
	pid  *pa.PID

	closed    atomic.Bool
	closeOnce sync.Once

	// Set before the actor starts, read-only afterwards.
	token string
	addr  string

	// Owned by the actor.
	m       *Machine
	tickets uint64
	parked  map[uint64]*waiter
}

// waiter is a parked request's reply address and timer.
type waiter struct {
	desc   string
	reply  replyTo
	cancel func()
}

// replyTo says where and how to answer: a Go value to an in-process reply
// actor, or wire bytes to a remote sender.
type replyTo struct {
	pid  *pa.PID
	wire bool
}

// call is an in-process request; its answer goes to reply as a *Response.
type call struct {
	req   Request
	reply *pa.PID
}

// expire is the timer message for a parked request.
type expire struct{ ticket uint64 }

// Option configures [NewServer].
type Option func(*options)

type options struct {
	disp  pa.Dispatcher
	name  string
	token string // set by Serve: remote requests must carry it
}

// WithDispatcher runs the store actor and every in-process client's reply
// actor on d. In a simulation pass the scheduler's dispatcher; nil (the
// default) is protoactor's goroutine dispatcher.
func WithDispatcher(d pa.Dispatcher) Option { return func(o *options) { o.disp = d } }

// WithActorName spawns the store actor under name instead of a generated
// one. [Serve] uses [ActorName] (suffixed "-2", "-3", ... for later stores
// of the same process) so that [Dial] can find it.
func WithActorName(name string) Option { return func(o *options) { o.name = name } }

// ActorName is the name of the store actor that [Serve] exposes.
const ActorName = "symmem-store"

// NewServer spawns a store actor in sys. Its timers and trace come from rt.
// It fails only when a name given with [WithActorName] is taken.
func NewServer(rt actor.Runtime, sys *pa.ActorSystem, opts ...Option) (*Server, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s := &Server{rt: rt, sys: sys, disp: o.disp, token: o.token, m: NewMachine(), parked: map[uint64]*waiter{}}
	props := s.props(s.receive)
	if o.name == "" {
		s.pid = sys.Root.Spawn(props)
		return s, nil
	}
	pid, err := sys.Root.SpawnNamed(props, o.name)
	if err != nil {
		return nil, fmt.Errorf("store: spawn actor %q: %w", o.name, err)
	}
	s.pid = pid
	return s, nil
}

func (s *Server) props(recv pa.ReceiveFunc) *pa.Props {
	if s.disp == nil {
		return pa.PropsFromFunc(recv)
	}
	return pa.PropsFromFunc(recv, pa.WithDispatcher(s.disp))
}

// PID is the store actor.
func (s *Server) PID() *pa.PID { return s.pid }

// Addr is the address to pass to [Dial] for a store started by [Serve]:
// "host:port/actor-name" ("" for a store not served).
func (s *Server) Addr() string { return s.addr }

// Close stops the store: parked requests fail with [ErrClosed] and later
// requests fail too (at once for in-process clients). The process's remote
// endpoint, if [Serve] started one, keeps running. It is safe to call more
// than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.sys.Root.Stop(s.pid)
	})
	return nil
}

func (s *Server) receive(ctx pa.Context) {
	switch msg := ctx.Message().(type) {
	case *call:
		s.handle(ctx, msg.req, replyTo{pid: msg.reply})
	case *wrapperspb.BytesValue:
		s.handleWire(ctx, msg.GetValue())
	case *expire:
		s.expire(ctx, msg.ticket)
	case *pa.Stopping:
		for _, w := range s.m.Abort("store is shutting down") {
			s.finish(ctx, w, "closed")
		}
	case *pa.Started, *pa.Stopped, *pa.Restarting:
	default:
		s.rt.Record("store", fmt.Sprintf("ignored message %T", msg))
		if ctx.Sender() != nil {
			resp := Response{Code: CodeInvalid, Msg: fmt.Sprintf("unexpected message type %T", msg)}
			s.reply(ctx, replyTo{pid: ctx.Sender(), wire: true}, &resp)
		}
	}
}

// handleWire decodes a request from another process and checks its token.
func (s *Server) handleWire(ctx pa.Context, b []byte) {
	to := replyTo{pid: ctx.Sender(), wire: true}
	token, req, err := decodeRequest(b)
	if err != nil {
		s.rt.Record("store", fmt.Sprintf("malformed request #%d: %v", req.ID, err))
		s.reply(ctx, to, &Response{ID: req.ID, Code: CodeInvalid, Msg: err.Error()})
		return
	}
	if s.token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) != 1 {
		s.rt.Record("store", fmt.Sprintf("denied %s#%d %s", req.Client, req.ID, req.Op))
		s.reply(ctx, to, &Response{ID: req.ID, Code: CodeDenied, Msg: "wrong job token"})
		return
	}
	s.handle(ctx, req, to)
}

func (s *Server) handle(ctx pa.Context, req Request, to replyTo) {
	s.tickets++
	t := s.tickets
	desc := describe(&req)
	s.rt.Record("store", desc)
	resp, parked, woken := s.m.Apply(t, req)
	if parked {
		self := ctx.Self()
		cancel := s.rt.After(fmt.Sprintf("store timeout %s#%d", req.Client, req.ID), req.Timeout, func() {
			s.sys.Root.Send(self, &expire{ticket: t})
		})
		s.parked[t] = &waiter{desc: desc, reply: to, cancel: cancel}
	} else {
		if resp.Code != CodeOK {
			s.rt.Record("store", fmt.Sprintf("%s#%d %v: %s", req.Client, req.ID, resp.Code, resp.Msg))
		}
		s.reply(ctx, to, &resp)
	}
	for _, w := range woken {
		s.finish(ctx, w, "done")
	}
}

func (s *Server) expire(ctx pa.Context, ticket uint64) {
	resp, ok := s.m.Expire(ticket)
	if !ok {
		return // it completed just before its timer fired
	}
	s.finish(ctx, Woken{Ticket: ticket, Resp: resp}, fmt.Sprintf("timed out, missing %q", resp.Keys))
}

// finish answers a parked request and stops its timer.
func (s *Server) finish(ctx pa.Context, w Woken, how string) {
	p := s.parked[w.Ticket]
	if p == nil {
		return
	}
	delete(s.parked, w.Ticket)
	p.cancel()
	s.rt.Record("store", p.desc+" "+how)
	s.reply(ctx, p.reply, &w.Resp)
}

func (s *Server) reply(ctx pa.Context, to replyTo, resp *Response) {
	if to.pid == nil {
		return
	}
	if to.wire {
		ctx.Send(to.pid, &wrapperspb.BytesValue{Value: encodeResponse(resp)})
		return
	}
	r := *resp
	ctx.Send(to.pid, &r)
}

// describe is the trace line for a request.
func describe(r *Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s#%d %s", r.Client, r.ID, r.Op)
	if len(r.Keys) > 0 {
		fmt.Fprintf(&b, "%s", keyList(r.Keys))
	}
	switch r.Op {
	case OpSet:
		fmt.Fprintf(&b, " %dB", len(r.Value))
	case OpCompareSet:
		fmt.Fprintf(&b, " %dB->%dB", len(r.Expected), len(r.Value))
	case OpAdd:
		fmt.Fprintf(&b, " %+d", r.Delta)
	case OpGet, OpWait:
		fmt.Fprintf(&b, " within %v", r.Timeout)
	}
	return b.String()
}

// Connect returns an in-process client named name (the name appears in
// traces and errors). defaultTimeout bounds Get and a Wait given no timeout
// (<= 0: [DefaultTimeout]).
//
// The client sends each request with the PID of its own small reply actor
// (on the server's dispatcher) and blocks in the runtime's Wait until the
// answer with that request's ID arrives, so in a simulation it uses no
// goroutines or wall-clock timers.
func (s *Server) Connect(name string, defaultTimeout time.Duration) Client {
	lt := &localTransport{srv: s, inbox: map[uint64]*Response{}}
	lt.self = s.sys.Root.Spawn(s.props(lt.receive))
	return newClient(name, defaultTimeout, lt)
}

// localTransport is an in-process client's path to the store.
type localTransport struct {
	srv  *Server
	self *pa.PID

	mu    sync.Mutex
	inbox map[uint64]*Response // answers to requests still being waited for; nil until one comes
	bell  actor.Bell           // rings, under mu, as an answer comes
}

func (lt *localTransport) receive(ctx pa.Context) {
	resp, ok := ctx.Message().(*Response)
	if !ok {
		return
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if r, waiting := lt.inbox[resp.ID]; waiting && r == nil {
		lt.inbox[resp.ID] = resp
		lt.bell.Ring()
	}
}

func (lt *localTransport) roundTrip(req *Request, wait time.Duration) (Response, error) {
	if lt.srv.closed.Load() {
		return Response{}, ErrClosed
	}
	id := req.ID
	lt.mu.Lock()
	lt.inbox[id] = nil
	lt.mu.Unlock()
	defer func() {
		lt.mu.Lock()
		delete(lt.inbox, id)
		lt.mu.Unlock()
	}()
	lt.srv.sys.Root.Send(lt.srv.pid, &call{req: *req, reply: lt.self})
	what := fmt.Sprintf("store reply to %s#%d %s%s", req.Client, id, req.Op, keyList(req.Keys))
	ready := func() bool {
		lt.mu.Lock()
		defer lt.mu.Unlock()
		return lt.inbox[id] != nil
	}
	if err := lt.srv.rt.WaitBell(what, ready, &lt.bell, wait); err != nil {
		return Response{}, fmt.Errorf("no answer from the store to request %s#%d within %v: %w", req.Client, id, wait, err)
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return *lt.inbox[id], nil
}
