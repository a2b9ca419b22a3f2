package kernels

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/symmem/symmem/device"
)

func TestEntry(t *testing.T) {
	base := AllReduceArgs{World: 4, DType: device.BFloat16, Offset: 64, Numel: 1024}
	for _, c := range []struct {
		name   string
		kernel string
		edit   func(*AllReduceArgs)
		want   string
	}{
		{"two-shot bf16 w4", TwoShotAllReduce, nil, "two_shot_all_reduce_bf16_w4"},
		{"one-shot f32 w2", OneShotAllReduce, func(a *AllReduceArgs) { a.DType, a.World = device.Float32, 2 }, "one_shot_all_reduce_f32_w2"},
		{"f16 w8", TwoShotAllReduce, func(a *AllReduceArgs) { a.DType, a.World = device.Float16, 8 }, "two_shot_all_reduce_f16_w8"},
		{"world 3", TwoShotAllReduce, func(a *AllReduceArgs) { a.World = 3 }, TwoShotAllReduce},
		{"world 16", OneShotAllReduce, func(a *AllReduceArgs) { a.World = 16 }, OneShotAllReduce},
		{"8-byte offset", TwoShotAllReduce, func(a *AllReduceArgs) { a.Offset = 8 }, TwoShotAllReduce},
		{"8-byte size", TwoShotAllReduce, func(a *AllReduceArgs) { a.Numel = 1020 }, TwoShotAllReduce},
		{"empty", TwoShotAllReduce, func(a *AllReduceArgs) { a.Numel = 0 }, TwoShotAllReduce},
		{"bad dtype", TwoShotAllReduce, func(a *AllReduceArgs) { a.DType = 9 }, TwoShotAllReduce},
		{"overflowing size", TwoShotAllReduce, func(a *AllReduceArgs) { a.Numel = 1 << 63 }, TwoShotAllReduce},
		{"low latency", LowLatencyAllReduce, nil, LowLatencyAllReduce},
		{"barrier", Barrier, nil, Barrier},
	} {
		a := base
		if c.edit != nil {
			c.edit(&a)
		}
		if got := Entry(c.kernel, a); got != c.want {
			t.Errorf("%s: Entry = %q, want %q", c.name, got, c.want)
		}
		if got := Entry(c.kernel, &a); got != c.want {
			t.Errorf("%s (pointer args): Entry = %q, want %q", c.name, got, c.want)
		}
	}
	if got := Entry(TwoShotAllReduce, SignalArgs{}); got != TwoShotAllReduce {
		t.Errorf("signal args: Entry = %q, want the generic entry", got)
	}
}

// TestEntriesMatchSource checks that every name Entry can return is an
// entry point of the CUDA source, and that the source has no other
// specialised entries.
func TestEntriesMatchSource(t *testing.T) {
	src, err := os.ReadFile("cuda/kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	var inSource []string
	for _, m := range regexp.MustCompile(`(?m)^SYMMEM_ENTRY\((\w+),`).FindAllStringSubmatch(string(src), -1) {
		inSource = append(inSource, m[1])
	}
	var fromGo []string
	for _, e := range Entries() {
		if !slices.Contains(Names(), e) {
			fromGo = append(fromGo, e)
		}
	}
	sort.Strings(inSource)
	sort.Strings(fromGo)
	if len(inSource) != len(fromGo) {
		t.Fatalf("cuda/kernels.cu defines %d specialised entries %v; Entry names %d: %v", len(inSource), inSource, len(fromGo), fromGo)
	}
	for i := range inSource {
		if inSource[i] != fromGo[i] {
			t.Errorf("entry %d: source %q, Entry %q", i, inSource[i], fromGo[i])
		}
	}
}
