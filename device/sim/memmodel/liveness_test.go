package memmodel

import (
	"strings"
	"testing"
)

// spinner spins until it reads a nonzero f with the given semantics.
func spinner(sem Sem, cta int) Thread {
	scope := GPU
	if sem == Weak {
		scope = Sys
	}
	return Thread{Name: "spinner", CTA: cta, Code: []Inst{
		{Op: OpLoad, Loc: "f", Dst: "r0", Sem: sem, Scope: scope, Line: 1},
		{Op: OpBranch, Cond: "eq", Args: []Operand{{Reg: "r0"}, {Imm: 0}}, Target: 0, Line: 2},
	}}
}

func storeF(v int64, sem Sem) Inst {
	scope := GPU
	if sem == Weak {
		scope = Sys
	}
	return Inst{Op: OpStore, Loc: "f", Args: []Operand{{Imm: v}}, Sem: sem, Scope: scope}
}

func TestTerminates(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *Program
		ends bool
		// hang is the states of the threads in the hang found.
		hang string
	}{
		{"spin on a flag nobody sets", &Program{Init: map[string]int64{"f": 0},
			Threads: []Thread{spinner(Relaxed, 0)}}, false, "spins"},
		{"spin on a flag another thread sets", &Program{Init: map[string]int64{"f": 0},
			Threads: []Thread{spinner(Relaxed, 0), {Name: "setter", Code: []Inst{storeF(1, Relaxed)}}}}, true, ""},
		{"weak spin on a flag another thread sets", &Program{Init: map[string]int64{"f": 0},
			Threads: []Thread{spinner(Weak, 0), {Name: "setter", Code: []Inst{storeF(1, Weak)}}}}, true, ""},
		{"spin on a flag set and reset", &Program{Init: map[string]int64{"f": 0},
			Threads: []Thread{spinner(Relaxed, 0), {Name: "setter", Code: []Inst{storeF(1, Relaxed), storeF(0, Relaxed)}}}}, false, "spins ends"},
		// The setter sets f only after a barrier the spinner never
		// reaches: both are stuck.
		{"setter behind a barrier the spinner holds up", &Program{Init: map[string]int64{"f": 0},
			Threads: []Thread{
				{Name: "spinner", Code: append(spinner(Relaxed, 0).Code, Inst{Op: OpBarrier, Instance: Operand{Imm: 1}})},
				{Name: "setter", Code: []Inst{{Op: OpBarrier, Instance: Operand{Imm: 1}, Line: 9}, storeF(1, Relaxed)}},
			}}, false, "spins waits"},
		// The same in two CTAs: the barrier does not wait for the spinner.
		{"setter behind a barrier of its own CTA", &Program{Init: map[string]int64{"f": 0},
			Threads: []Thread{
				{Name: "spinner", Code: append(spinner(Relaxed, 0).Code, Inst{Op: OpBarrier, Instance: Operand{Imm: 1}})},
				{Name: "setter", CTA: 1, Code: []Inst{{Op: OpBarrier, Instance: Operand{Imm: 1}}, storeF(1, Relaxed)}},
			}}, true, ""},
		{"barrier count above the arrivals", &Program{Init: map[string]int64{"f": 0},
			Threads: []Thread{
				{Name: "a", Code: []Inst{{Op: OpBarrier, Instance: Operand{Imm: 1}, Quorum: &Operand{Imm: 3}}}},
				{Name: "b", Code: []Inst{{Op: OpBarrier, Instance: Operand{Imm: 1}, Quorum: &Operand{Imm: 3}}}},
			}}, false, "waits waits"},
		{"barrier count met", &Program{Init: map[string]int64{"f": 0},
			Threads: []Thread{
				{Name: "a", Code: []Inst{{Op: OpBarrier, Instance: Operand{Imm: 1}, Quorum: &Operand{Imm: 2}}}},
				{Name: "b", Code: []Inst{{Op: OpBarrier, Instance: Operand{Imm: 1}, Quorum: &Operand{Imm: 2}}}},
			}}, true, ""},
		// Barriers named by registers the threads never write: ids 1 and
		// 2, so neither waits for the other.
		{"barriers named by different registers", &Program{Init: map[string]int64{"f": 0},
			Threads: []Thread{
				{Name: "a", Regs: map[string]int64{"r1": 1}, Code: []Inst{{Op: OpBarrier, Instance: Operand{Imm: 1}, ID: &Operand{Reg: "r1"}}}},
				{Name: "b", Regs: map[string]int64{"r1": 2}, Code: []Inst{
					{Op: OpBarrier, Instance: Operand{Imm: 1}, ID: &Operand{Reg: "r1"}},
					{Op: OpBarrier, Instance: Operand{Imm: 3}}, // b alone at 3
				}},
			}}, true, ""},
		// Two barriers in opposite orders: each thread waits for the other.
		{"barriers in opposite orders", &Program{Init: map[string]int64{"f": 0},
			Threads: []Thread{
				{Name: "a", Code: []Inst{{Op: OpBarrier, Instance: Operand{Imm: 0}}, {Op: OpBarrier, Instance: Operand{Imm: 1}}}},
				{Name: "b", Code: []Inst{{Op: OpBarrier, Instance: Operand{Imm: 1}}, {Op: OpBarrier, Instance: Operand{Imm: 0}}}},
			}}, false, "waits waits"},
		// A spin that ends, then a counting loop longer than the rounds a
		// spin is followed: the count is the plain runs' business.
		{"spin, then a long counting loop", &Program{Init: map[string]int64{"f": 0},
			Threads: []Thread{
				{Name: "spinner", Code: append(spinner(Relaxed, 0).Code,
					Inst{Op: OpLocal, AtomOp: "add", Dst: "r1", Args: []Operand{{Reg: "r1"}, {Imm: 1}}},
					Inst{Op: OpBranch, Cond: "lt", Args: []Operand{{Reg: "r1"}, {Imm: 100}}, Target: 2})},
				{Name: "setter", Code: []Inst{storeF(1, Relaxed)}},
			}}, true, ""},
		{"no loop", &Program{Init: map[string]int64{"f": 0},
			Threads: []Thread{{Name: "setter", Code: []Inst{storeF(1, Relaxed)}}}}, true, ""},
	} {
		res, err := Terminates(c.p, Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Ends != c.ends {
			t.Errorf("%s: ends = %v, want %v (hang %v)", c.name, res.Ends, c.ends, res.Hang)
			continue
		}
		var states []string
		for _, te := range res.Hang {
			states = append(states, te.State)
		}
		if got := strings.Join(states, " "); got != c.hang {
			t.Errorf("%s: hang %q, want %q", c.name, got, c.hang)
		}
		if !c.ends && c.hang[:5] == "spins" && (len(res.Hang[0].Reads) == 0 || res.Hang[0].Reads[0] != (SpinRead{Loc: "f", Val: 0})) {
			t.Errorf("%s: the spinner's round reads %v, want f=0", c.name, res.Hang[0].Reads)
		}
	}
}

