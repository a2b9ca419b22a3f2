// Package minimize holds the search for a smaller failing input that the
// shrinkers of package fuzz and package ptxcheck share: bisection of a
// prefix and delta debugging.
package minimize

// ShortestPrefix returns the shortest prefix of items for which fails
// holds, by bisection (fails(items) is assumed, and taken to be monotone).
func ShortestPrefix[S ~[]T, T any](items S, fails func(S) bool) S {
	lo, hi := 0, len(items) // fails(items[:hi]) holds
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(items[:mid:mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return items[:hi:hi]
}

// DDMin is Zeller's delta debugging minimisation: it returns a subsequence
// of items for which fails still holds and from which no single chunk at
// the finest granularity tried can be removed. fails(items) is assumed.
func DDMin[S ~[]T, T any](items S, fails func(S) bool) S {
	if len(items) == 0 {
		return items
	}
	if fails(items[:0:0]) {
		return items[:0:0]
	}
	n := 2
	for len(items) >= 2 {
		chunk := (len(items) + n - 1) / n
		reduced := false
		// Later chunks first: removing them perturbs the run least.
		for end := len(items); end > 0; end -= chunk {
			start := max(end-chunk, 0)
			rest := append(append(make(S, 0, len(items)-(end-start)), items[:start]...), items[end:]...)
			if fails(rest) {
				items = rest
				n = max(n-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if n >= len(items) {
				break
			}
			n = min(2*n, len(items))
		}
	}
	if len(items) == 1 && fails(items[:0:0]) {
		return items[:0:0]
	}
	return items
}
