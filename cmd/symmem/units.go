package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseBytes parses a byte count such as 8196, 64KiB, 1MiB, 2GiB, 4K or 1M
// (K, M and G are binary multiples too).
func parseBytes(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
	} {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("byte size %q: want a count such as 8196, 64KiB or 1MiB", s)
	}
	if n > (1<<63)/mult {
		return 0, fmt.Errorf("byte size %q is too large", s)
	}
	return n * mult, nil
}

// formatBytes prints n the way parseBytes reads it.
func formatBytes(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.FormatUint(n, 10)
}
