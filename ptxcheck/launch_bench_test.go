package ptxcheck

import (
	"os"
	"testing"
	"time"
)

// benchHarness runs a harness of examples/peers over seeds seeds a
// benchmark iteration (one run at a time, no shrinking) with vars
// replaced, and reports the lane-instructions its PTX threads executed a
// second, the share of them warps executed in lockstep and the time a
// seed took.
func benchHarness(b *testing.B, name string, vars map[string]Expr, seeds int) {
	if _, err := os.Stat(peersDir); err != nil {
		b.Skipf("%s is absent: %v", peersDir, err)
	}
	prog, err := LoadHarness("../examples/peers/" + name + ".json")
	if err != nil {
		b.Fatal(err)
	}
	src, err := LoadFile(prog.PTX)
	if err != nil {
		b.Fatal(err)
	}
	var insts, lockstep uint64
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		rep, err := RunProgram(prog, src, Options{Seeds: seeds, Vars: vars, Jobs: 1})
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Runs) != seeds {
			b.Fatalf("%d runs, want %d", len(rep.Runs), seeds)
		}
		for _, r := range rep.Runs {
			insts += r.Instructions
			lockstep += r.InLockstep
		}
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(insts)/elapsed.Seconds(), "lane-inst/s")
	b.ReportMetric(100*float64(lockstep)/float64(max(insts, 1)), "%lockstep")
	b.ReportMetric(elapsed.Seconds()/float64(b.N*seeds), "s/seed")
}

// BenchmarkCheckVLLM is a realistic check case: vLLM's one-stage and
// two-stage all-reduce kernels of ../shared/peers (f32 and bf16, three
// calls each) at world 4 on 8,192 f32 elements a rank (2,048 packs of 16
// bytes: grids of 4 x 512 threads), two seeds, the race detector on.
// Their findings (docs/peers.md: the harness's host writes race with the
// peers' loads) are the harnesses', not the kernels'.
func BenchmarkCheckVLLM(b *testing.B) {
	for _, h := range []string{"vllm_1stage_w4", "vllm_2stage_w4"} {
		b.Run(h, func(b *testing.B) { benchHarness(b, h, map[string]Expr{"packs": "2048"}, 2) })
	}
}
