// Package litmus reads herd-style PTX litmus tests and judges them on the
// simulator's memory model (package memmodel): which final states the
// model allows, and whether the test's condition holds.
package litmus

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/symmem/symmem/device/sim/memmodel"
)

// Quantifier is how a test's condition is judged over the final states.
type Quantifier uint8

// The quantifiers of a litmus condition.
const (
	// Exists holds when some allowed final state satisfies the condition.
	Exists Quantifier = iota
	// NotExists holds when no allowed final state satisfies it.
	NotExists
	// Forall holds when every allowed final state satisfies it.
	Forall
)

func (q Quantifier) String() string {
	return [...]string{"exists", "~exists", "forall"}[q]
}

// Test is a parsed litmus test.
type Test struct {
	Name    string
	Program memmodel.Program
	Quant   Quantifier
	Cond    Expr
	// Filter, when not nil, keeps only the final states that satisfy it
	// (herd's "filter").
	Filter Expr
	// Observables are the registers and locations the condition names, in
	// order of first mention.
	Observables []memmodel.Observable
}

// ParseFile reads and parses the litmus test at path.
func ParseFile(path string) (*Test, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

var (
	headerRE = regexp.MustCompile(`^P(\d+)\s*@\s*cta\s+(\d+)\s*,\s*gpu\s+(\d+)$`)
	regRE    = regexp.MustCompile(`^r\d+$`)
	identRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	labelRE  = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*:$`)
	// tailRE finds what follows the program: an optional list of
	// locations to show, an optional filter, and the final condition.
	tailRE  = regexp.MustCompile(`(?m)^[ \t]*(locations\b|filter\b|~|not[ \t]+exists\b|exists\b|forall\b)`)
	aliasRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*@\s*([a-z]+)\s+aliases\s+([A-Za-z_][A-Za-z0-9_]*)$`)
)

// Parse parses a litmus test's text.
func Parse(src string) (*Test, error) {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	lineAt := func(off int) int { return strings.Count(src[:off], "\n") + 1 }
	nl := strings.IndexByte(src, '\n')
	if nl < 0 {
		return nil, fmt.Errorf("line 1: want a title line \"PTX NAME\"")
	}
	title := strings.Fields(src[:nl])
	if len(title) != 2 || !strings.EqualFold(title[0], "PTX") {
		return nil, fmt.Errorf("line 1: want a title line \"PTX NAME\", got %q", src[:nl])
	}
	t := &Test{Name: title[1]}
	// Skip quoted comments up to the initial state.
	off := nl + 1
	for off < len(src) {
		c := src[off]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			off++
			continue
		case c == '"':
			end := strings.IndexByte(src[off+1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated comment", lineAt(off))
			}
			off += end + 2
			continue
		case c == '{':
		default:
			return nil, fmt.Errorf("line %d: want the initial state { ... }", lineAt(off))
		}
		break
	}
	if off >= len(src) {
		return nil, fmt.Errorf("no initial state { ... }")
	}
	end := strings.IndexByte(src[off:], '}')
	if end < 0 {
		return nil, fmt.Errorf("line %d: unterminated initial state", lineAt(off))
	}
	initText, initOff := src[off+1:off+end], off+1
	off += end + 1
	m := tailRE.FindStringIndex(src[off:])
	if m == nil {
		return nil, fmt.Errorf("no final condition (exists, ~exists or forall)")
	}
	progText, progOff := src[off:off+m[0]], off
	condText, condOff := src[off+m[0]:], off+m[0]

	if err := t.parseProgram(progText, func(o int) int { return lineAt(progOff + o) }); err != nil {
		return nil, err
	}
	t.Program.Init = map[string]int64{}
	t.Program.Aliases = map[string]memmodel.Alias{}
	if err := t.parseInit(initText, func(o int) int { return lineAt(initOff + o) }); err != nil {
		return nil, err
	}
	if err := t.parseCondition(condText, lineAt(condOff)); err != nil {
		return nil, err
	}
	// Every location the program uses starts at 0 unless initialised.
	for _, th := range t.Program.Threads {
		for _, in := range th.Code {
			_, alias := t.Program.Aliases[in.Loc]
			if _, ok := t.Program.Init[in.Loc]; in.Loc != "" && !ok && !alias {
				t.Program.Init[in.Loc] = 0
			}
		}
	}
	for _, o := range t.Observables {
		if o.Thread < 0 {
			_, alias := t.Program.Aliases[o.Name]
			if _, ok := t.Program.Init[o.Name]; !ok && !alias {
				return nil, fmt.Errorf("line %d: the condition names location %q, which the test does not use", lineAt(condOff), o.Name)
			}
		}
	}
	if err := t.Program.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// parseInit reads "x=0; P1:r1=0; 1:r2=3" entries.
func (t *Test) parseInit(text string, line func(int) int) error {
	off := 0
	for _, part := range strings.FieldsFunc(text, func(r rune) bool { return r == ';' || r == '\n' }) {
		at := strings.Index(text[off:], part) + off
		off = at + len(part)
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if strings.Contains(part, "@") {
			if err := t.parseAlias(part, line(at)); err != nil {
				return fmt.Errorf("line %d: initial entry %q: %w", line(at), part, err)
			}
			continue
		}
		lhs, rhs, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("line %d: initial entry %q: want NAME=VALUE or NAME @ KIND aliases LOCATION", line(at), part)
		}
		lhs, rhs = strings.TrimSpace(lhs), strings.TrimSpace(rhs)
		v, err := strconv.ParseInt(rhs, 0, 64)
		if err != nil {
			return fmt.Errorf("line %d: initial entry %q: value %q is not an integer", line(at), part, rhs)
		}
		if th, reg, ok := strings.Cut(lhs, ":"); ok {
			ti, err := t.threadIndex(strings.TrimSpace(th))
			if err != nil {
				return fmt.Errorf("line %d: initial entry %q: %w", line(at), part, err)
			}
			reg = strings.TrimSpace(reg)
			if !regRE.MatchString(reg) {
				return fmt.Errorf("line %d: initial entry %q: %q is not a register", line(at), part, reg)
			}
			t.Program.Threads[ti].Regs[reg] = v
			continue
		}
		if !identRE.MatchString(lhs) || regRE.MatchString(lhs) {
			return fmt.Errorf("line %d: initial entry %q: %q is not a location", line(at), part, lhs)
		}
		if _, ok := t.Program.Aliases[lhs]; ok {
			return fmt.Errorf("line %d: initial entry %q: %s is an alias; give the value to the location it aliases", line(at), part, lhs)
		}
		t.Program.Init[lhs] = v
	}
	return nil
}

