package sim

import (
	"fmt"
	"strconv"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
)

// op is one queued stream operation.
type op struct {
	stream *stream
	seq    uint64
	name   string // "kernel", "memset", "copy", "write", "read", "event"
	kernel string
	run    func(o *op) error
	err    error
}

// stream is an ordered queue. While it has work a worker task runs the op at
// its head to completion, then the next; the worker ends when the queue is
// empty and a new one starts with the next op.
type stream struct {
	dev       *simDevice
	id        device.Stream
	queue     []*op
	enqueued  uint64     // sequence number of the last op enqueued
	completed uint64     // sequence number of the last op completed
	done      actor.Bell // rung when completed grows
	working   bool
	destroyed bool
	err       error         // first op error since the last Synchronize
	capture   *[]submission // operations recorded since BeginCapture; nil when not capturing
}

type event struct {
	recorded bool
	done     bool
	at       time.Duration
}

func (d *simDevice) stream(opName string, s device.Stream) (*stream, error) {
	if err := d.live(opName); err != nil {
		return nil, err
	}
	if err := d.awaitContext(opName); err != nil {
		return nil, err
	}
	st := d.streams[s]
	if st == nil || st.destroyed {
		return nil, fmt.Errorf("device %d: %s: unknown stream %d", d.index, opName, s)
	}
	return st, nil
}

// enqueue appends an op to st and makes sure a worker runs it.
func (d *simDevice) enqueue(st *stream, name, kernel string, run func(o *op) error) *op {
	st.enqueued++
	o := &op{stream: st, seq: st.enqueued, name: name, kernel: kernel, run: run}
	st.queue = append(st.queue, o)
	d.record("enqueue", "dev%d stream %d op %d %s %s", d.index, uint64(st.id), o.seq, name, kernel)
	if d.w.observe != nil {
		d.w.emit(&Access{Kind: Enqueue, Parent: -1, Device: d.index, Stream: st.id, Seq: o.seq, Op: name, Kernel: kernel, Block: -1, Lane: -1})
	}
	if !st.working {
		st.working = true
		d.w.sched.GoLabeled(actor.Label{
			Kind: actor.StreamTask, Name: "dev" + itoa(d.index) + " stream" + utoa(uint64(st.id)),
			Device: d.index, Stream: uint64(st.id),
		}, st.work)
	}
	return o
}

func (st *stream) work() {
	d := st.dev
	for len(st.queue) > 0 {
		o := st.queue[0]
		d.emitOp(OpStart, o)
		err := o.run(o)
		if err != nil {
			o.err = fmt.Errorf("device %d stream %d op %d (%s%s): %w", d.index, st.id, o.seq, o.name, prefixed(o.kernel), err)
			if st.err == nil {
				st.err = o.err
			}
		}
		d.record("complete", "dev%d stream %d op %d %s%s err=%v", d.index, uint64(st.id), o.seq, o.name, prefixed(o.kernel), err != nil)
		d.emitOp(OpEnd, o)
		st.queue[0] = nil
		st.queue = st.queue[1:]
		st.completed = o.seq
		st.done.Ring()
	}
	st.working = false
	if st.destroyed {
		delete(d.streams, st.id)
	}
}

func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}

func (d *simDevice) emitOp(kind AccessKind, o *op) {
	if d.w.observe != nil {
		d.w.emit(&Access{Kind: kind, Parent: -1, Device: d.index, Stream: o.stream.id, Seq: o.seq, Op: o.name, Kernel: o.kernel, Block: -1, Lane: -1})
	}
}

// await blocks until op o has completed and returns its own error.
func (d *simDevice) await(st *stream, o *op) error {
	what := "device " + itoa(d.index) + " stream " + utoa(uint64(st.id)) + " to finish op " + utoa(o.seq) + " (" + o.name + ")"
	if err := d.wait(what, func() bool { return st.completed >= o.seq }, &st.done); err != nil {
		return err
	}
	d.emitComplete(st, o.seq)
	return o.err
}

func (d *simDevice) emitComplete(st *stream, seq uint64) {
	if d.w.observe != nil {
		d.w.emit(&Access{Kind: Complete, Parent: -1, Device: d.index, Stream: st.id, Seq: seq, Block: -1, Lane: -1})
	}
}

