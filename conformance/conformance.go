// Package conformance holds self-checking rank programs: the reference
// test table of symmetric memory and all-reduce, signals, bounds, groups,
// IntraNodeComm, bad inputs, simulator conformance, captured graphs and
// leak checks. Every
// rank checks what it can see by itself (inputs are seeded, so each rank
// knows the expected result), so the same cases run on the simulator, on
// GPUs in one process and on GPUs with one process per rank.
package conformance

import (
	"fmt"
	"regexp"
)

import "github.com/symmem/symmem/rank"

// Case is one self-checking program.
type Case struct {
	Name     string
	MinWorld int  // smallest world the case makes sense on
	Even     bool // needs an even world size
	Program  rank.Program
}

// Fits reports whether the case runs on world ranks.
func (c Case) Fits(world int) bool {
	return world >= c.MinWorld && (!c.Even || world%2 == 0)
}

// Options tune the cases.
type Options struct {
	// Cycles of alloc/rendezvous/all-reduce/free in the leak case.
	Cycles int
	// Seed of the inputs.
	Seed uint64
}

// Cases returns every case.
func Cases(o Options) []Case {
	if o.Cycles == 0 {
		o.Cycles = 50
	}
	return []Case{
		{Name: "allreduce-table", MinWorld: 1, Program: allReduceTable(o.Seed)},
		{Name: "signals-42-43", MinWorld: 2, Program: signalsCarryData},
		{Name: "signal-timeout", MinWorld: 2, Program: signalTimeout},
		{Name: "signal-bounds", MinWorld: 1, Program: signalBounds},
		{Name: "pad-isolation", MinWorld: 1, Program: padIsolation},
		{Name: "groups", MinWorld: 2, Even: true, Program: oneAllocationManyGroups},
		{Name: "subgroup-forms", MinWorld: 2, Program: subgroupForms(o.Seed)},
		{Name: "intra-node-comm", MinWorld: 2, Program: intraNodeUsage(o.Seed)},
		{Name: "bad-inputs", MinWorld: 1, Program: badInputs},
		{Name: "alloc-id", MinWorld: 1, Program: persistentAllocID},
		{Name: "sim-conformance", MinWorld: 1, Program: simConformance(o.Seed)},
		{Name: "graphs", MinWorld: 1, Program: graphs(o.Seed)},
		{Name: "leaks", MinWorld: 1, Program: leaks(o.Cycles)},
	}
}

// Select returns the cases whose name matches pattern and that fit world.
func Select(o Options, pattern string, world int) ([]Case, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("case pattern %q: %w", pattern, err)
	}
	var out []Case
	for _, c := range Cases(o) {
		if re.MatchString(c.Name) && c.Fits(world) {
			out = append(out, c)
		}
	}
	return out, nil
}
