package main

import (
	"math"
	"os"
	"runtime/debug"

	"github.com/symmem/symmem/internal/hostmem"
	"github.com/symmem/symmem/internal/hugeheap"
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

// fuzzWorkerMemory is the soft memory limit a fuzz worker adds when the
// fuzzer draws the sizes: a drawn case's live heap stays near 400 MiB
// (fuzz.MaxPTXCaseMemory), so the collector, which would let a heap grow
// to twice that between collections, keeps each worker under 1 GB.
const fuzzWorkerMemory = 850 << 20

// fuzzBaseMemory is the fuzzer's share of the limit besides its workers:
// the binary, its decoded kernels, the report.
const fuzzBaseMemory = 100 << 20

// limitFuzzMemory lowers the soft memory limit to what workers fuzz
// workers need ([fuzzMemoryLimit]), unless GOMEMLIMIT sets one.
func limitFuzzMemory(workers int) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(fuzzMemoryLimit(workers, debug.SetMemoryLimit(-1)))
}

// fuzzMemoryLimit is the soft memory limit of a fuzz run of workers
// workers under the limit current: fuzzWorkerMemory a worker and
// fuzzBaseMemory, or current when lower.
func fuzzMemoryLimit(workers int, current int64) int64 {
	w := int64(max(workers, 1))
	if w > (math.MaxInt64-fuzzBaseMemory)/fuzzWorkerMemory {
		return current
	}
	return min(current, w*fuzzWorkerMemory+fuzzBaseMemory)
}

// checkGCPercent is the collector's GOGC in symmem check: a check's heap
// is mostly the race detector's records and the lanes of one launch,
// short lived between launches; collecting half as often took 12% less
// CPU on the racy vLLM shape's 20 seeds for half again the peak memory
// (1.28 GB against 0.85 GB), which the soft memory limit still bounds.
const checkGCPercent = 200

// setCheckGC sets the collector's GOGC to checkGCPercent, unless the GOGC
// environment variable sets one.
func setCheckGC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(checkGCPercent)
}

// reserveHugeHeap reserves heap for transparent huge pages where the
// system leaves them to the program, unless SYMMEM_HUGE_HEAP is "0"
// ([hugeheap.Auto]). Best effort: an error leaves the heap as it was.
func reserveHugeHeap() { _, _ = hugeheap.Auto(os.Getenv) }

// reserveHeap calls the app's hugeHeap, if any.
func (a *app) reserveHeap() {
	if a.hugeHeap != nil {
		a.hugeHeap()
	}
}
