package litmus

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/symmem/symmem/device/sim/memmodel"
)

// Expr is a condition over a final state.
type Expr interface {
	// Eval evaluates the expression; vals holds one value per observable.
	Eval(vals []int64) bool
	String() string
}

type andExpr struct{ a, b Expr }
type orExpr struct{ a, b Expr }
type notExpr struct{ a Expr }
type constExpr bool

// cmpExpr compares two terms; a term is an observable index or a constant.
type cmpExpr struct {
	op   string
	l, r term
}

type term struct {
	obs  int // index into the observables, or -1
	imm  int64
	text string
}

func (e andExpr) Eval(v []int64) bool { return e.a.Eval(v) && e.b.Eval(v) }
func (e orExpr) Eval(v []int64) bool  { return e.a.Eval(v) || e.b.Eval(v) }
func (e notExpr) Eval(v []int64) bool { return !e.a.Eval(v) }
func (e constExpr) Eval([]int64) bool { return bool(e) }
func (e cmpExpr) Eval(v []int64) bool {
	l, r := e.l.value(v), e.r.value(v)
	switch e.op {
	case "==":
		return l == r
	case "<":
		return l < r
	case "<=":
		return l <= r
	case ">":
		return l > r
	case ">=":
		return l >= r
	}
	return l != r
}

func (t term) value(v []int64) int64 {
	if t.obs >= 0 {
		return v[t.obs]
	}
	return t.imm
}

func (e andExpr) String() string   { return "(" + e.a.String() + ` /\ ` + e.b.String() + ")" }
func (e orExpr) String() string    { return "(" + e.a.String() + ` \/ ` + e.b.String() + ")" }
func (e notExpr) String() string   { return "~" + e.a.String() }
func (e constExpr) String() string { return strconv.FormatBool(bool(e)) }
func (e cmpExpr) String() string   { return e.l.text + " " + e.op + " " + e.r.text }

// parseCondition reads what follows the program: an optional
// "locations [...]" (the values to show, which the outcomes list anyway),
// an optional "filter EXPR" (outcomes that fail it are dropped), and
// "exists (...)", "~exists (...)" (or "not exists") or "forall (...)".
func (t *Test) parseCondition(text string, line int) error {
	toks, err := tokenize(text)
	if err != nil {
		return fmt.Errorf("line %d: condition: %w", line, err)
	}
	p := &condParser{toks: toks, test: t}
	if err := p.tail(); err != nil {
		return fmt.Errorf("line %d: condition: %w", line, err)
	}
	return nil
}

func (p *condParser) tail() error {
	if p.peek() == "locations" {
		p.pos++
		if p.next() != "[" {
			return fmt.Errorf("want [ after locations")
		}
		for p.peek() != "]" {
			if p.peek() == "" {
				return fmt.Errorf("unterminated locations [...]")
			}
			p.pos++
		}
		p.pos++
		p.skip(";")
	}
	if p.peek() == "filter" {
		p.pos++
		f, err := p.or()
		if err != nil {
			return fmt.Errorf("filter: %w", err)
		}
		p.test.Filter = f
		p.skip(";")
	}
	switch p.next() {
	case "exists":
		p.test.Quant = Exists
	case "forall":
		p.test.Quant = Forall
	case "~", "not":
		if p.next() != "exists" {
			return fmt.Errorf("want exists after ~")
		}
		p.test.Quant = NotExists
	default:
		return fmt.Errorf("want exists, ~exists or forall")
	}
	e, err := p.or()
	if err != nil {
		return err
	}
	p.skip(";")
	if p.pos < len(p.toks) {
		return fmt.Errorf("unexpected %q", p.toks[p.pos])
	}
	p.test.Cond = e
	return nil
}

