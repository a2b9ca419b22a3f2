package ptx

import (
	"fmt"
	"strconv"
	"strings"
)

// Resources is what an entry's PTX says about the resources each of its
// blocks takes on a multiprocessor: its static shared memory and the
// performance directives of its header. PTX does not say how many
// registers ptxas gives a thread (only .maxnreg, a bound): that is in the
// compiled code (ptxas -v, cuobjdump --dump-resource-usage).
type Resources struct {
	// StaticShared is the bytes of the .shared variables the entry and the
	// functions it calls declare, with every module-scope .shared
	// variable: the static shared memory of a block, the dynamic (an
	// .extern array, which the launch sizes) excluded. Variables are
	// counted by their sizes, without the padding ptxas may put between
	// them.
	StaticShared int
	// MaxNReg is the entry's .maxnreg: the most registers ptxas may give
	// a thread (0: not declared).
	MaxNReg int
	// MaxNTid and ReqNTid are the threads a block may have at most
	// (.maxntid) and must have (.reqntid), the product of their
	// dimensions (0: not declared).
	MaxNTid, ReqNTid int
	// MinNCTAPerSM is the entry's .minnctapersm (0: not declared): the
	// blocks a multiprocessor should hold, a hint to ptxas's register
	// allocation.
	MinNCTAPerSM int
}

// Resources returns what the entry's PTX declares of the resources its
// blocks take (see [Resources]). It decodes the entry and the functions it
// calls.
func (m *Module) Resources(entry string) (Resources, error) {
	src := m.funcs[entry]
	if src == nil || !src.entry {
		return Resources{}, fmt.Errorf("ptx: no entry %q in the module", entry)
	}
	r := Resources{StaticShared: m.moduleShared}
	if err := m.eachReachable(entry, func(fn *Func) { r.StaticShared += fn.shared }); err != nil {
		return Resources{}, err
	}
	if err := r.directives(src.header); err != nil {
		return Resources{}, fmt.Errorf("ptx: entry %s: %w", entry, err)
	}
	return r, nil
}

// directives reads the performance directives of an entry's header (the
// tokens after its name): those after the parameter list.
func (r *Resources) directives(h []token) error {
	i := 0
	if len(h) > 0 && h[0].s == "(" {
		for i < len(h) && h[i].s != ")" {
			i++
		}
		i++
	}
	for i < len(h) {
		name := h[i].s
		i++
		var vals []token
		for ; i < len(h) && !strings.HasPrefix(h[i].s, "."); i++ {
			if h[i].s != "," {
				vals = append(vals, h[i])
			}
		}
		switch name {
		case ".maxnreg", ".minnctapersm", ".maxntid", ".reqntid":
		default:
			continue // a directive that takes no resources
		}
		var dims []int
		for _, t := range vals {
			v, err := strconv.Atoi(t.s)
			if err != nil || v < 0 {
				return fmt.Errorf("line %d: %s: bad value %q", t.line, name, t.s)
			}
			dims = append(dims, v)
		}
		one := func() (int, error) {
			if len(dims) != 1 {
				return 0, fmt.Errorf("%s: want one value, have %d", name, len(dims))
			}
			return dims[0], nil
		}
		product := func() (int, error) {
			if len(dims) < 1 || len(dims) > 3 {
				return 0, fmt.Errorf("%s: want 1 to 3 dimensions, have %d", name, len(dims))
			}
			p := 1
			for _, d := range dims {
				p *= d
			}
			return p, nil
		}
		var err error
		switch name {
		case ".maxnreg":
			r.MaxNReg, err = one()
		case ".minnctapersm":
			r.MinNCTAPerSM, err = one()
		case ".maxntid":
			r.MaxNTid, err = product()
		case ".reqntid":
			r.ReqNTid, err = product()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// eachReachable decodes entry and every function it calls, directly or
// not, handing each to visit once, in the order a depth-first walk of the
// calls reaches them.
func (m *Module) eachReachable(entry string, visit func(*Func)) error {
	seen := map[string]bool{}
	var walk func(name string) error
	walk = func(name string) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		fn, err := m.Func(name)
		if err != nil {
			return err
		}
		visit(fn)
		for _, c := range fn.callees {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(entry)
}
