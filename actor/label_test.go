package actor

import (
	"testing"

	pa "github.com/asynkron/protoactor-go/actor"
)

// TestLabelsReachTasks: a task keeps the label it was started with (a plain
// Go gets an OtherTask label carrying its name), the trace shows the name,
// a labelled dispatcher labels every mailbox run, and Halt can select by
// label.
func TestLabelsReachTasks(t *testing.T) {
	s := NewScheduler(Config{Seed: 1, KeepEvents: true})
	stream := Label{Kind: StreamTask, Name: "dev1 stream3", Device: 1, Stream: 3}
	var got []Label
	s.GoLabeled(stream, func() { got = append(got, s.Current().Label()) })
	s.Go("plain", func() { got = append(got, s.Current().Label()) })
	program := Label{Kind: ProgramTask, Name: "rank2", Rank: 2}
	sys := NewSystem()
	pid := sys.Root.Spawn(pa.PropsFromFunc(func(c pa.Context) {
		if _, ok := c.Message().(string); ok {
			got = append(got, s.Current().Label())
		}
	}, pa.WithDispatcher(s.LabeledDispatcher(program))))
	sys.Root.Send(pid, "go")
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	want := map[Label]bool{stream: true, {Name: "plain"}: true, program: true}
	for _, l := range got {
		delete(want, l)
	}
	if len(want) != 0 {
		t.Errorf("labels seen %+v; missing %+v", got, want)
	}
	spawned := 0
	for _, e := range s.Trace().Events() {
		if e.Kind == "spawn" && (e.Detail == "0 dev1 stream3" || e.Detail == "1 plain") {
			spawned++
		}
	}
	if spawned != 2 {
		t.Errorf("the trace names %d of the 2 tasks by their names", spawned)
	}
	if !stream.OnDevice(1) || stream.OnDevice(0) || program.OnDevice(0) {
		t.Errorf("OnDevice: stream on 1 %v, on 0 %v; program on 0 %v", stream.OnDevice(1), stream.OnDevice(0), program.OnDevice(0))
	}
	if k := BlockTask.String(); k != "block" {
		t.Errorf("BlockTask = %q", k)
	}
}

// TestHaltByLabel: Halt selects the tasks of one device by label, whatever
// their names.
func TestHaltByLabel(t *testing.T) {
	s := NewScheduler(Config{Seed: 3})
	ran := map[string]int{}
	for _, l := range []Label{
		{Kind: BlockTask, Name: "a", Device: 0},
		{Kind: LaneTask, Name: "b", Device: 0, Lane: 1},
		{Kind: BlockTask, Name: "c", Device: 1},
	} {
		s.GoLabeled(l, func() {
			for range 3 {
				ran[l.Name]++
				s.Yield("work")
			}
		})
	}
	s.Halt("device 0 lost", func(t *Task) bool { return t.Label().OnDevice(0) })
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if ran["a"] != 0 || ran["b"] != 0 || ran["c"] != 3 {
		t.Errorf("steps run %v, want only c's 3", ran)
	}
}
