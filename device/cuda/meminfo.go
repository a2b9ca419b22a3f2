package cuda

// MemInfo reports the device's free and total memory (cuMemGetInfo),
// implementing device.MemInfo.
func (g *gpu) MemInfo() (free, total uint64, err error) {
	err = g.do(opf("read memory info"), func() error {
		return g.drv.check("cuMemGetInfo", g.drv.cuMemGetInfo(&free, &total))
	})
	return free, total, err
}
