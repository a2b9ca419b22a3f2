package fuzz

import (
	"testing"
	"fmt"
)

func runs(o Outcome) []int {
	var r []int
	for _, e := range o.Events { if e.Kind == "run" { r = append(r, e.Task) } }
	return r
}

func TestProbe2(t *testing.T) {
	g := NewGenerator(Config{Seeds: 1, Strategy: "portfolio", Faults: FaultsAll})
	c, _ := g.Case(2)
	o, _ := RunTraced(c)
	base := c
	base.Strategy = StrategyReplay
	sched := o.Schedule
	a := runs(o)
	for _, k := range []int{400, 420} {
		cc := base
		cc.Schedule = append(append(Schedule{}, sched[:k]...), sched[k+1:]...)
		r, _ := RunTraced(cc)
		b := runs(r)
		same := 0
		for i := range min(len(a), len(b)) { if a[i] == b[i] { same++ } }
		first := -1
		for i := range min(len(a), len(b)) { if a[i] != b[i] { first = i; break } }
		fmt.Println("drop", k, "at step", sched[k].Step, "len", len(a), len(b), "same positions", same, "first diff", first, r.Failure != nil)
		if first >= 0 { fmt.Println(a[first-3:first+12]); fmt.Println(b[first-3:first+12]) }
	}
}
