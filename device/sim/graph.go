package sim

import (
	"fmt"

	"github.com/symmem/symmem/device"
)

// submission enqueues one recorded operation on a stream; a capture keeps
// them to replay on every launch of its graph.
type submission func(st *stream)

// graph is a captured sequence of stream operations.
type graph struct {
	stream device.Stream // the stream it was captured on
	ops    []submission
}

// submit runs sub on st now, or records it while st is capturing.
func (d *simDevice) submit(st *stream, sub submission) {
	if st.capture != nil {
		*st.capture = append(*st.capture, sub)
		return
	}
	sub(st)
}

// waitable fails for operations that wait for a capturing stream, as a real
// device refuses them during capture.
func (d *simDevice) waitable(opName string, st *stream) error {
	if st.capture != nil {
		return fmt.Errorf("device %d: %s: stream %d is capturing a graph (end the capture first)", d.index, opName, st.id)
	}
	return nil
}

// BeginCapture starts recording the launches, memsets and copies enqueued
// on s.
func (d *simDevice) BeginCapture(s device.Stream) error {
	st, err := d.stream("begin capture", s)
	if err != nil {
		return err
	}
	if st.capture != nil {
		return fmt.Errorf("device %d: begin capture: stream %d is already capturing", d.index, s)
	}
	st.capture = &[]submission{}
	d.record("graph", "dev%d stream %d begin capture", d.index, uint64(s))
	return nil
}

// EndCapture stops recording s and returns the recorded operations as a
// graph.
func (d *simDevice) EndCapture(s device.Stream) (device.Graph, error) {
	st, err := d.stream("end capture", s)
	if err != nil {
		return 0, err
	}
	if st.capture == nil {
		return 0, fmt.Errorf("device %d: end capture: stream %d is not capturing", d.index, s)
	}
	g := d.nextGraph
	d.nextGraph++
	d.graphs[g] = &graph{stream: s, ops: *st.capture}
	st.capture = nil
	d.record("graph", "dev%d stream %d end capture: graph %d of %d ops", d.index, uint64(s), uint64(g), len(d.graphs[g].ops))
	return g, nil
}

// LaunchGraph enqueues g's operations on s, the stream it was captured on,
// in recorded order.
func (d *simDevice) LaunchGraph(g device.Graph, s device.Stream) error {
	st, err := d.stream("launch graph", s)
	if err != nil {
		return err
	}
	gr := d.graphs[g]
	if gr == nil {
		return fmt.Errorf("device %d: launch graph: unknown graph %d", d.index, g)
	}
	if gr.stream != s {
		return fmt.Errorf("device %d: launch graph: graph %d was captured on stream %d, not %d", d.index, g, gr.stream, s)
	}
	if err := d.waitable("launch graph", st); err != nil {
		return err
	}
	d.record("graph", "dev%d stream %d launch graph %d", d.index, uint64(s), uint64(g))
	for _, sub := range gr.ops {
		d.submit(st, sub)
	}
	return nil
}

// DestroyGraph releases g. Launches already enqueued still run.
func (d *simDevice) DestroyGraph(g device.Graph) error {
	if err := d.live("destroy graph"); err != nil {
		return err
	}
	if d.graphs[g] == nil {
		return fmt.Errorf("device %d: destroy graph: unknown graph %d", d.index, g)
	}
	delete(d.graphs, g)
	return nil
}