// parseAlias reads "y @ generic aliases x": y is another virtual address
// of x's memory (generic), or a surface, texture or constant handle of x.
// The location aliased must be declared before.
func (t *Test) parseAlias(part string, line int) error {
	m := aliasRE.FindStringSubmatch(part)
	if m == nil {
		return fmt.Errorf("want NAME @ generic|surface|texture|constant aliases LOCATION")
	}
	name, kind, of := m[1], m[2], m[3]
	var k memmodel.Proxy
	switch kind {
	case "generic":
		k = memmodel.Generic
	case "surface":
		k = memmodel.Surface
	case "texture":
		k = memmodel.Texture
	case "constant":
		k = memmodel.Constant
	default:
		return fmt.Errorf("proxy %q: want generic, surface, texture or constant", kind)
	}
	if regRE.MatchString(name) {
		return fmt.Errorf("%q is a register, not a location", name)
	}
	if _, ok := t.Program.Init[name]; ok {
		return fmt.Errorf("%s is already a location", name)
	}
	if _, ok := t.Program.Aliases[name]; ok {
		return fmt.Errorf("%s is declared twice", name)
	}
	_, loc := t.Program.Init[of]
	_, alias := t.Program.Aliases[of]
	if !loc && !alias {
		return fmt.Errorf("%s aliases %s, which is not declared before it", name, of)
	}
	t.Program.Aliases[name] = memmodel.Alias{Of: of, Kind: k, Line: line}
	return nil
}

// threadIndex resolves "P1" or "1" to a thread index.
func (t *Test) threadIndex(s string) (int, error) {
	s = strings.TrimPrefix(s, "P")
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= len(t.Program.Threads) {
		return 0, fmt.Errorf("no thread %q (the test has %d)", s, len(t.Program.Threads))
	}
	return i, nil
}

