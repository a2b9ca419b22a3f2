// Package hostmem reads how much memory the host has (in all, and
// available), from Linux's /proc/meminfo.
package hostmem

import (
	"bufio"
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
func Available() (uint64, error) { return read("MemAvailable", "available memory") }

// Total is the host's memory in bytes: MemTotal of /proc/meminfo. It
// fails where that file does not exist (not Linux).
func Total() (uint64, error) { return read("MemTotal", "total memory") }

func read(field, what string) (uint64, error) {
	f, err := os.Open(Path)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	n, err := ParseField(f, field)
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w", what, Path, err)
	}
	return n, nil
}

// Parse reads the MemAvailable line ("MemAvailable:   24072936 kB") of a
// meminfo file and returns it in bytes.
func Parse(r io.Reader) (uint64, error) { return ParseField(r, "MemAvailable") }

// ParseField reads the line of field (MemTotal, MemAvailable, ...) of a
// meminfo file and returns it in bytes.
func ParseField(r io.Reader, field string) (uint64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), field+":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("%s line %q: want a count of kB", field, sc.Text())
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil || kb > 1<<53 {
			return 0, fmt.Errorf("%s line %q: bad count", field, sc.Text())
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s line", field)
}
