package sim

// PooledBytes returns how many bytes the process-wide cache of recycled
// allocations holds: memory that stays live between simulations by design
// (at most 128 MiB), which a leak check of the host heap leaves out.
func PooledBytes() uint64 { return regions.bytes() }
