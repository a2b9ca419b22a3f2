package sim

import "fmt"

// HostCalls is a set of host calls of a device (see [Config.ContextSync]).
type HostCalls uint8

// The host calls [Config.ContextSync] can make synchronising.
const (
	// SyncDestroyStream: destroying a stream, which on a CUDA device that
	// frees the stream's pinned host memory waits for the context.
	SyncDestroyStream HostCalls = 1 << iota
	// SyncClose: closing the device, which frees everything it holds.
	SyncClose
)

// awaitContext blocks the calling host call of d while another device of
// the shared context is inside a synchronising call, as a CUDA driver call
// waits behind another thread's call that holds the context.
func (d *simDevice) awaitContext(opName string) error {
	w := d.w
	if !w.cfg.SharedContext || w.ctxHolder < 0 || w.ctxHolder == d.index {
		return nil
	}
	what := fmt.Sprintf("device %d %s behind device %d's %s, which holds the shared context until every kernel of the context has finished",
		d.index, opName, w.ctxHolder, w.ctxCall)
	return d.wait(what, func() bool { return w.ctxHolder < 0 }, nil)
}

// syncContext makes the host call opName of d, a member of call, wait for
// every kernel queued or running on any device of the shared context, and
// hold the context meanwhile (see [Config.ContextSync]).
func (d *simDevice) syncContext(call HostCalls, opName string) error {
	w := d.w
	if !w.cfg.SharedContext || w.cfg.ContextSync&call == 0 {
		return nil
	}
	if err := d.awaitContext(opName); err != nil {
		return err
	}
	w.ctxHolder, w.ctxCall = d.index, opName
	defer func() { w.ctxHolder, w.ctxCall = -1, "" }()
	d.record("context", "dev%d %s holds the shared context", d.index, opName)
	what := fmt.Sprintf("device %d %s for every kernel of the shared context to finish", d.index, opName)
	return d.wait(what, func() bool { return w.kernelsPending == 0 }, nil)
}
