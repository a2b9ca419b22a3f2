package ptx

// AccessUnit is the element size in bytes of the memory instruction the
// thread is executing (an ld, st or atom): a vector access (.v2, .v4) is
// that many accesses of this size each, as the memory model has it.
func (t *Thread) AccessUnit() int {
	if len(t.frames) == 0 {
		return 0
	}
	f := &t.frames[len(t.frames)-1]
	if f.pc == 0 {
		return 0
	}
	return f.fn.code[f.pc-1].t.size()
}
