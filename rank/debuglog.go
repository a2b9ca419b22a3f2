package rank

import (
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank/ipc"
)

// Debug logs of what a rank does: rendezvous, allocations, algorithm
// choices, collective launches and timeouts. Every line carries the rank
// (the rank's logger adds it) and, where there is one, the group.

// logAlloc logs a symmetric allocation.
func (r *Rank) logAlloc(size uint64, id string, p device.Ptr) {
	r.log.Debug("alloc", zap.Uint64("bytes", size), zap.String("id", id), zap.Stringer("ptr", p))
}

// logFree logs the release of a symmetric allocation.
func (r *Rank) logFree(p device.Ptr) {
	r.log.Debug("free", zap.Stringer("ptr", p))
}

// logRendezvous logs a step of the rendezvous of a buffer of bufferSize
// bytes on group.
func (r *Rank) logRendezvous(msg, group string, members []int, bufferSize uint64) {
	r.log.Debug(msg, zap.String("group", group), zap.Ints("members", members), zap.Uint64("buffer_bytes", bufferSize))
}

// logLaunch logs a kernel launch of a collective or signal operation on
// group.
func (r *Rank) logLaunch(group string, l device.Launch) {
	if ce := r.log.Check(zap.DebugLevel, "launch"); ce != nil {
		fields := []zap.Field{zap.String("group", group), zap.String("kernel", l.Kernel), zap.Int("blocks", l.Blocks), zap.Int("threads", l.Threads)}
		if a, ok := l.Args.(kernels.AllReduceArgs); ok {
			fields = append(fields, zap.Uint64("numel", a.Numel), zap.Stringer("dtype", a.DType), zap.Stringer("op", a.Op))
		}
		ce.Write(fields...)
	}
}

// logFailure logs at debug level that what failed on group, as a timeout
// when err is one (a kernel's signal wait, a Store wait, an fd exchange, a
// scheduler wait).
func (r *Rank) logFailure(what, group string, err error) {
	if err == nil {
		return
	}
	msg := what + " failed"
	if isTimeout(err) {
		msg = what + " timed out"
	}
	r.log.Debug(msg, zap.String("group", group), zap.Error(err))
}

// isTimeout reports whether err comes from a wait that ran out of time.
func isTimeout(err error) bool {
	var (
		kernel  *device.KernelError
		sched   *actor.TimeoutError
		fds     *ipc.TimeoutError
		missing *store.MissingKeysError
	)
	if errors.As(err, &kernel) {
		return strings.Contains(kernel.Reason, "timed out") || strings.Contains(kernel.Reason, "did not arrive")
	}
	return errors.As(err, &sched) || errors.As(err, &fds) || errors.As(err, &missing)
}
