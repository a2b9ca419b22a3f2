package actor

import (
	"testing"
	"unsafe"
)

// TestTaskHotFieldsShareALine: the fields a step reads and writes when
// it chooses a task lie in the task's first 64 bytes, and a task's size
// is a multiple of 64 (an allocation size class whose objects start on
// 64-byte lines), so that choosing a task reads one line of it.
func TestTaskHotFieldsShareALine(t *testing.T) {
	var task Task
	if off := unsafe.Offsetof(task.label); off != 64 {
		t.Errorf("the fields after the hot ones start at byte %d, want 64", off)
	}
	if size := unsafe.Sizeof(task); size%64 != 0 {
		t.Errorf("a Task is %d bytes, not a multiple of 64", size)
	}
}