// parseProgram reads the thread header row and the instruction rows.
func (t *Test) parseProgram(text string, line func(int) int) error {
	type cell struct {
		text string
		line int
	}
	var rows [][]cell
	off := 0
	for _, row := range strings.Split(text, ";") {
		rowOff := off
		off += len(row) + 1
		if strings.TrimSpace(row) == "" {
			continue
		}
		var cells []cell
		co := rowOff
		for _, c := range strings.Split(row, "|") {
			trimmed := strings.TrimSpace(c)
			lead := strings.Index(c, trimmed)
			cells = append(cells, cell{text: trimmed, line: line(co + max(lead, 0))})
			co += len(c) + 1
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		return fmt.Errorf("no threads")
	}
	for i, h := range rows[0] {
		m := headerRE.FindStringSubmatch(strings.Join(strings.Fields(h.text), " "))
		if m == nil {
			return fmt.Errorf("line %d: thread header %q: want Pn@cta C,gpu G", h.line, h.text)
		}
		if n, _ := strconv.Atoi(m[1]); n != i {
			return fmt.Errorf("line %d: thread header %q: want P%d", h.line, h.text, i)
		}
		cta, _ := strconv.Atoi(m[2])
		gpu, _ := strconv.Atoi(m[3])
		t.Program.Threads = append(t.Program.Threads, memmodel.Thread{Name: "P" + m[1], CTA: cta, GPU: gpu, Regs: map[string]int64{}})
	}
	n := len(t.Program.Threads)
	labels := make([]map[string]int, n)
	jumps := make([][]pendingJump, n)
	for i := range labels {
		labels[i] = map[string]int{}
	}
	for _, row := range rows[1:] {
		if len(row) > n {
			return fmt.Errorf("line %d: %d columns for %d threads", row[0].line, len(row), n)
		}
		for ti, c := range row {
			if c.text == "" {
				continue
			}
			th := &t.Program.Threads[ti]
			if m := labelRE.FindStringSubmatch(c.text); m != nil {
				if _, dup := labels[ti][m[1]]; dup {
					return fmt.Errorf("line %d: %s: label %s defined twice", c.line, th.Name, m[1])
				}
				labels[ti][m[1]] = len(th.Code)
				continue
			}
			in, label, err := parseInst(c.text)
			if err != nil {
				return fmt.Errorf("line %d: %s: %q: %w", c.line, th.Name, c.text, err)
			}
			in.Line = c.line
			if label != "" {
				jumps[ti] = append(jumps[ti], pendingJump{inst: len(th.Code), label: label, line: c.line})
			}
			th.Code = append(th.Code, in)
		}
	}
	for ti, js := range jumps {
		for _, j := range js {
			target, ok := labels[ti][j.label]
			if !ok {
				return fmt.Errorf("line %d: %s: no label %s", j.line, t.Program.Threads[ti].Name, j.label)
			}
			t.Program.Threads[ti].Code[j.inst].Target = target
		}
	}
	return nil
}

type pendingJump struct {
	inst  int
	label string
	line  int
}

// parseInst parses one instruction; label is the jump target to resolve.
func parseInst(text string) (in memmodel.Inst, label string, err error) {
	op, rest, _ := strings.Cut(text, " ")
	op = strings.TrimSpace(op)
	var args []string
	if rest = strings.TrimSpace(rest); rest != "" {
		for _, a := range strings.Split(rest, ",") {
			a = strings.TrimSpace(a)
			a = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
			if a == "" {
				return in, "", fmt.Errorf("empty operand")
			}
			args = append(args, a)
		}
	}
	parts := strings.Split(op, ".")
	want := func(k int) error {
		if len(args) != k {
			return fmt.Errorf("want %d operands, got %d", k, len(args))
		}
		return nil
	}
	switch parts[0] {
	case "ld", "st", "atom", "red", "suld", "sust", "suatom", "sured", "tld", "cold":
		return parseMemory(parts, args)
	case "fence":
		if len(parts) >= 2 && parts[1] == "proxy" {
			if len(parts) != 3 {
				return in, "", fmt.Errorf("want fence.proxy.KIND (alias, generic, surface, texture or constant)")
			}
			in.Op = memmodel.OpProxyFence
			switch parts[2] {
			case "alias":
				in.Proxy = memmodel.ProxyAlias
			case "generic":
				in.Proxy = memmodel.Generic
			case "surface":
				in.Proxy = memmodel.Surface
			case "texture":
				in.Proxy = memmodel.Texture
			case "constant":
				in.Proxy = memmodel.Constant
			default:
				return in, "", fmt.Errorf("proxy fence kind %q: want alias, generic, surface, texture or constant", parts[2])
			}
			return in, "", want(0)
		}
		if len(parts) != 3 {
			return in, "", fmt.Errorf("want fence.sc.SCOPE or fence.acq_rel.SCOPE")
		}
		in.Op = memmodel.OpFence
		switch parts[1] {
		case "sc":
			in.Sem = memmodel.SC
		case "acq_rel":
			in.Sem = memmodel.AcqRel
		default:
			return in, "", fmt.Errorf("fence semantics %q: want sc or acq_rel", parts[1])
		}
		if in.Scope, err = parseScope(parts[2]); err != nil {
			return in, "", err
		}
		return in, "", want(0)
	case "membar":
		// membar is fence.sc at the matching scope.
		if len(parts) != 2 {
			return in, "", fmt.Errorf("want membar.cta, membar.gl or membar.sys")
		}
		in.Op, in.Sem = memmodel.OpFence, memmodel.SC
		switch parts[1] {
		case "cta":
			in.Scope = memmodel.CTA
		case "gl":
			in.Scope = memmodel.GPU
		case "sys":
			in.Scope = memmodel.Sys
		default:
			return in, "", fmt.Errorf("membar level %q: want cta, gl or sys", parts[1])
		}
		return in, "", want(0)
	case "bar":
		if len(parts) != 3 || parts[1] != "cta" || (parts[2] != "sync" && parts[2] != "arrive") {
			return in, "", fmt.Errorf("want bar.cta.sync or bar.cta.arrive")
		}
		if len(args) < 1 || len(args) > 3 {
			return in, "", fmt.Errorf("want INSTANCE[, ID[, COUNT]]")
		}
		in.Op, in.Arrive = memmodel.OpBarrier, parts[2] == "arrive"
		ops := make([]memmodel.Operand, len(args))
		for i, a := range args {
			if ops[i], err = parseValue(a); err != nil {
				return in, "", err
			}
		}
		in.Instance = ops[0]
		if len(ops) > 1 {
			in.ID = &ops[1]
		}
		if len(ops) > 2 {
			in.Quorum = &ops[2]
		}
		return in, "", nil
	case "add", "sub", "mul", "div", "and", "or", "xor", "mov":
		n := 3
		if parts[0] == "mov" {
			n = 2
		}
		if err := want(n); err != nil {
			return in, "", err
		}
		if !regRE.MatchString(args[0]) {
			return in, "", fmt.Errorf("destination %q is not a register", args[0])
		}
		in.Op, in.AtomOp, in.Dst = memmodel.OpLocal, parts[0], args[0]
		for _, a := range args[1:] {
			v, err := parseValue(a)
			if err != nil {
				return in, "", err
			}
			in.Args = append(in.Args, v)
		}
		return in, "", nil
	case "beq", "bne", "blt", "bgt", "ble", "bge":
		if err := want(3); err != nil {
			return in, "", err
		}
		in.Op, in.Cond = memmodel.OpBranch, parts[0][1:]
		for _, a := range args[:2] {
			v, err := parseValue(a)
			if err != nil {
				return in, "", err
			}
			in.Args = append(in.Args, v)
		}
		return in, args[2], nil
	case "goto":
		if err := want(1); err != nil {
			return in, "", err
		}
		in.Op = memmodel.OpJump
		return in, args[0], nil
	}
	return in, "", fmt.Errorf("unknown instruction %q", op)
}

// proxyOps maps the proxy forms of ld, st, atom and red to their plain
// form and proxy.
var proxyOps = map[string]struct {
	kind  string
	proxy memmodel.Proxy
}{
	"suld":   {"ld", memmodel.Surface},
	"sust":   {"st", memmodel.Surface},
	"suatom": {"atom", memmodel.Surface},
	"sured":  {"red", memmodel.Surface},
	"tld":    {"ld", memmodel.Texture},
	"cold":   {"ld", memmodel.Constant},
}

// parseMemory parses ld, st, atom and red, and their surface, texture and
// constant forms, with their qualifiers.
func parseMemory(parts, args []string) (in memmodel.Inst, label string, err error) {
	kind := parts[0]
	if p, ok := proxyOps[kind]; ok {
		kind, in.Proxy = p.kind, p.proxy
	}
	semSet, scopeSet := false, false
	for _, q := range parts[1:] {
		switch q {
		case "weak", "relaxed", "acquire", "release", "acq_rel", "volatile":
			if semSet {
				return in, "", fmt.Errorf("two semantics")
			}
			semSet = true
			switch q {
			case "weak":
				in.Sem = memmodel.Weak
			case "relaxed":
				in.Sem = memmodel.Relaxed
			case "acquire":
				in.Sem = memmodel.Acquire
			case "release":
				in.Sem = memmodel.Release
			case "acq_rel":
				in.Sem = memmodel.AcqRel
			case "volatile":
				// .volatile is relaxed at system scope.
				in.Sem, in.Scope, scopeSet = memmodel.Relaxed, memmodel.Sys, true
			}
		case "cta", "gpu", "sys":
			if scopeSet {
				return in, "", fmt.Errorf("two scopes")
			}
			scopeSet = true
			in.Scope, _ = parseScope(q)
		case "global", "u32", "s32", "b32", "u64", "s64", "b64":
			// The type does not change the model.
		case "shared":
			if in.Proxy != memmodel.Generic {
				return in, "", fmt.Errorf("a %s access cannot be shared", in.Proxy)
			}
			in.Shared = true
		case "add", "sub", "and", "or", "xor", "min", "max", "exch", "cas", "inc", "dec":
			if kind != "atom" && kind != "red" {
				return in, "", fmt.Errorf("qualifier %q on %s", q, kind)
			}
			in.AtomOp = q
		default:
			return in, "", fmt.Errorf("unknown qualifier %q", q)
		}
	}
	if kind == "atom" || kind == "red" {
		if in.AtomOp == "" {
			return in, "", fmt.Errorf("%s needs an operation (add, exch, cas, ...)", kind)
		}
		if !semSet {
			in.Sem = memmodel.Relaxed
		}
		if in.Sem == memmodel.Weak {
			return in, "", fmt.Errorf("%s cannot be weak", kind)
		}
		if !scopeSet {
			in.Scope = memmodel.GPU
		}
	} else if in.Sem == memmodel.Weak {
		if scopeSet {
			return in, "", fmt.Errorf("a weak access takes no scope")
		}
		in.Scope = memmodel.Sys
	} else if !scopeSet {
		return in, "", fmt.Errorf("a %s access needs a scope (.cta, .gpu or .sys)", in.Sem)
	}
	loc := func(s string) (string, error) {
		if regRE.MatchString(s) || !identRE.MatchString(s) {
			return "", fmt.Errorf("%q is not a location", s)
		}
		return s, nil
	}
	switch kind {
	case "ld":
		if len(args) != 2 {
			return in, "", fmt.Errorf("want REGISTER, LOCATION")
		}
		if !regRE.MatchString(args[0]) {
			return in, "", fmt.Errorf("%q is not a register", args[0])
		}
		in.Dst = args[0]
		if v, err := strconv.ParseInt(args[1], 0, 64); err == nil {
			// ld r, CONSTANT sets the register.
			if in.Shared || in.Proxy != memmodel.Generic {
				return in, "", fmt.Errorf("a constant load takes no state space or proxy")
			}
			return memmodel.Inst{Op: memmodel.OpLocal, AtomOp: "mov", Dst: args[0], Args: []memmodel.Operand{{Imm: v}}}, "", nil
		}
		in.Op = memmodel.OpLoad
		in.Loc, err = loc(args[1])
		return in, "", err
	case "st":
		if len(args) != 2 {
			return in, "", fmt.Errorf("want LOCATION, VALUE")
		}
		if in.Sem == memmodel.Acquire || in.Sem == memmodel.AcqRel {
			return in, "", fmt.Errorf("a store cannot be %s", in.Sem)
		}
		in.Op = memmodel.OpStore
		if in.Loc, err = loc(args[0]); err != nil {
			return in, "", err
		}
		v, err := parseValue(args[1])
		in.Args = []memmodel.Operand{v}
		return in, "", err
	}
	in.Op = memmodel.OpAtom
	if kind == "atom" {
		if len(args) < 3 {
			return in, "", fmt.Errorf("want REGISTER, LOCATION and operands")
		}
		if !regRE.MatchString(args[0]) {
			return in, "", fmt.Errorf("%q is not a register", args[0])
		}
		in.Dst, args = args[0], args[1:]
	}
	if len(args) < 1 {
		return in, "", fmt.Errorf("want LOCATION, OPERAND")
	}
	if in.Loc, err = loc(args[0]); err != nil {
		return in, "", err
	}
	for _, a := range args[1:] {
		v, err := parseValue(a)
		if err != nil {
			return in, "", err
		}
		in.Args = append(in.Args, v)
	}
	return in, "", nil
}

func parseScope(s string) (memmodel.Scope, error) {
	switch s {
	case "cta":
		return memmodel.CTA, nil
	case "gpu":
		return memmodel.GPU, nil
	case "sys":
		return memmodel.Sys, nil
	}
	return 0, fmt.Errorf("scope %q: want cta, gpu or sys", s)
}

// parseValue parses a register or an integer.
func parseValue(s string) (memmodel.Operand, error) {
	if regRE.MatchString(s) {
		return memmodel.Operand{Reg: s}, nil
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return memmodel.Operand{}, fmt.Errorf("%q is neither a register nor an integer", s)
	}
	return memmodel.Operand{Imm: v}, nil
}
