package sim

import "github.com/symmem/symmem/device"

// PooledBytes returns how many bytes the process-wide pool of recycled
// granules holds: memory that stays live between simulations by design
// (at most 128 MiB), which a leak check of the host heap leaves out.
func PooledBytes() uint64 {
	return uint64(granules.Len()) * device.Granularity
}
