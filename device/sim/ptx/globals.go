package ptx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Module-scope variables of the global and constant state spaces live in
// the module's image (Module.globals), at the generic window
// [GlobalVarWindow]: the interpreter lays them out in declaration order,
// each at its alignment, and fills them from their initializers. The
// image is read-only: a kernel reads what the declarations initialized
// (zero without an initializer) on every device, and a store or atomic to
// it is an error of the run, naming the variable.

// globalVar declares ".global|.const [.align N] .TYPE name[[N]|[]] [= init]";
// ts starts after the state space.
func (m *Module) globalVar(ts []token) error {
	eq := len(ts)
	for j, t := range ts {
		if t.s == "=" {
			eq = j
			break
		}
	}
	decl, init := ts[:eq], []token(nil)
	if eq < len(ts) {
		init = ts[eq+1:]
		if len(init) == 0 {
			return fmt.Errorf("line %d: %s: an initializer is missing after =", lineOf(ts), joinTokens(decl))
		}
	}
	// An unsized array takes its length from its initializer.
	unsized := len(decl) >= 2 && decl[len(decl)-2].s == "[" && decl[len(decl)-1].s == "]"
	if unsized && init == nil {
		return fmt.Errorf("line %d: %s: an array without a length needs an initializer", lineOf(ts), joinTokens(decl))
	}
	elemTy, err := varElemType(decl)
	if err != nil {
		return err
	}
	var elems []token
	if init != nil {
		if elems, err = initElems(init); err != nil {
			return fmt.Errorf("line %d: %s: %w", lineOf(ts), joinTokens(decl), err)
		}
	}
	if unsized {
		// One token per element once commas go: "name+off" is one element
		// of three tokens, generic(name) of four.
		n := len(splitElems(elems))
		decl = append(append([]token(nil), decl[:len(decl)-1]...), token{s: strconv.Itoa(n), line: decl[len(decl)-1].line}, decl[len(decl)-1])
	}
	name, size, align, err := varSpec(decl, false)
	if err != nil {
		return err
	}
	if _, dup := m.vars[name]; dup {
		return fmt.Errorf("line %d: variable %s declared twice", lineOf(ts), name)
	}
	off := alignUp(len(m.globals), align)
	before := len(m.globals)
	m.globals = append(m.globals, make([]byte, off+size-len(m.globals))...)
	for i, e := range splitElems(elems) {
		at := off + i*elemTy.size()
		var err error
		if at+elemTy.size() > off+size {
			err = fmt.Errorf("more initializers than elements (%d bytes)", size)
		} else {
			err = m.initElem(e, elemTy, at)
		}
		if err != nil {
			m.globals = m.globals[:before]
			return fmt.Errorf("line %d: %s: %w", lineOf(ts), name, err)
		}
	}
	m.vars[name] = &symbol{name: name, kind: symGlobal, offset: off, size: size}
	m.varOrder = append(m.varOrder, name)
	return nil
}

// varElemType is the element type of "[.align N] .TYPE name...".
func varElemType(decl []token) (typ, error) {
	j := 0
	if len(decl) > 1 && decl[0].s == ".align" {
		j = 2
	}
	if j >= len(decl) {
		return tNone, fmt.Errorf("line %d: bad declaration %q", lineOf(decl), joinTokens(decl))
	}
	t, ok := typeNames[decl[j].s]
	if !ok || t == tPred {
		return tNone, fmt.Errorf("line %d: unsupported variable type %s", decl[j].line, decl[j].s)
	}
	return t, nil
}

// initElems strips the braces of an initializer: "v" or "{v, v, ...}"
// (nested braces, a multi-dimensional array's, are flattened in order).
func initElems(init []token) ([]token, error) {
	var out []token
	depth := 0
	for _, t := range init {
		switch t.s {
		case "{":
			depth++
		case "}":
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced braces in the initializer")
			}
		default:
			out = append(out, t)
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced braces in the initializer")
	}
	return out, nil
}

