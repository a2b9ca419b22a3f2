package main

import (
	"bufio"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
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
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return // not Linux: the runtime's default
	}
	defer f.Close()
	if total, ok := memTotal(f); ok {
		debug.SetMemoryLimit(int64(total / 2))
	}
}

// memTotal reads the MemTotal line of /proc/meminfo, in bytes.
func memTotal(r io.Reader) (uint64, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		num, unit, _ := strings.Cut(strings.TrimSpace(rest), " ")
		kb, err := strconv.ParseUint(num, 10, 64)
		if err != nil || unit != "kB" || kb > 1<<53 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}
