package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/symmem/symmem/internal/hostmem"
	"github.com/symmem/symmem/simjob"
)

// Flag checks shared by the subcommands. Every command runs all of its
// checks before any work starts and reports every bad flag at once, each
// error naming its flag.

// maxWorld is the largest world size (an NVLink domain of 72 GPUs).
const maxWorld = 72

// checkWorld checks a world-size flag.
func checkWorld(flag string, n int) error {
	if n < 1 || n > maxWorld {
		return fmt.Errorf("--%s %d: want 1..%d", flag, n, maxWorld)
	}
	return nil
}

// checkTimeout checks --timeout: every wait is bounded, so there is no
// "0 waits forever".
func checkTimeout(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("--timeout %v: want a positive duration (0 is not allowed: every wait is bounded)", d)
	}
	return nil
}

// checkDevice checks --device.
func checkDevice(dev string) error {
	if dev != "sim" && dev != "cuda" {
		return fmt.Errorf("--device %q: want sim or cuda", dev)
	}
	return nil
}

// checkWritable checks that an output file flag names a file that can be
// written, so that a run does not fail at its end for a bad path. It leaves
// an existing file unchanged and removes one it had to create.
func checkWritable(flag, path string) error {
	if path == "" {
		return nil
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o666)
	if err != nil {
		return fmt.Errorf("--%s: %w", flag, err)
	}
	f.Close()
	if errors.Is(statErr, os.ErrNotExist) {
		os.Remove(path)
	}
	return nil
}

// availableMemory is the host's available memory (tests replace it).
var availableMemory = hostmem.Available

// checkSimMemory refuses a simulated job of world ranks reducing tensors
// of bytes that would not fit in the host's available memory (see
// simjob.EstimateSimMemory); flags names the flags that set the sizes. Where
// the available memory cannot be read (no /proc/meminfo) nothing is
// refused.
func checkSimMemory(flags string, world int, bytes uint64) error {
	need := simjob.EstimateSimMemory(world, bytes)
	avail, err := availableMemory()
	if err != nil || need <= avail {
		return nil
	}
	return fmt.Errorf("%s: the simulator would need about %s of memory (about 9 x world x bytes), "+
		"but this machine has %s available (MemAvailable in %s); use fewer ranks or a smaller size",
		flags, gib(need), gib(avail), hostmem.Path)
}

// gib prints a memory size in GiB with one decimal.
func gib(n uint64) string {
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
