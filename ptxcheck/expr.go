package ptxcheck

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// An expression is what a harness writes wherever a number depends on the
// run: a size, a parameter, an element of a buffer. It is arithmetic on
// float64 (+ - * / %, parentheses, unary minus, integer and decimal
// literals such as 1024, 0x40 or 1.5e3) over variables: rank, world, i
// (the element's index, in writes and checks), iter (the index of the
// innermost repeat), and the harness's own vars. Comparisons (== != < <=
// > >=) bind loosest and give 1 or 0 (a step's "when"). Functions:
// sum_ranks(e) is e summed over rank = 0..world-1, sum(k, a, b, e) is e
// summed over the integers k = a..b (k a name of the caller's choosing,
// bound in e only), min(a, b), max(a, b), floor(e) and sqrt(e).
type expr struct {
	src  string
	root node
}

// env binds an expression's variables.
type env struct {
	vars map[string]float64
}

type node interface {
	eval(e *evaluator) float64
}

// evaluator evaluates nodes against variables that change per element
// without copying maps.
type evaluator struct {
	base  map[string]float64
	local map[string]float64
	err   error
}

func (ev *evaluator) lookup(name string) float64 {
	if v, ok := ev.local[name]; ok {
		return v
	}
	if v, ok := ev.base[name]; ok {
		return v
	}
	if ev.err == nil {
		ev.err = fmt.Errorf("unknown variable %q", name)
	}
	return 0
}

type num float64
type variable string
type unary struct{ x node }
type binop struct {
	op   byte
	l, r node
}
type call struct {
	fn   string
	args []node
}

func (n num) eval(*evaluator) float64         { return float64(n) }
func (v variable) eval(ev *evaluator) float64 { return ev.lookup(string(v)) }
func (u unary) eval(ev *evaluator) float64    { return -u.x.eval(ev) }

func (b binop) eval(ev *evaluator) float64 {
	l, r := b.l.eval(ev), b.r.eval(ev)
	switch b.op {
	case '+':
		return l + r
	case '-':
		return l - r
	case '*':
		return l * r
	case '/':
		return l / r
	case '%':
		return math.Mod(l, r)
	}
	return truth(compare(b.op, l, r))
}

// Comparison operators, as binop ops: '=' is ==, '!' is !=, 'l' is <=, 'g'
// is >=, '<' and '>' themselves.
var comparisons = map[string]byte{"==": '=', "!=": '!', "<": '<', "<=": 'l', ">": '>', ">=": 'g'}

func compare(op byte, l, r float64) bool {
	switch op {
	case '=':
		return l == r
	case '!':
		return l != r
	case '<':
		return l < r
	case 'l':
		return l <= r
	case '>':
		return l > r
	}
	return l >= r
}

func truth(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (c call) eval(ev *evaluator) float64 {
	switch c.fn {
	case "sum_ranks":
		world := int(ev.lookup("world"))
		saved, had := ev.local["rank"]
		if ev.local == nil {
			ev.local = map[string]float64{}
		}
		var s float64
		for r := 0; r < world; r++ {
			ev.local["rank"] = float64(r)
			s += c.args[0].eval(ev)
		}
		if had {
			ev.local["rank"] = saved
		} else {
			delete(ev.local, "rank")
		}
		return s
	case "sum":
		name := string(c.args[0].(variable))
		lo, hi := math.Ceil(c.args[1].eval(ev)), c.args[2].eval(ev)
		if ev.local == nil {
			ev.local = map[string]float64{}
		}
		saved, had := ev.local[name]
		var s float64
		for k := lo; k <= hi; k++ {
			ev.local[name] = k
			s += c.args[3].eval(ev)
		}
		if had {
			ev.local[name] = saved
		} else {
			delete(ev.local, name)
		}
		return s
	case "sqrt":
		return math.Sqrt(c.args[0].eval(ev))
	case "min":
		return math.Min(c.args[0].eval(ev), c.args[1].eval(ev))
	case "max":
		return math.Max(c.args[0].eval(ev), c.args[1].eval(ev))
	}
	return math.Floor(c.args[0].eval(ev))
}

var arity = map[string]int{"sum_ranks": 1, "sum": 4, "min": 2, "max": 2, "floor": 1, "sqrt": 1}

// parseExpr parses an expression.
func parseExpr(src string) (*expr, error) {
	p := &exprParser{src: src}
	p.next()
	root, err := p.cmp()
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	if p.tok != "" {
		return nil, fmt.Errorf("expression %q: unexpected %q", src, p.tok)
	}
	return &expr{src: src, root: root}, nil
}

// eval evaluates x with the variables of e and local ones (element index
// and the like).
func (x *expr) eval(e env, local map[string]float64) (float64, error) {
	ev := &evaluator{base: e.vars, local: local}
	v := x.root.eval(ev)
	if ev.err != nil {
		return 0, fmt.Errorf("expression %q: %w", x.src, ev.err)
	}
	return v, nil
}

// evalInt evaluates x and requires an integer result.
func (x *expr) evalInt(e env, local map[string]float64) (int64, error) {
	v, err := x.eval(e, local)
	if err != nil {
		return 0, err
	}
	if v != math.Trunc(v) || v < -(1<<63) || v >= 1<<63 { // NaN and ±Inf too
		return 0, fmt.Errorf("expression %q is %v, not an integer", x.src, v)
	}
	return int64(v), nil
}

type exprParser struct {
	src string
	pos int
	tok string
}

// next reads the next token into p.tok ("" at the end).
func (p *exprParser) next() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
	if p.pos >= len(p.src) {
		p.tok = ""
		return
	}
	start := p.pos
	c := p.src[p.pos]
	switch {
	case strings.IndexByte("+-*/%(),", c) >= 0:
		p.pos++
	case strings.IndexByte("=!<>", c) >= 0:
		p.pos++
		if p.pos < len(p.src) && p.src[p.pos] == '=' {
			p.pos++
		}
	case c >= '0' && c <= '9' || c == '.':
		for p.pos < len(p.src) {
			c := p.src[p.pos]
			isExp := (c == '+' || c == '-') && (p.src[p.pos-1] == 'e' || p.src[p.pos-1] == 'E') && !strings.HasPrefix(p.src[start:], "0x")
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || isExp) {
				break
			}
			p.pos++
		}
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		for p.pos < len(p.src) {
			c := p.src[p.pos]
			if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				break
			}
			p.pos++
		}
	default:
		p.pos++
	}
	p.tok = p.src[start:p.pos]
}

