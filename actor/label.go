package actor

import "strconv"

// TaskKind says what a task runs.
type TaskKind uint8

// Task kinds.
const (
	// OtherTask is a task started with a name only ([Scheduler.Go]).
	OtherTask TaskKind = iota
	// ProgramTask runs a rank's program (the runs of its mailbox).
	ProgramTask
	// StreamTask is the worker of a device's stream.
	StreamTask
	// BlockTask runs one thread block of a kernel launch.
	BlockTask
	// LaneTask runs one thread (lane) of a thread block.
	LaneTask
	// FaultTask does the work of a fault injector.
	FaultTask
)

var taskKinds = [...]string{"other", "program", "stream", "block", "lane", "fault"}

func (k TaskKind) String() string {
	if int(k) < len(taskKinds) {
		return taskKinds[k]
	}
	return "kind" + strconv.Itoa(int(k))
}

// Label is what a task is: its kind, the fields that kind uses, and the
// name traces and reports show. Code that selects tasks (fault plans
// crashing a rank, strategies favouring a task) matches labels, never
// names. Fields a kind does not use are zero.
type Label struct {
	Kind TaskKind
	// Name is the task's name in traces, reports and errors.
	Name string
	// Rank is the rank whose program (ProgramTask) or fault (FaultTask)
	// the task runs.
	Rank int
	// Device is the ordinal of the device of a StreamTask, BlockTask or
	// LaneTask.
	Device int
	// Stream is the stream of a StreamTask.
	Stream uint64
	// Kernel and Launch name the launch of a BlockTask or LaneTask: the
	// kernel and the launch's number.
	Kernel string
	Launch uint64
	// Block is the block index of a BlockTask or LaneTask, Lane the thread
	// index of a LaneTask.
	Block, Lane int
}

// OnDevice reports whether the task runs device work (a stream's worker,
// a block or a lane) of device d.
func (l Label) OnDevice(d int) bool {
	switch l.Kind {
	case StreamTask, BlockTask, LaneTask:
		return l.Device == d
	}
	return false
}
