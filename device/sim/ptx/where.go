package ptx

// Line is the source line of the instruction the thread is executing (the
// one that called into its [Env], during the call), or last executed; 0
// before it started and after it exited.
func (t *Thread) Line() int {
	if len(t.frames) == 0 {
		return 0
	}
	f := &t.frames[len(t.frames)-1]
	if f.pc == 0 {
		return 0
	}
	return f.fn.code[f.pc-1].line
}
