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
//
// A harness's expressions are parsed into trees and compiled once, against
// the program's scope, into closures that read their variables from the
// slots of a frame: the caller binds rank, i or iter in the frame and
// evaluates, with no look-up by name.
type expr struct {
	src  string
	code code
}

// code is a compiled expression or part of one.
type code func(f *frame) float64

// The slots of a frame: the built-in variables first, then the harness's
// vars in the order of their names (a scope's), then one slot for each
// level of nesting of sum and sum_ranks, which bind a name in their term.
const (
	slotWorld = iota
	slotRank
	slotI
	slotIter
)

// scope names the slots of the frames a program's expressions read.
type scope struct {
	slots map[string]int // the built-ins and the vars
	names int            // how many: the slots that may be unbound
	size  int            // a frame's slots: names plus the deepest nesting of sums
}

// newScope is the scope of a program whose vars are named vars (none of
// them a built-in), in that order.
func newScope(vars []string) *scope {
	sc := &scope{slots: map[string]int{"world": slotWorld, "rank": slotRank, "i": slotI, "iter": slotIter}}
	for _, v := range vars {
		sc.slots[v] = len(sc.slots)
	}
	sc.names = len(sc.slots)
	sc.size = sc.names
	return sc
}

// frame holds the values of variables: every slot of its scope, those of
// names (built-ins and vars) bound or not. An evaluation writes the slots
// of the names sums bind and notes the first unbound variable it reads, so
// a frame serves one evaluation at a time.
type frame struct {
	v     []float64 // by slot
	bound []bool    // by slot, for the scope's names
	err   error
}

// frame returns a frame of sc with nothing bound. Make frames after every
// expression of sc is compiled: they size it.
func (sc *scope) frame() *frame {
	return &frame{v: make([]float64, sc.size), bound: make([]bool, sc.names)}
}

// bind binds slot s to v.
func (f *frame) bind(s int, v float64) {
	f.v[s], f.bound[s] = v, true
}

// binding is a slot's value and whether it is bound, to restore later.
type binding struct {
	v     float64
	bound bool
}

// save is the binding of slot s.
func (f *frame) save(s int) binding { return binding{f.v[s], f.bound[s]} }

// restore gives slot s the binding b.
func (f *frame) restore(s int, b binding) { f.v[s], f.bound[s] = b.v, b.bound }

// clone is a copy of f.
func (f *frame) clone() *frame {
	return &frame{v: append([]float64(nil), f.v...), bound: append([]bool(nil), f.bound...)}
}

// node is a parse tree's node: num, variable, unary, binop or call.
type node any

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

// Comparison operators, as binop ops: '=' is ==, '!' is !=, 'l' is <=, 'g'
// is >=, '<' and '>' themselves.
var comparisons = map[string]byte{"==": '=', "!=": '!', "<": '<', "<=": 'l', ">": '>', ">=": 'g'}

var arity = map[string]int{"sum_ranks": 1, "sum": 4, "min": 2, "max": 2, "floor": 1, "sqrt": 1}

// parseExpr parses an expression into its tree, to compile against a
// scope.
func parseExpr(src string) (node, error) {
	p := &exprParser{src: src}
	p.next()
	root, err := p.cmp()
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	if p.tok != "" {
		return nil, fmt.Errorf("expression %q: unexpected %q", src, p.tok)
	}
	return root, nil
}

// expr parses src and compiles it against sc. A name that is neither a
// built-in, a var of sc nor bound by an enclosing sum is an error; a
// built-in or var unbound where the expression is evaluated (i outside a
// fill, iter outside a repeat, a var of a var not yet evaluated) is one
// when it is read.
func (sc *scope) expr(src string) (*expr, error) {
	root, err := parseExpr(src)
	if err != nil {
		return nil, err
	}
	c := &compiler{sc: sc}
	x := &expr{src: src}
	if x.code, err = c.compile(root); err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	return x, nil
}

// eval evaluates x with the variables of f.
func (x *expr) eval(f *frame) (float64, error) {
	f.err = nil
	v := x.code(f)
	if f.err != nil {
		return 0, fmt.Errorf("expression %q: %w", x.src, f.err)
	}
	return v, nil
}

// evalInt evaluates x and requires an integer result.
func (x *expr) evalInt(f *frame) (int64, error) {
	v, err := x.eval(f)
	if err != nil {
		return 0, err
	}
	if v != math.Trunc(v) || v < -(1<<63) || v >= 1<<63 { // NaN and ±Inf too
		return 0, fmt.Errorf("expression %q is %v, not an integer", x.src, v)
	}
	return int64(v), nil
}

// compiler compiles one expression's tree. Its operations are the tree's,
// in the tree's order (left operand before right, a sum's bounds before
// its term), none combined with another: a compiled expression gives the
// value, bits and all, and the first unbound variable of the tree's
// evaluation.
type compiler struct {
	sc    *scope
	local []string // the names enclosing sums bind, innermost last: local[d] in slot sc.names+d
}

