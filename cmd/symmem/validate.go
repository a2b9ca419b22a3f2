package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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

// checkCount checks an integer flag against [least, most].
func checkCount(flag string, n, least, most int) error {
	if n < least || n > most {
		return fmt.Errorf("--%s %d: want %d..%d", flag, n, least, most)
	}
	return nil
}

// checkList checks a list flag: an empty list is refused (there is no "all"
// shorthand), naming what the flag takes.
func checkList(flag string, list []string, want string) error {
	if len(list) == 0 {
		return fmt.Errorf("--%s: empty list: want one or more of %s", flag, want)
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

// lenientValue is a flag's value that records a value it cannot parse
// instead of failing the command line at once, so that a command can
// report every bad flag together (see [collectFlagErrors]).
type lenientValue struct {
	pflag.Value
	name string
	err  error
}

// Set implements pflag.Value: a value that does not parse is recorded,
// leaving the flag's value as it was.
func (v *lenientValue) Set(s string) error {
	v.err = nil
	if err := v.Value.Set(s); err != nil {
		v.err = fmt.Errorf("--%s %q: want %s", v.name, s, wantOfType(v.Type()))
	}
	return nil
}

// wantOfType says what a flag of pflag type typ takes.
func wantOfType(typ string) string {
	switch typ {
	case "int", "int64", "int32":
		return "an integer"
	case "uint64", "uint", "uint32":
		return "a whole number >= 0"
	case "duration":
		return "a duration such as 30s or 1m"
	case "bool":
		return "true or false"
	}
	return "a " + typ
}

// collectFlagErrors makes the local flags of cmd record the values they
// cannot parse; [flagErrors] returns them, to be reported with the
// command's other checks.
func collectFlagErrors(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		f.Value = &lenientValue{Value: f.Value, name: f.Name}
	})
}

// flagErrors returns an error for each flag of cmd given a value it could
// not parse, in the order of the flags' names.
func flagErrors(cmd *cobra.Command) []error {
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if v, ok := f.Value.(*lenientValue); ok && v.err != nil {
			errs = append(errs, v.err)
		}
	})
	return errs
}
