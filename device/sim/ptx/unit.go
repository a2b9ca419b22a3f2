package ptx

// AccessUnit is the element size in bytes of the ld or st instruction
// whose access of global memory the thread's Env serves ([Env].Load,
// [Env].Store): a vector access (.v2, .v4) is that many accesses of this
// size each, as the memory model has it. It is 0 before the thread's first
// such access.
func (t *Thread) AccessUnit() int { return t.unit }

// NonCoherent reports whether the ld whose access of global memory the
// thread's Env serves ([Env].Load) is ld.global.nc: a load through the
// non-coherent (read-only) path, valid only of bytes that nothing writes
// while the kernel runs.
func (t *Thread) NonCoherent() bool { return t.nc }