func (c *compiler) compile(n node) (code, error) {
	switch n := n.(type) {
	case num:
		v := float64(n)
		return func(*frame) float64 { return v }, nil
	case variable:
		return c.variable(string(n))
	case unary:
		x, err := c.compile(n.x)
		if err != nil {
			return nil, err
		}
		return func(f *frame) float64 { return -x(f) }, nil
	case binop:
		l, err := c.compile(n.l)
		if err != nil {
			return nil, err
		}
		r, err := c.compile(n.r)
		if err != nil {
			return nil, err
		}
		return binopCode(n.op, l, r), nil
	case call:
		return c.call(n)
	}
	return nil, fmt.Errorf("cannot compile %T", n)
}

// variable reads name: the innermost sum's binding of it, else the
// scope's slot, which must be bound when read.
func (c *compiler) variable(name string) (code, error) {
	for d := len(c.local) - 1; d >= 0; d-- {
		if c.local[d] == name {
			s := c.sc.names + d
			return func(f *frame) float64 { return f.v[s] }, nil
		}
	}
	s, ok := c.sc.slots[name]
	if !ok {
		return nil, fmt.Errorf("unknown variable %q", name)
	}
	return func(f *frame) float64 {
		if !f.bound[s] {
			if f.err == nil {
				f.err = fmt.Errorf("unknown variable %q", name)
			}
			return 0
		}
		return f.v[s]
	}, nil
}

// bound compiles a sum's term with name bound in a slot of its own,
// returned with the term.
func (c *compiler) bound(name string, term node) (code, int, error) {
	s := c.sc.names + len(c.local)
	c.local = append(c.local, name)
	c.sc.size = max(c.sc.size, s+1)
	x, err := c.compile(term)
	c.local = c.local[:len(c.local)-1]
	return x, s, err
}

func (c *compiler) call(n call) (code, error) {
	switch n.fn {
	case "sum_ranks":
		world, err := c.variable("world")
		if err != nil {
			return nil, err
		}
		term, s, err := c.bound("rank", n.args[0])
		if err != nil {
			return nil, err
		}
		return func(f *frame) float64 {
			w := int(world(f))
			var sum float64
			for r := 0; r < w; r++ {
				f.v[s] = float64(r)
				sum += term(f)
			}
			return sum
		}, nil
	case "sum":
		lo, err := c.compile(n.args[1])
		if err != nil {
			return nil, err
		}
		hi, err := c.compile(n.args[2])
		if err != nil {
			return nil, err
		}
		term, s, err := c.bound(string(n.args[0].(variable)), n.args[3])
		if err != nil {
			return nil, err
		}
		return func(f *frame) float64 {
			a, b := math.Ceil(lo(f)), hi(f)
			var sum float64
			for k := a; k <= b; k++ {
				f.v[s] = k
				sum += term(f)
			}
			return sum
		}, nil
	}
	args := make([]code, len(n.args))
	for i, a := range n.args {
		x, err := c.compile(a)
		if err != nil {
			return nil, err
		}
		args[i] = x
	}
	switch n.fn {
	case "sqrt":
		x := args[0]
		return func(f *frame) float64 { return math.Sqrt(x(f)) }, nil
	case "min":
		a, b := args[0], args[1]
		return func(f *frame) float64 { return math.Min(a(f), b(f)) }, nil
	case "max":
		a, b := args[0], args[1]
		return func(f *frame) float64 { return math.Max(a(f), b(f)) }, nil
	case "floor":
		x := args[0]
		return func(f *frame) float64 { return math.Floor(x(f)) }, nil
	}
	return nil, fmt.Errorf("unknown function %s", n.fn)
}

// binopCode is l op r, l evaluated first.
func binopCode(op byte, l, r code) code {
	switch op {
	case '+':
		return func(f *frame) float64 { return l(f) + r(f) }
	case '-':
		return func(f *frame) float64 { return l(f) - r(f) }
	case '*':
		return func(f *frame) float64 { return l(f) * r(f) }
	case '/':
		return func(f *frame) float64 { return l(f) / r(f) }
	case '%':
		return func(f *frame) float64 { return mod(l(f), r(f)) }
	case '=':
		return func(f *frame) float64 { return truth(l(f) == r(f)) }
	case '!':
		return func(f *frame) float64 { return truth(l(f) != r(f)) }
	case '<':
		return func(f *frame) float64 { return truth(l(f) < r(f)) }
	case 'l':
		return func(f *frame) float64 { return truth(l(f) <= r(f)) }
	case '>':
		return func(f *frame) float64 { return truth(l(f) > r(f)) }
	}
	return func(f *frame) float64 { return truth(l(f) >= r(f)) }
}

func truth(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// mod is math.Mod(x, y), computed by integer division where that gives
// the same bits: x and y positive integers up to 2^53, where the
// remainder is exact and positive (math.Mod's sign is x's; a zero x, whose
// sign the remainder keeps, takes math.Mod).
func mod(x, y float64) float64 {
	if x > 0 && y > 0 && x <= 1<<53 && y <= 1<<53 {
		if xi, yi := int64(x), int64(y); float64(xi) == x && float64(yi) == y {
			return float64(xi % yi)
		}
	}
	return math.Mod(x, y)
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