// NewStream creates a stream. Stream 0 always exists.
func (d *simDevice) NewStream() (device.Stream, error) {
	if err := d.live("new stream"); err != nil {
		return 0, err
	}
	s := d.nextStream
	d.nextStream++
	d.streams[s] = &stream{dev: d, id: s}
	return s, nil
}

// DestroyStream destroys s once its queued work completes. Stream 0 cannot
// be destroyed.
func (d *simDevice) DestroyStream(s device.Stream) error {
	st, err := d.stream("destroy stream", s)
	if err != nil {
		return err
	}
	if s == 0 {
		return fmt.Errorf("device %d: destroy stream: stream 0 is the default stream", d.index)
	}
	if err := d.waitable("destroy stream", st); err != nil {
		return err
	}
	if err := d.syncContext(SyncDestroyStream, "destroy stream"); err != nil {
		return err
	}
	st.destroyed = true
	if !st.working {
		delete(d.streams, s)
	}
	return nil
}

// Synchronize waits until the work enqueued on s so far has completed and
// returns (and clears) the first error an op raised since the last
// Synchronize. The stream stays usable.
func (d *simDevice) Synchronize(s device.Stream) error {
	st, err := d.stream("synchronize", s)
	if err != nil {
		return err
	}
	if err := d.waitable("synchronize", st); err != nil {
		return err
	}
	target := st.enqueued
	what := "device " + itoa(d.index) + " stream " + utoa(uint64(s)) + " to finish op " + utoa(target)
	if err := d.wait(what, func() bool { return st.completed >= target }, &st.done); err != nil {
		return err
	}
	d.emitComplete(st, target)
	err, st.err = st.err, nil
	return err
}

// NewEvent creates an event.
func (d *simDevice) NewEvent() (device.Event, error) {
	if err := d.live("new event"); err != nil {
		return 0, err
	}
	e := d.nextEvent
	d.nextEvent++
	d.events[e] = &event{}
	return e, nil
}

func (d *simDevice) event(opName string, e device.Event) (*event, error) {
	if err := d.live(opName); err != nil {
		return nil, err
	}
	ev := d.events[e]
	if ev == nil {
		return nil, fmt.Errorf("device %d: %s: unknown event %d", d.index, opName, e)
	}
	return ev, nil
}

// RecordEvent records e at the current end of s: when the stream reaches it,
// the event takes the virtual time.
func (d *simDevice) RecordEvent(e device.Event, s device.Stream) error {
	ev, err := d.event("record event", e)
	if err != nil {
		return err
	}
	st, err := d.stream("record event", s)
	if err != nil {
		return err
	}
	if err := d.waitable("record event", st); err != nil {
		return err
	}
	ev.recorded, ev.done = true, false
	d.enqueue(st, "event", "", func(*op) error {
		ev.done, ev.at = true, d.w.sched.Now()
		return nil
	})
	return nil
}

// Elapsed is the virtual time between two recorded, completed events.
func (d *simDevice) Elapsed(start, end device.Event) (time.Duration, error) {
	s, err := d.event("elapsed", start)
	if err != nil {
		return 0, err
	}
	e, err := d.event("elapsed", end)
	if err != nil {
		return 0, err
	}
	for _, x := range []struct {
		id device.Event
		ev *event
	}{{start, s}, {end, e}} {
		if !x.ev.recorded {
			return 0, fmt.Errorf("device %d: elapsed: event %d was never recorded", d.index, x.id)
		}
		if !x.ev.done {
			return 0, fmt.Errorf("device %d: elapsed: event %d has not completed yet", d.index, x.id)
		}
	}
	return e.at - s.at, nil
}

// DestroyEvent destroys e.
func (d *simDevice) DestroyEvent(e device.Event) error {
	if _, err := d.event("destroy event", e); err != nil {
		return err
	}
	delete(d.events, e)
	return nil
}

// itoa and utoa format numbers for task names and wait descriptions, which
// are built often enough that fmt shows in profiles.
func itoa(i int) string    { return strconv.Itoa(i) }
func utoa(u uint64) string { return strconv.FormatUint(u, 10) }
