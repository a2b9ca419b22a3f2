package main

import (
	"os"
	"runtime/debug"

	"github.com/symmem/symmem/internal/hostmem"
)

// setSoftMemoryLimit sets the Go runtime's soft memory limit to half the
// machine's memory, unless GOMEMLIMIT sets one. By default the runtime
// lets the heap grow to twice what is live before it collects; a long
// simulation (a fuzz case of ten million steps, its race detector's
// shadow and the weak memory's histories) would then ask for twice its
// live memory, and several workers for more than the machine has. With
// the limit the collector works harder as the heap nears it instead.
func setSoftMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if total, err := hostmem.Total(); err == nil {
		debug.SetMemoryLimit(int64(total / 2))
	} // elsewhere than Linux: the runtime's default
}
