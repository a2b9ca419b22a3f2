package memmodel

import (
	"slices"
	"strings"
	"testing"
)

// TestProxies checks the proxy rules on programs whose verdicts follow
// from the PTX ISA's proxy rules: an access through another proxy, or
// through another virtual alias, sees an earlier write only across the
// right proxy fences.
func TestProxies(t *testing.T) {
	store := func(loc string, p Proxy) Inst {
		return Inst{Op: OpStore, Loc: loc, Args: []Operand{{Imm: 1}}, Scope: Sys, Proxy: p}
	}
	load := func(loc string, p Proxy) Inst {
		return Inst{Op: OpLoad, Loc: loc, Dst: "r0", Scope: Sys, Proxy: p}
	}
	fence := func(p Proxy) Inst { return Inst{Op: OpProxyFence, Proxy: p} }
	aliases := map[string]Alias{
		"s": {Of: "x", Kind: Surface},
		"t": {Of: "x", Kind: Texture},
		"y": {Of: "x", Kind: Generic},
		"u": {Of: "y", Kind: Surface},
	}
	one := func(code ...Inst) *Program {
		return &Program{Init: map[string]int64{"x": 0}, Aliases: aliases, Threads: []Thread{{Name: "P0", Code: code}}}
	}
	// Message passing from a store through loc (with fences after it) to
	// a load through loc2 (with fences before it) in another thread of
	// the CTA, synchronised by release and acquire.
	mp := func(wr Inst, wf []Inst, rf []Inst, rd Inst) *Program {
		p0 := append([]Inst{wr}, wf...)
		p0 = append(p0, Inst{Op: OpStore, Loc: "f", Args: []Operand{{Imm: 1}}, Sem: Release, Scope: GPU})
		p1 := []Inst{{Op: OpLoad, Loc: "f", Dst: "r1", Sem: Acquire, Scope: GPU}}
		p1 = append(p1, rf...)
		p1 = append(p1, rd)
		return &Program{Init: map[string]int64{"x": 0, "f": 0}, Aliases: aliases, Threads: []Thread{{Name: "P0", Code: p0}, {Name: "P1", Code: p1}}}
	}
	for _, c := range []struct {
		name string
		p    *Program
		obs  []Observable
		// stale is the outcome where the load misses the store, and
		// whether the model must allow it.
		stale []int64
		allow bool
	}{
		{"generic store, generic load", one(store("x", Generic), load("x", Generic)), nil, []int64{0}, false},
		{"surface store, surface load", one(store("s", Surface), load("s", Surface)), nil, []int64{0}, false},
		{"surface store, texture load, no fence", one(store("s", Surface), load("t", Texture)), nil, []int64{0}, true},
		{"surface store, texture load, texture fence only", one(store("s", Surface), fence(Texture), load("t", Texture)), nil, []int64{0}, true},
		{"surface store, surface and texture fences, texture load", one(store("s", Surface), fence(Surface), fence(Texture), load("t", Texture)), nil, []int64{0}, false},
		{"surface store, surface fence, generic load", one(store("s", Surface), fence(Surface), load("x", Generic)), nil, []int64{0}, false},
		{"generic store, generic load of an alias", one(store("x", Generic), load("y", Generic)), nil, []int64{0}, true},
		{"generic store, alias fence, generic load of an alias", one(store("x", Generic), fence(ProxyAlias), load("y", Generic)), nil, []int64{0}, false},
		{"surface store, surface fence, alias fence, load of an alias", one(store("s", Surface), fence(Surface), fence(ProxyAlias), load("y", Generic)), nil, []int64{0}, false},
		{"surface store, alias fence, load of an alias", one(store("s", Surface), fence(ProxyAlias), load("y", Generic)), nil, []int64{0}, true},
		{"surface store through an alias, surface load of the location", one(store("u", Surface), load("s", Surface)), nil, []int64{0}, true},
		{"message passing, one proxy", mp(store("s", Surface), nil, nil, load("s", Surface)), mpObs2, []int64{1, 0}, false},
		{"message passing, surface to generic, no fence", mp(store("s", Surface), nil, nil, load("x", Generic)), mpObs2, []int64{1, 0}, true},
		{"message passing, surface to generic, surface fence", mp(store("s", Surface), []Inst{fence(Surface)}, nil, load("x", Generic)), mpObs2, []int64{1, 0}, false},
		{"message passing, generic to texture, texture fence in the reader", mp(store("x", Generic), nil, []Inst{fence(Texture)}, load("t", Texture)), mpObs2, []int64{1, 0}, false},
		{"message passing, generic to alias, no fence", mp(store("x", Generic), nil, nil, load("y", Generic)), mpObs2, []int64{1, 0}, true},
		{"message passing, generic to alias, alias fence", mp(store("x", Generic), []Inst{fence(ProxyAlias)}, nil, load("y", Generic)), mpObs2, []int64{1, 0}, false},
	} {
		obs := c.obs
		if obs == nil {
			obs = []Observable{{Thread: 0, Name: "r0"}}
		}
		res, err := Explore(c.p, obs, Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := slices.ContainsFunc(res.Outcomes, func(o []int64) bool { return slices.Equal(o, c.stale) })
		if got != c.allow || len(res.Outcomes) == 0 {
			t.Errorf("%s: outcome %v allowed = %v, want %v (outcomes %v)", c.name, c.stale, got, c.allow, res.Outcomes)
		}
		// The operational model treats an alias as its location: it may
		// reach less, never an outcome the exact model forbids.
		for seed := uint64(0); seed < 20; seed++ {
			o, ok, err := Simulate(c.p, obs, seed, 1000)
			if err != nil {
				t.Fatalf("%s: seed %d: %v", c.name, seed, err)
			}
			if ok && !slices.ContainsFunc(res.Outcomes, func(x []int64) bool { return slices.Equal(x, o) }) {
				t.Errorf("%s: seed %d: the operational model reached %v, which the exact model forbids", c.name, seed, o)
			}
		}
	}
}

var mpObs2 = []Observable{{Thread: 1, Name: "r1"}, {Thread: 1, Name: "r0"}}

// TestAliasErrors checks that malformed aliases are refused by name.
func TestAliasErrors(t *testing.T) {
	code := []Inst{{Op: OpLoad, Loc: "y", Dst: "r0", Scope: Sys}}
	for _, c := range []struct {
		aliases map[string]Alias
		init    map[string]int64
		want    string
	}{
		{map[string]Alias{"y": {Of: "z"}}, map[string]int64{"x": 0}, "not a location"},
		{map[string]Alias{"y": {Of: "w"}, "w": {Of: "y"}}, map[string]int64{"x": 0}, "cycle"},
		{map[string]Alias{"y": {Of: "x"}}, map[string]int64{"x": 0, "y": 1}, "initial value of its own"},
		{map[string]Alias{"y": {Of: "x", Kind: ProxyAlias}}, map[string]int64{"x": 0}, "alias kind"},
	} {
		p := &Program{Init: c.init, Aliases: c.aliases, Threads: []Thread{{Name: "P0", Code: code}}}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: Validate = %v, want an error containing %q", c.aliases, err, c.want)
		}
	}
}
