package kernels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
)

func TestCheckLaunch(t *testing.T) {
	ar := AllReduceArgs{World: 4, PadBytes: 4 * 4 * 24}
	sig := SignalArgs{World: 8}
	for _, c := range []struct {
		kernel          string
		blocks, threads int
		args            any
		want            string // "" for success
	}{
		{OneShotAllReduce, 24, 512, ar, ""},
		{OneShotAllReduce, 25, 512, ar, "has 24 channels"},
		{OneShotAllReduce, 1, 1024, ar, "at most 512"},
		{TwoShotAllReduce, 24, 1024, ar, ""},
		{TwoShotAllReduce, 1, 2, ar, "one per rank"},
		{TwoShotAllReduce, 0, 32, ar, "launch of 0 blocks"},
		{TwoShotAllReduce, 1, 2048, ar, "1 to 1024 threads"},
		{LowLatencyAllReduce, 128, 512, ar, ""}, // its blocks use no pad channel
		{LowLatencyAllReduce, 1, 1024, ar, "at most 512"},
		{Barrier, 1, 8, sig, ""},
		{Barrier, 1, 4, sig, "one per rank"},
		{PutSignal, 1, 1, sig, ""},
		{PutSignal, 1, 1, &sig, ""},
		{PutSignal, 1, 1, ar, "want kernels.SignalArgs"},
		{"nope", 1, 1, sig, "unknown kernel"},
	} {
		err := fmt.Errorf("unknown kernel %q", c.kernel)
		if k, ok := Lookup(c.kernel); ok {
			err = k.CheckLaunch(c.blocks, c.threads, c.args)
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckLaunch(%s, %d, %d): %v", c.kernel, c.blocks, c.threads, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckLaunch(%s, %d, %d): error %v, want it to contain %q", c.kernel, c.blocks, c.threads, err, c.want)
		}
	}
}

// TestArgsConvertOnce: Args accepts the struct or a pointer to it, returns
// the struct's value after checking it, and refuses other types.
func TestArgsConvertOnce(t *testing.T) {
	k, _ := Lookup(Barrier)
	sig := SignalArgs{World: 2, PadPtrs: 0x1000, PadBytes: 64, Channel: 3}
	for _, in := range []any{sig, &sig} {
		v, err := k.Args(in)
		if err != nil {
			t.Fatalf("Args(%T): %v", in, err)
		}
		if got, ok := v.(SignalArgs); !ok || got != sig {
			t.Fatalf("Args(%T) = %#v, want the struct's value", in, v)
		}
	}
	if _, err := k.Args(with(sig, func(a *SignalArgs) { a.Channel = 8 })); err == nil || !strings.Contains(err.Error(), "channel 8 out of range") {
		t.Errorf("Args of a bad channel: %v", err)
	}
	if _, err := k.Args((*SignalArgs)(nil)); err == nil || !strings.Contains(err.Error(), "want kernels.SignalArgs") {
		t.Errorf("Args of a nil pointer: %v", err)
	}
}

// TestPads: every kernel names its launch's pads from either argument
// struct.
func TestPads(t *testing.T) {
	sig := SignalArgs{Rank: 1, World: 4, PadPtrs: 0x1000, PadBytes: 64}
	ar := AllReduceArgs{Rank: 2, World: 8, PadPtrs: 0x2000, PadBytes: 4096, DType: device.Float32}
	for _, c := range []struct {
		kernel string
		args   any
		want   Pads
	}{
		{PutSignal, sig, Pads{Rank: 1, World: 4, Ptrs: 0x1000, Bytes: 64}},
		{Barrier, &sig, Pads{Rank: 1, World: 4, Ptrs: 0x1000, Bytes: 64}},
		{TwoShotAllReduce, ar, Pads{Rank: 2, World: 8, Ptrs: 0x2000, Bytes: 4096}},
		{LowLatencyAllReduce, &ar, Pads{Rank: 2, World: 8, Ptrs: 0x2000, Bytes: 4096}},
	} {
		k, _ := Lookup(c.kernel)
		if got, err := k.Pads(c.args); err != nil || got != c.want {
			t.Errorf("%s: Pads = %+v, %v; want %+v", c.kernel, got, err, c.want)
		}
	}
	k, _ := Lookup(OneShotAllReduce)
	if _, err := k.Pads(sig); err == nil {
		t.Error("one-shot's Pads of signal arguments: no error")
	}
}

// TestRegisterRefusesDuplicatesAndGaps: a kernel registers once and whole.
func TestRegisterRefusesDuplicatesAndGaps(t *testing.T) {
	for name, d := range map[string]Descriptor[SignalArgs]{
		"duplicate": {Name: Barrier, Check: func(SignalArgs) error { return nil },
			Shape: func(ShapeParams) (int, int) { return 1, 1 }, Run: func(Block, SignalArgs) error { return nil }},
		"no body": {Name: "test_kernel", Check: func(SignalArgs) error { return nil },
			Shape: func(ShapeParams) (int, int) { return 1, 1 }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			Register(d)
		}()
	}
	if _, ok := Lookup("test_kernel"); ok {
		t.Error("a refused descriptor was registered")
	}
}

// TestCollectiveKernels: fault hooks tell collectives from signal
// primitives by the descriptor.
func TestCollectiveKernels(t *testing.T) {
	for _, n := range []string{Barrier, LowLatencyAllReduce, OneShotAllReduce, PutSignal, TwoShotAllReduce, WaitSignal} {
		k, _ := Lookup(n)
		want := n == OneShotAllReduce || n == TwoShotAllReduce || n == LowLatencyAllReduce
		if k.Collective != want {
			t.Errorf("%s: Collective = %v, want %v", n, k.Collective, want)
		}
	}
}
