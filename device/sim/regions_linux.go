//go:build linux

package sim

import (
	"fmt"
	"syscall"
)

// mapped reports whether regions are mapped outside the Go heap.
const mapped = true

// mapRegion maps n bytes of anonymous memory: zero pages that take host
// memory only once touched.
func mapRegion(n uint64) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes of host memory: %w", n, err)
	}
	return b, nil
}

// dropPages gives b's pages back to the host; b stays mapped and reads as
// zeros until touched again.
func dropPages(b []byte) {
	_ = syscall.Madvise(b, syscall.MADV_DONTNEED) // advice: failing keeps the pages
}
