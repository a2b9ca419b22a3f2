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

import (
	"fmt"
	"os"
	"strings"
)

// PageSize is the size of a transparent huge page on the systems Reserve
// serves (x86-64 and arm64 with 4 KiB base pages).
const PageSize = 2 << 20

// DefaultReserve is what the simulator's commands reserve: the heap of a
// world-4 PTX run at real launch shapes (the selftest's graphs case peaks
// near 1.1 GB).
const DefaultReserve = 1 << 30

// ModePath is where Linux reports its transparent huge page setting.
const ModePath = "/sys/kernel/mm/transparent_hugepage/enabled"

// ParseMode returns the setting that the contents of ModePath select:
// the word in brackets ("always", "madvise" or "never").
func ParseMode(enabled string) (string, error) {
	for _, f := range strings.Fields(enabled) {
		if m, ok := strings.CutPrefix(f, "["); ok {
			if m, ok := strings.CutSuffix(m, "]"); ok && m != "" {
				return m, nil
			}
		}
	}
	return "", fmt.Errorf("transparent huge pages: no setting selected in %q", enabled)
}

// Mode is the system's transparent huge page setting, read from
// ModePath: Reserve helps where it is "madvise".
func Mode() (string, error) {
	b, err := os.ReadFile(ModePath)
	if err != nil {
		return "", fmt.Errorf("transparent huge pages: %w", err)
	}
	return ParseMode(string(b))
}

// align returns the whole huge pages inside [p, p+n).
func align(p, n uintptr) (start, size uintptr) {
	start = (p + PageSize - 1) &^ (PageSize - 1)
	end := (p + n) &^ (PageSize - 1)
	if end <= start {
		return start, 0
	}
	return start, end - start
}
