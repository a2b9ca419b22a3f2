package ptxcheck

import (
	"testing"
)

// vllmShape loads the byte-flag one-stage example (racy: its flag bytes
// and flag word are mixed-size strong accesses) at the launch shape of a
// vLLM custom all-reduce: 36 blocks of 512 threads over 8,192 elements
// at world 4, its three back-to-back calls as the example has them
// (examples/kernels/onestage_byteflags_vllm_shape.json).
func vllmShape(tb testing.TB) (*Program, *Source) {
	tb.Helper()
	p, err := LoadHarness("../examples/kernels/onestage_byteflags_vllm_shape.json")
	if err != nil {
		tb.Fatal(err)
	}
	return p, load(tb, p.PTX)
}

// BenchmarkCheckRacyVLLMShape is the time per seed of a check of a racy
// kernel at a real launch shape (world 4, 36 x 512 threads, three calls),
// findings collected as a check collects them.
func BenchmarkCheckRacyVLLMShape(b *testing.B) {
	p, src := vllmShape(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := RunProgram(p, src, Options{Worlds: []int{4}, Seeds: 1, FirstSeed: uint64(i)})
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Findings) == 0 {
			b.Fatal("the racy kernel found nothing")
		}
	}
}