// cmp parses a comparison of two sums (or a sum alone).
func (p *exprParser) cmp() (node, error) {
	l, err := p.sum()
	if err != nil {
		return nil, err
	}
	if op, ok := comparisons[p.tok]; ok {
		p.next()
		r, err := p.sum()
		if err != nil {
			return nil, err
		}
		if _, again := comparisons[p.tok]; again {
			return nil, fmt.Errorf("comparisons do not chain: parenthesise one")
		}
		return binop{op: op, l: l, r: r}, nil
	}
	return l, nil
}

func (p *exprParser) sum() (node, error) {
	l, err := p.product()
	if err != nil {
		return nil, err
	}
	for p.tok == "+" || p.tok == "-" {
		op := p.tok[0]
		p.next()
		r, err := p.product()
		if err != nil {
			return nil, err
		}
		l = binop{op: op, l: l, r: r}
	}
	return l, nil
}

func (p *exprParser) product() (node, error) {
	l, err := p.factor()
	if err != nil {
		return nil, err
	}
	for p.tok == "*" || p.tok == "/" || p.tok == "%" {
		op := p.tok[0]
		p.next()
		r, err := p.factor()
		if err != nil {
			return nil, err
		}
		l = binop{op: op, l: l, r: r}
	}
	return l, nil
}

func (p *exprParser) factor() (node, error) {
	t := p.tok
	switch {
	case t == "":
		return nil, fmt.Errorf("unexpected end")
	case t == "-":
		p.next()
		x, err := p.factor()
		if err != nil {
			return nil, err
		}
		return unary{x}, nil
	case t == "(":
		p.next()
		x, err := p.cmp()
		if err != nil {
			return nil, err
		}
		if p.tok != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.next()
		return x, nil
	case t[0] >= '0' && t[0] <= '9' || t[0] == '.':
		p.next()
		if u, err := strconv.ParseUint(t, 0, 64); err == nil {
			return num(float64(u)), nil
		}
		v, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", t)
		}
		return num(v), nil
	case t[0] == '_' || t[0] >= 'a' && t[0] <= 'z' || t[0] >= 'A' && t[0] <= 'Z':
		p.next()
		if p.tok != "(" {
			return variable(t), nil
		}
		n, ok := arity[t]
		if !ok {
			return nil, fmt.Errorf("unknown function %s", t)
		}
		p.next()
		var args []node
		for {
			a, err := p.cmp()
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if p.tok != "," {
				break
			}
			p.next()
		}
		if p.tok != ")" {
			return nil, fmt.Errorf("missing ) after the arguments of %s", t)
		}
		p.next()
		if len(args) != n {
			return nil, fmt.Errorf("%s takes %d arguments, got %d", t, n, len(args))
		}
		if t == "sum" {
			v, ok := args[0].(variable)
			if !ok {
				return nil, fmt.Errorf("sum's first argument must be the name it binds, as in sum(k, 0, 7, k*k)")
			}
			if builtin[string(v)] {
				return nil, fmt.Errorf("sum cannot bind %s, a built-in variable", v)
			}
		}
		return call{fn: t, args: args}, nil
	}
	return nil, fmt.Errorf("unexpected %q", t)
}
