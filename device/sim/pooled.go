package sim

// PooledBytes returns how many bytes of the Go heap the process-wide
// cache of recycled allocations holds: memory that stays live between
// simulations by design (at most 128 MiB; none where the cache's regions
// are mappings of their own, as on Linux), which a leak check of the host
// heap leaves out.
func PooledBytes() uint64 { return regions.heapBytes() }
