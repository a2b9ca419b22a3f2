//go:build !linux

package sim

// mapped reports whether regions are mapped outside the Go heap.
const mapped = false

// mapRegion allocates n bytes on the Go heap.
func mapRegion(n uint64) ([]byte, error) { return make([]byte, n), nil }

// dropPages does nothing: heap regions keep their pages.
func dropPages([]byte) {}