// TestTerminatesRefusesBusyLoops: a loop that writes on every round is not
// a spin, and one whose state never repeats is not followed to its end:
// their termination is refused, not guessed.
func TestTerminatesRefusesBusyLoops(t *testing.T) {
	for name, code := range map[string][]Inst{
		"writes every round": {
			{Op: OpStore, Loc: "g", Args: []Operand{{Imm: 1}}, Scope: Sys},
			{Op: OpLoad, Loc: "f", Dst: "r0", Sem: Relaxed, Scope: GPU},
			{Op: OpBranch, Cond: "eq", Args: []Operand{{Reg: "r0"}, {Imm: 0}}, Target: 0, Line: 3},
		},
		"counts forever": {
			{Op: OpLoad, Loc: "f", Dst: "r0", Sem: Relaxed, Scope: GPU},
			{Op: OpLocal, AtomOp: "add", Dst: "r1", Args: []Operand{{Reg: "r1"}, {Imm: 1}}},
			{Op: OpJump, Target: 1, Line: 3},
		},
	} {
		p := &Program{Init: map[string]int64{"f": 0, "g": 0}, Threads: []Thread{{Name: "P0", Code: code}}}
		_, err := Terminates(p, Options{})
		if err == nil || !strings.Contains(err.Error(), "P0 line 3") || !strings.Contains(err.Error(), "not decided") {
			t.Errorf("%s: Terminates = %v, want a refusal naming P0 line 3", name, err)
		}
	}
}
