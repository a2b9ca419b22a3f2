package bench

import (
	"slices"
	"time"
)

// Median returns the median of xs (the mean of the middle two for an even
// count), 0 for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// Mean returns the arithmetic mean of xs, 0 for none.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// BusFactor is the ratio of bus bandwidth to algorithm bandwidth of an
// all-reduce over world ranks: 2(W-1)/W, the fraction of the data each rank
// must send and receive with an optimal algorithm (0 for a single rank).
func BusFactor(world int) float64 {
	if world < 1 {
		return 0
	}
	return 2 * float64(world-1) / float64(world)
}

// AlgBW is the algorithm bandwidth in GB/s (1e9 bytes per second) of
// reducing bytes in us microseconds: 0 when us is not positive.
func AlgBW(bytes uint64, us float64) float64 {
	if !(us > 0) {
		return 0
	}
	return float64(bytes) / us / 1e3
}

// BusBW is the bus bandwidth in GB/s: AlgBW times BusFactor(world).
func BusBW(bytes uint64, us float64, world int) float64 {
	return AlgBW(bytes, us) * BusFactor(world)
}

// Micros converts a duration to float microseconds.
func Micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
