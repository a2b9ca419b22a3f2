package sim

// PooledBytes returns how many bytes of the Go heap the process-wide cache
// of recycled allocations holds: memory that stays live between
// simulations by design (at most 128 MiB), which a leak check of the host
// heap leaves out. Where allocations are mapped outside the heap (Linux),
// it holds none.
func PooledBytes() uint64 {
	if mapped {
		return 0
	}
	return hostRegions.warmBytes()
}
