// Package hugeheap has the Go heap backed by transparent huge pages where
// the system leaves that to each program (Linux's THP setting "madvise").
//
// A simulation's hot records (its tasks, lanes, weak-memory histories and
// race-detector shadow) are spread over a heap of a gigabyte or more, and
// a scheduling step touches a dozen of them at random: with 4 KiB pages
// nearly every one of those reads misses the processor's TLB as well as
// its caches. The Go runtime no longer advises huge pages for its heap
// itself, so a program that wants them reserves heap ahead (Reserve).
package hugeheap

// PageSize is the size of a transparent huge page on the systems Reserve
// serves (x86-64 and arm64 with 4 KiB base pages).
const PageSize = 2 << 20

// DefaultReserve is what the simulator's commands reserve: the heap of a
// world-4 PTX run at real launch shapes (the selftest's graphs case peaks
// near 1.1 GB).
const DefaultReserve = 1 << 30

// align returns the whole huge pages inside [p, p+n).
func align(p, n uintptr) (start, size uintptr) {
	start = (p + PageSize - 1) &^ (PageSize - 1)
	end := (p + n) &^ (PageSize - 1)
	if end <= start {
		return start, 0
	}
	return start, end - start
}
