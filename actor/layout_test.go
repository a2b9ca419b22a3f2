package actor

import (
	"testing"
	"unsafe"
)

// TestTaskHotFieldsShareALine: the fields a step reads and writes when
// it chooses a task lie in the task's first 64 bytes, those it touches
// after choosing it (its continuation, the step it ran at) in the next
// 64, and a task's size is a multiple of 128 (an allocation size class
// whose objects start on aligned pairs of 64-byte lines, which a
// processor fetches together), so that a step reads one pair of it.
func TestTaskHotFieldsShareALine(t *testing.T) {
	var task Task
	if off := unsafe.Offsetof(task.then); off != 64 {
		t.Errorf("the fields after the hot ones start at byte %d, want 64", off)
	}
	if end := unsafe.Offsetof(task.ran) + unsafe.Sizeof(task.ran); end > 128 {
		t.Errorf("the fields touched after a choice end at byte %d, past 128", end)
	}
	if size := unsafe.Sizeof(task); size%128 != 0 {
		t.Errorf("a Task is %d bytes, not a multiple of 128", size)
	}
}
