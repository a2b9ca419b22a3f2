package bench

import (
	"os"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

func TestScratch(t *testing.T) {
	p := Plan{Sizes: []uint64{1024, 64 << 10, 1 << 20}, DTypes: []device.DType{device.BFloat16}, Ops: []device.ReduceOp{device.Sum},
		Algos: []workload.Algo{workload.OneShot, workload.TwoShot, workload.Auto}, Warmup: 1, Iters: 2, Loops: 3, Seed: 1, Check: true}
	var rows []Row
	res, err := rank.Simulate(rank.SimConfig{World: 4, Seed: 1}, Program(p, func(r Row) { rows = append(rows, r) }))
	if err != nil { t.Fatal(err) }
	if err := res.Err(); err != nil { t.Fatal(err) }
	rep := Report{Tool: "symmem bench", Device: "sim", World: 4, Timer: TimerHost, Simulated: true, Warmup: 1, Iters: 2, Loops: 3, Rows: rows}
	WriteTable(os.Stdout, rep)
	if err := SavePlot("/tmp/bscratch/p.png", "", rep); err != nil { t.Fatal(err) }
}
