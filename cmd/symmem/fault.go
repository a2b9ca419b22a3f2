package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
)

// faultKillEnv is the testing aid of `symmem allreduce` under `symmem
// launch`: SYMMEM_FAULT_KILL=R:POINT makes rank R SIGKILL itself at POINT.
const faultKillEnv = "SYMMEM_FAULT_KILL"

// Points where a rank can kill itself.
const (
	faultAtRendezvous = "rendezvous" // before the rank's program starts (so before the rendezvous)
	faultAtAllReduce  = "allreduce"  // after the rendezvous, right before the all-reduce kernel's launch
)

// faultKill is a parsed SYMMEM_FAULT_KILL.
type faultKill struct {
	rank  int
	point string
}

// parseFaultKill reads SYMMEM_FAULT_KILL from getenv; ok is false when it
// is unset.
func parseFaultKill(getenv func(string) string) (f faultKill, ok bool, err error) {
	v := getenv(faultKillEnv)
	if v == "" {
		return faultKill{}, false, nil
	}
	r, point, found := strings.Cut(v, ":")
	n, nerr := strconv.Atoi(r)
	if !found || nerr != nil || n < 0 || (point != faultAtRendezvous && point != faultAtAllReduce) {
		return faultKill{}, true, fmt.Errorf("%s=%q: want RANK:%s or RANK:%s", faultKillEnv, v, faultAtRendezvous, faultAtAllReduce)
	}
	return faultKill{rank: n, point: point}, true, nil
}

// apply arms the fault for this process's rank self: it returns program
// and dev, wrapped so that rank f.rank kills itself at f.point.
func (f faultKill) apply(self int, program rank.Program, dev device.Device) (rank.Program, device.Device) {
	if self != f.rank {
		return program, dev
	}
	what := fmt.Sprintf("%s=%d:%s", faultKillEnv, f.rank, f.point)
	if f.point == faultAtRendezvous {
		return func(r *rank.Rank) error { return killSelf(what) }, dev
	}
	return program, &killOnAllReduce{Device: dev, what: what}
}

// killOnAllReduce is a device whose first all-reduce kernel launch kills
// the process instead.
type killOnAllReduce struct {
	device.Device
	what string
}

// Launch implements device.Device.
func (d *killOnAllReduce) Launch(s device.Stream, l device.Launch) error {
	if k, ok := kernels.Lookup(l.Kernel); ok && k.Collective {
		return killSelf(d.what)
	}
	return d.Device.Launch(s, l)
}

// killSelf sends SIGKILL to this process. It returns only if the process
// survives it.
func killSelf(what string) error {
	fmt.Fprintf(os.Stderr, "symmem: %s: rank process %d kills itself\n", what, os.Getpid())
	if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("%s: SIGKILL: %w", what, err)
	}
	time.Sleep(10 * time.Second)
	return fmt.Errorf("%s: still alive 10s after SIGKILL", what)
}
