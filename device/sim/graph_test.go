package sim

import (
	"bytes"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
)

// TestGraphReplaysRecordedWork: memsets and copies recorded on a stream do
// not run while capturing, and run in recorded order on every replay,
// reading what memory holds at replay time.
func TestGraphReplaysRecordedWork(t *testing.T) {
	inTask(t, 1, Config{}, func(w *World) error {
		d := w.Device(0)
		p, err := d.Reserve(device.Granularity)
		if err != nil {
			return err
		}
		h, err := d.CreatePhysical(device.Granularity)
		if err != nil {
			return err
		}
		if err := d.Map(p, device.Granularity, h); err != nil {
			return err
		}
		if err := d.SetAccess(p, device.Granularity); err != nil {
			return err
		}
		s, err := d.NewStream()
		if err != nil {
			return err
		}
		src, dst := p, p.Add(64)
		if err := d.Write(s, src, []byte("before")); err != nil {
			return err
		}
		if err := d.BeginCapture(s); err != nil {
			return err
		}
		if err := d.Memset(s, dst, 'x', 8); err != nil {
			return err
		}
		if err := d.Copy(s, dst, src, 6); err != nil {
			return err
		}
		g, err := d.EndCapture(s)
		if err != nil {
			return err
		}
		got := make([]byte, 8)
		if err := d.Read(s, got, dst); err != nil {
			return err
		}
		if bytes.Equal(got[:6], []byte("before")) || got[7] == 'x' {
			t.Errorf("captured work ran during capture: %q", got)
		}
		for _, word := range []string{"first!", "second"} {
			if err := d.Write(s, src, []byte(word)); err != nil {
				return err
			}
			if err := d.LaunchGraph(g, s); err != nil {
				return err
			}
			if err := d.Read(s, got, dst); err != nil {
				return err
			}
			if want := word + "xx"; string(got) != want {
				t.Errorf("replay: %q, want %q", got, want)
			}
		}
		return d.DestroyGraph(g)
	})
}

// TestGraphRefusals: misuse of capture and graphs is an error naming what
// was wrong, and the stream works normally afterwards.
func TestGraphRefusals(t *testing.T) {
	inTask(t, 1, Config{}, func(w *World) error {
		d := w.Device(0)
		s, err := d.NewStream()
		if err != nil {
			return err
		}
		expect := func(what string, err error, want string) {
			t.Helper()
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want an error containing %q", what, err, want)
			}
		}
		_, err = d.EndCapture(s)
		expect("end without begin", err, "not capturing")
		if err := d.BeginCapture(s); err != nil {
			return err
		}
		expect("begin twice", d.BeginCapture(s), "already capturing")
		expect("synchronize while capturing", d.Synchronize(s), "capturing a graph")
		expect("write while capturing", d.Write(s, 0x1000, []byte{1}), "capturing a graph")
		expect("read while capturing", d.Read(s, make([]byte, 1), 0x1000), "capturing a graph")
		e, err := d.NewEvent()
		if err != nil {
			return err
		}
		expect("record event while capturing", d.RecordEvent(e, s), "capturing a graph")
		expect("destroy stream while capturing", d.DestroyStream(s), "capturing a graph")
		g, err := d.EndCapture(s)
		if err != nil {
			return err
		}
		expect("launch on another stream", d.LaunchGraph(g, 0), "captured on stream")
		expect("launch unknown graph", d.LaunchGraph(g+1, s), "unknown graph")
		if err := d.LaunchGraph(g, s); err != nil { // empty graph
			return err
		}
		if err := d.DestroyGraph(g); err != nil {
			return err
		}
		expect("destroy twice", d.DestroyGraph(g), "unknown graph")
		expect("launch destroyed graph", d.LaunchGraph(g, s), "unknown graph")
		return d.Synchronize(s)
	})
}
