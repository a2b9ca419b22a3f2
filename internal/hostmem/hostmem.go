// Package hostmem reads how much memory the host has available, from
// Linux's /proc/meminfo.
package hostmem

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Path is where the kernel reports its memory counters.
const Path = "/proc/meminfo"

// Available is the host's available memory in bytes: MemAvailable of
// /proc/meminfo, the kernel's estimate of what new work can use without
// swapping. It fails where that file does not exist (not Linux).
func Available() (uint64, error) {
	f, err := os.Open(Path)
	if err != nil {
		return 0, fmt.Errorf("available memory: %w", err)
	}
	defer f.Close()
	n, err := Parse(f)
	if err != nil {
		return 0, fmt.Errorf("available memory: %s: %w", Path, err)
	}
	return n, nil
}

// Parse reads the MemAvailable line ("MemAvailable:   24072936 kB") of a
// meminfo file and returns it in bytes.
func Parse(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("MemAvailable line %q: want a count of kB", sc.Text())
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil || kb > 1<<53 {
			return 0, fmt.Errorf("MemAvailable line %q: bad count", sc.Text())
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no MemAvailable line")
}
