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

	"github.com/symmem/symmem/internal/hostmem"
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

// Env is the environment variable that turns Auto off when it is "0".
const Env = "SYMMEM_HUGE_HEAP"

// Wanted reports whether getenv leaves Auto on (Env is not "0").
func Wanted(getenv func(string) string) bool { return getenv(Env) != "0" }

// Auto reserves heap for huge pages where that helps: unless getenv's Env
// is "0", and only under the setting "madvise" (under "always" the heap
// has them already, under "never" there are none to have), it reserves
// DefaultReserve, or a quarter of the machine's memory when that is less
// (the reservation is address space, never touched, but a system that
// commits memory strictly counts it). It returns the bytes marked; where
// the setting or the machine's memory cannot be read it marks none.
func Auto(getenv func(string) string) (uint64, error) {
	if !Wanted(getenv) {
		return 0, nil
	}
	if mode, err := Mode(); err != nil || mode != "madvise" {
		return 0, err
	}
	total, err := hostmem.Total()
	if err != nil {
		return 0, err
	}
	return Reserve(int(min(uint64(DefaultReserve), total/4)))
}
