//go:build linux && (amd64 || arm64)

package hugeheap

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestReserveMarksTheHeap: the whole huge pages of what Reserve took are
// in a mapping of the heap that the kernel lists with the hugepage flag
// ("hg" among the VmFlags of /proc/self/smaps).
func TestReserveMarksTheHeap(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skipf("the kernel has no transparent huge pages: %v", err)
	}
	const n = 16 * PageSize
	start, size, err := reserve(n)
	if err != nil {
		t.Fatal(err)
	}
	if size < n-PageSize {
		t.Fatalf("Reserve(%d) marked %d bytes, want at least %d", n, size, n-PageSize)
	}
	flags, err := vmFlags(start)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the mapping at %#x has VmFlags %q, without hg", start, flags)
	}
}

// vmFlags returns the VmFlags of the mapping of /proc/self/smaps that
// holds addr.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(lo, ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = uint64(addr) >= a && uint64(addr) < b
				continue
			}
		}
		if in {
			if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok {
				return strings.TrimSpace(rest), nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", os.ErrNotExist
}
