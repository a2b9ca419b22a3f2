//go:build linux && (amd64 || arm64)

package hugeheap

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// Reserve has the runtime map n bytes of heap that nothing uses yet and
// marks their whole huge pages MADV_HUGEPAGE; it returns the bytes marked.
// The bytes are never touched, so they cost no memory until the runtime
// hands them out again (it places new spans at the lowest free address,
// so it fills them before it maps more), and a page fault there then
// takes a 2 MiB page where the system has one to give. Under THP
// "always" it changes nothing, under "never" the kernel ignores the mark.
// It fails where the kernel has no transparent huge pages.
func Reserve(n int) (uint64, error) {
	_, size, err := reserve(n)
	return uint64(size), err
}

// reserve is Reserve, returning where the marked bytes start too.
func reserve(n int) (start, size uintptr, err error) {
	if n < PageSize {
		return 0, 0, nil
	}
	b := make([]byte, n)
	start, size = align(uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(n))
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, size, syscall.MADV_HUGEPAGE)
	runtime.KeepAlive(b)
	if errno != 0 {
		return 0, 0, fmt.Errorf("madvise MADV_HUGEPAGE of %d bytes of heap: %w", size, errno)
	}
	return start, size, nil
}
