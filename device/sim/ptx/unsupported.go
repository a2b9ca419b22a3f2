package ptx

import (
	"fmt"
	"sort"
	"strings"
)

// Unsupported is a statement of a function that the interpreter refuses
// to run: an instruction (or declaration) it does not implement exactly,
// a malformed one, or a call of a function the module does not define.
type Unsupported struct {
	Func   string // the function holding the statement ("" at module scope)
	Line   int    // its line in the PTX text
	Inst   string // its mnemonic or directive, e.g. "tex.2d.v4.f32.s32"
	Reason string // why it is refused
}

func (u Unsupported) String() string {
	if u.Func == "" {
		return fmt.Sprintf("module scope line %d: %s: %s", u.Line, u.Inst, u.Reason)
	}
	return fmt.Sprintf("%s line %d: %s: %s", u.Func, u.Line, u.Inst, u.Reason)
}

// badError is the decoding error of a function with refused statements:
// it names every one of them.
func badError(bad []Unsupported) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d unsupported statement", len(bad))
	if len(bad) > 1 {
		b.WriteByte('s')
	}
	for _, u := range bad {
		fmt.Fprintf(&b, "; line %d: %s: %s", u.Line, u.Inst, u.Reason)
	}
	return fmt.Errorf("%s", b.String())
}

// Unsupported lists every statement the interpreter refuses in entry and
// in the functions it calls, transitively: the instructions it does not
// implement exactly (each with its name and line, not only the first),
// malformed statements, and calls of functions the module does not
// define. The list is sorted by function, then line; it is empty when the
// entry can run. The error reports an entry the module does not have.
func (m *Module) Unsupported(entry string) ([]Unsupported, error) {
	src := m.funcs[entry]
	if src == nil || !src.entry {
		return nil, fmt.Errorf("ptx: no entry %q in the module", entry)
	}
	seen := map[string]bool{}
	var out []Unsupported
	var walk func(name string)
	walk = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		out = append(out, m.unsupportedIn(name)...)
		for _, c := range m.funcs[name].callees {
			if m.funcs[c] != nil {
				walk(c)
			}
		}
	}
	walk(entry)
	sortUnsupported(out)
	return out, nil
}

// AllUnsupported is [Module.Unsupported] for every function of the
// module, called or not, and the module-scope statements the parser
// refused (their Func is empty).
func (m *Module) AllUnsupported() []Unsupported {
	out := append([]Unsupported(nil), m.bad...)
	for name := range m.funcs {
		out = append(out, m.unsupportedIn(name)...)
	}
	sortUnsupported(out)
	return out
}

// unsupportedIn decodes one function and lists what it refused, with the
// calls of undefined functions.
func (m *Module) unsupportedIn(name string) []Unsupported {
	src := m.funcs[name]
	_, err := m.Func(name)
	out := append([]Unsupported(nil), src.bad...)
	if err != nil && len(src.bad) == 0 {
		// An error of the whole function (its header or its braces).
		out = append(out, Unsupported{Func: name, Line: src.line, Inst: name, Reason: err.Error()})
	}
	if src.partial != nil {
		for i := range src.partial.code {
			in := &src.partial.code[i]
			if in.op == opCall && m.funcs[in.callee] == nil {
				out = append(out, Unsupported{Func: name, Line: in.line, Inst: in.text,
					Reason: fmt.Sprintf("call of %s, which the module does not define", in.callee)})
			}
		}
	}
	return out
}

func sortUnsupported(us []Unsupported) {
	sort.Slice(us, func(i, j int) bool {
		if us[i].Func != us[j].Func {
			return us[i].Func < us[j].Func
		}
		return us[i].Line < us[j].Line
	})
}
