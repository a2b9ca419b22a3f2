//go:build !linux

package sim

// mapRegion reports false: elsewhere than Linux, regions are bytes of the
// Go heap.
func mapRegion(uint64) ([]byte, bool) { return nil, false }

// releasePages is never called: no region is a mapping.
func releasePages([]byte) {}
