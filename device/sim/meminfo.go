package sim

// MemInfo reports the device's free and total physical memory (the
// configured limit), implementing device.MemInfo.
func (d *simDevice) MemInfo() (free, total uint64, err error) {
	total = d.w.cfg.MemoryLimit
	return total - d.memUsed, total, nil
}

// OpenFDs is the number of fds open in the device's simulated process,
// implementing device.FDCounter.
func (d *simDevice) OpenFDs() int { return len(d.w.fds[d.index]) }