// splitElems splits initializer tokens at their commas.
func splitElems(ts []token) [][]token {
	if len(ts) == 0 {
		return nil
	}
	var out [][]token
	start := 0
	for j, t := range ts {
		if t.s == "," {
			out = append(out, ts[start:j])
			start = j + 1
		}
	}
	return append(out, ts[start:])
}

// initElem writes one initializer element of type ty at offset at of the
// image: an integer, a float (0f/0d bits or decimal), or the address of a
// module variable (name, generic(name), either with +offset), which the
// variable must have been declared before.
func (m *Module) initElem(e []token, ty typ, at int) error {
	n := ty.size()
	dst := m.globals[at : at+n]
	if len(e) == 0 {
		return fmt.Errorf("an empty initializer element")
	}
	if len(e) == 1 {
		if v, ok := immediate(e[0].s); ok {
			if ty.float() && !strings.HasPrefix(e[0].s, "0f") && !strings.HasPrefix(e[0].s, "0d") &&
				!strings.HasPrefix(e[0].s, "0F") && !strings.HasPrefix(e[0].s, "0D") {
				// An integer written for a float variable: its value.
				return putFloat(dst, ty, float64(int64(v)))
			}
			if ty == tF64 && len(e[0].s) == 10 {
				v = math.Float64bits(float64(math.Float32frombits(uint32(v))))
			}
			put(dst, v, n)
			return nil
		}
		if ty.float() {
			if f, err := strconv.ParseFloat(e[0].s, 64); err == nil {
				return putFloat(dst, ty, f)
			}
		}
	}
	// An address: name, name+off, generic(name), generic(name)+off.
	ts := e
	if ts[0].s == "generic" {
		if len(ts) < 4 || ts[1].s != "(" || ts[3].s != ")" {
			return fmt.Errorf("bad initializer %q", joinTokens(e))
		}
		ts = append([]token{ts[2]}, ts[4:]...)
	}
	var off int64
	switch {
	case len(ts) == 1:
	case len(ts) == 3 && ts[1].s == "+":
		v, ok := immediate(ts[2].s)
		if !ok {
			return fmt.Errorf("bad initializer %q", joinTokens(e))
		}
		off = int64(v)
	default:
		return fmt.Errorf("bad initializer %q", joinTokens(e))
	}
	sym := m.vars[ts[0].s]
	if sym == nil || sym.kind != symGlobal {
		return fmt.Errorf("initializer %q: the address of %s, which is no module-scope .global or .const variable declared before", joinTokens(e), ts[0].s)
	}
	if n != 8 {
		return fmt.Errorf("initializer %q: an address needs a 64-bit element, not %d bytes", joinTokens(e), n)
	}
	binary.LittleEndian.PutUint64(dst, GlobalVarWindow+uint64(sym.offset)+uint64(off))
	return nil
}

// putFloat writes f as a value of float type ty, rounded to nearest.
func putFloat(dst []byte, ty typ, f float64) error {
	switch ty {
	case tF32:
		binary.LittleEndian.PutUint32(dst, math.Float32bits(float32(f)))
	case tF64:
		binary.LittleEndian.PutUint64(dst, math.Float64bits(f))
	default:
		return fmt.Errorf("a decimal initializer for a %d-byte float", ty.size())
	}
	return nil
}

// globalAccess reads a module variable's bytes at offset off of the image
// into buf; a write is refused.
func (m *Module) globalAccess(off uint64, buf []byte, write bool) error {
	if write {
		return fmt.Errorf("store to module-scope variable %s: the simulator keeps .global and .const variables read-only", m.globalName(off))
	}
	return move(m.globals, off, buf, false, "module-scope variable")
}

// globalName names the module variable at offset off of the image.
func (m *Module) globalName(off uint64) string {
	best := ""
	for _, name := range m.varOrder {
		s := m.vars[name]
		if s.kind == symGlobal && uint64(s.offset) <= off && off < uint64(s.offset+max(s.size, 1)) {
			best = fmt.Sprintf("%s+%d", name, off-uint64(s.offset))
		}
	}
	if best == "" {
		return fmt.Sprintf("at offset %d", off)
	}
	return best
}
