package ptx

// Line is the source line of the instruction the thread is executing (the
// one that called into its [Env], during the call), or of the last one
// that called into Env or stopped at a barrier; 0 before it started and
// after it exited. The thread notes it as it executes such an
// instruction: Env's hot paths ask for it at every access.
func (t *Thread) Line() int {
	if len(t.frames) == 0 {
		return 0
	}
	return t.line
}
