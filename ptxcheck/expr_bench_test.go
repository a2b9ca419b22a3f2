package ptxcheck

import "testing"

// BenchmarkExprCheckValue is the evaluation of a check's expected value
// per element: vLLM's f32 and bf16 harnesses' at world 4.
func BenchmarkExprCheckValue(b *testing.B) {
	for _, src := range []string{"sum_ranks(rank*1000 + i + iter)", "sum_ranks(rank + (i % 8) + iter)"} {
		b.Run(src, func(b *testing.B) {
			sc := newScope([]string{"packs"})
			x, err := sc.expr(src)
			if err != nil {
				b.Fatal(err)
			}
			f := sc.frame()
			f.bind(slotWorld, 4)
			f.bind(slotRank, 1)
			f.bind(slotIter, 2)
			var s float64
			for i := 0; b.Loop(); i++ {
				f.bind(slotI, float64(i%8192))
				v, err := x.eval(f)
				if err != nil {
					b.Fatal(err)
				}
				s += v
			}
			if s == 0 {
				b.Fatal("no sum")
			}
		})
	}
}