// tokenize splits a condition into words (names, numbers), operators and
// punctuation; whitespace and (* comments *) separate tokens and are
// dropped, so "P1 : r0" reads as "P1:r0".
func tokenize(s string) ([]string, error) {
	var toks []string
	word := func(c byte) bool {
		return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(s[i:], "(*"):
			end := strings.Index(s[i+2:], "*)")
			if end < 0 {
				return nil, fmt.Errorf("unterminated comment")
			}
			i += end + 4
		case len(s) > i+1 && slices.Contains([]string{`/\`, `\/`, "==", "!=", "<>", "<=", ">="}, s[i:i+2]):
			toks = append(toks, s[i:i+2])
			i += 2
		case strings.IndexByte("()~=<>:[];", c) >= 0:
			toks = append(toks, s[i:i+1])
			i++
		case word(c) || c == '-' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i + 1
			for j < len(s) && word(s[j]) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			return nil, fmt.Errorf("unexpected character %q", c)
		}
	}
	return toks, nil
}

type condParser struct {
	toks []string
	pos  int
	test *Test
}

func (p *condParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *condParser) next() string {
	tok := p.peek()
	if tok != "" {
		p.pos++
	}
	return tok
}

// skip consumes tok if it comes next.
func (p *condParser) skip(tok string) {
	if p.peek() == tok {
		p.pos++
	}
}

func (p *condParser) or() (Expr, error) {
	e, err := p.and()
	for err == nil && p.peek() == `\/` {
		p.pos++
		var r Expr
		if r, err = p.and(); err == nil {
			e = orExpr{e, r}
		}
	}
	return e, err
}

func (p *condParser) and() (Expr, error) {
	e, err := p.unary()
	for err == nil && p.peek() == `/\` {
		p.pos++
		var r Expr
		if r, err = p.unary(); err == nil {
			e = andExpr{e, r}
		}
	}
	return e, err
}

func (p *condParser) unary() (Expr, error) {
	switch tok := p.peek(); tok {
	case "~", "not":
		p.pos++
		e, err := p.unary()
		return notExpr{e}, err
	case "(":
		p.pos++
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.pos++
		return e, nil
	case "true", "false":
		p.pos++
		return constExpr(tok == "true"), nil
	case "":
		return nil, fmt.Errorf("unexpected end")
	}
	l, err := p.term()
	if err != nil {
		return nil, err
	}
	op := p.peek()
	switch op {
	case "==", "=":
		op = "=="
	case "!=", "<>":
		op = "!="
	case "<", "<=", ">", ">=":
	default:
		return nil, fmt.Errorf("want a comparison (==, !=, <, <=, >, >=) after %s, got %q", l.text, op)
	}
	p.pos++
	r, err := p.term()
	if err != nil {
		return nil, err
	}
	return cmpExpr{op: op, l: l, r: r}, nil
}

// term reads a constant, a location (x or [x]) or a register of a
// thread (P1:r0 or 1:r0).
func (p *condParser) term() (term, error) {
	tok := p.next()
	if tok == "" {
		return term{}, fmt.Errorf("unexpected end")
	}
	bracket := tok == "["
	if bracket {
		tok = p.next()
		if p.next() != "]" {
			return term{}, fmt.Errorf("want ] after [%s", tok)
		}
	}
	var o memmodel.Observable
	switch {
	case !bracket && p.peek() == ":":
		p.pos++
		reg := p.next()
		ti, err := p.test.threadIndex(tok)
		if err != nil {
			return term{}, err
		}
		if !regRE.MatchString(reg) {
			return term{}, fmt.Errorf("%q is not a register", reg)
		}
		o = memmodel.Observable{Thread: ti, Name: reg}
	case !bracket && tok != "" && (tok[0] == '-' || tok[0] >= '0' && tok[0] <= '9'):
		v, err := strconv.ParseInt(tok, 0, 64)
		if err != nil {
			return term{}, fmt.Errorf("%q is not an integer", tok)
		}
		return term{obs: -1, imm: v, text: tok}, nil
	case identRE.MatchString(tok) && !regRE.MatchString(tok):
		o = memmodel.Observable{Thread: -1, Name: tok}
	default:
		return term{}, fmt.Errorf("%q is not a location, register or integer", tok)
	}
	for i, x := range p.test.Observables {
		if x == o {
			return term{obs: i, text: p.test.observableName(i)}, nil
		}
	}
	p.test.Observables = append(p.test.Observables, o)
	return term{obs: len(p.test.Observables) - 1, text: p.test.observableName(len(p.test.Observables) - 1)}, nil
}

// observableName is how observable i is printed: P1:r2 or x.
func (t *Test) observableName(i int) string {
	o := t.Observables[i]
	if o.Thread < 0 {
		return o.Name
	}
	return fmt.Sprintf("P%d:%s", o.Thread, o.Name)
}
