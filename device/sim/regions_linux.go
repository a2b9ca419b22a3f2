package sim

import (
	"math"
	"syscall"
)

// mapRegion returns n bytes of a private anonymous mapping of their own:
// zero, and resident only once touched. It reports false when the
// system refuses the mapping (the caller then takes bytes of the heap).
func mapRegion(n uint64) ([]byte, bool) {
	if n == 0 || n > math.MaxInt {
		return nil, false
	}
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, false
	}
	return b, true
}

// releasePages hands the pages of b, a region mapRegion returned, back
// to the system: they read as zeros until touched again. Best effort: a
// refusal leaves them resident, which costs memory but changes nothing
// else.
func releasePages(b []byte) {
	_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
}
