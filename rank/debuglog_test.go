package rank

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/symmem/symmem/device"
)

// TestDebugLogs: at debug level every rank logs its allocations, its
// rendezvous, its launches and the timeout of a peer that never came,
// each line with the rank and (but for allocations) the group.
func TestDebugLogs(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	cfg := SimConfig{World: 2, Seed: 1, Timeout: time.Second, Logger: zap.New(core)}
	_, err := Simulate(cfg, func(r *Rank) error {
		buf, err := r.Alloc(4096)
		if err != nil {
			return err
		}
		in := Tensor{Ptr: buf, DType: device.Float32, Numel: 1024}
		if err := r.TwoShotAllReduce(in, device.Sum, WorldGroup); err != nil {
			return err
		}
		if err := r.NewGroup("alone", []int{0, 1}); err != nil {
			return err
		}
		if r.ID() == 0 { // rank 1 never joins this rendezvous
			if _, err := r.Rendezvous(buf, "alone"); err == nil {
				t.Error("a rendezvous without its peer succeeded")
			}
		}
		return r.Free(buf)
	})
	if err != nil {
		t.Fatal(err)
	}
	count := func(msg, group string, rank int) int {
		n := 0
		for _, e := range logs.FilterMessage(msg).All() {
			f := e.ContextMap()
			if f["rank"] == int64(rank) && (group == "" || f["group"] == group) {
				n++
			}
		}
		return n
	}
	for r := range 2 {
		for _, want := range []struct {
			msg, group string
			n          int
		}{
			{"alloc", "", 1}, {"free", "", 1},
			{"rendezvous start", WorldGroup, 1}, {"rendezvous done", WorldGroup, 1},
			{"launch", WorldGroup, 1},
		} {
			if got := count(want.msg, want.group, r); got != want.n {
				t.Errorf("rank %d: %d %q lines on group %q, want %d", r, got, want.msg, want.group, want.n)
			}
		}
	}
	timeouts := logs.FilterMessage("rendezvous timed out").All()
	if len(timeouts) != 1 || timeouts[0].ContextMap()["rank"] != int64(0) || timeouts[0].ContextMap()["group"] != "alone" ||
		!strings.Contains(timeouts[0].ContextMap()["error"].(string), "timed out") {
		t.Errorf("timeout lines %+v, want one of rank 0 on group alone", timeouts)
	}
	if l := logs.FilterMessage("launch").All(); len(l) > 0 && l[0].ContextMap()["kernel"] != "two_shot_all_reduce" {
		t.Errorf("launch line %+v does not name the two-shot kernel", l[0].ContextMap())
	}
}
