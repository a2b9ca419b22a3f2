package litmus

import (
	"fmt"
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
	if e.op == "==" {
		return l == r
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

// parseCondition reads "exists (...)", "~exists (...)" or "forall (...)".
func (t *Test) parseCondition(text string, line int) error {
	text = strings.TrimSpace(text)
	switch {
	case strings.HasPrefix(text, "forall"):
		t.Quant, text = Forall, text[len("forall"):]
	case strings.HasPrefix(text, "exists"):
		t.Quant, text = Exists, text[len("exists"):]
	default:
		t.Quant = NotExists
		text = strings.TrimSpace(strings.TrimPrefix(text, "~"))
		text = strings.TrimPrefix(text, "exists")
	}
	toks, err := tokenize(text)
	if err != nil {
		return fmt.Errorf("line %d: condition: %w", line, err)
	}
	p := &condParser{toks: toks, test: t}
	e, err := p.or()
	if err == nil && p.pos < len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.toks[p.pos])
	}
	if err != nil {
		return fmt.Errorf("line %d: condition: %w", line, err)
	}
	t.Cond = e
	return nil
}

func tokenize(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(s[i:], `/\`), strings.HasPrefix(s[i:], `\/`), strings.HasPrefix(s[i:], "=="), strings.HasPrefix(s[i:], "!="), strings.HasPrefix(s[i:], "<>"):
			toks = append(toks, s[i:i+2])
			i += 2
		case c == '(' || c == ')' || c == '~' || c == '=':
			toks = append(toks, s[i:i+1])
			i++
		case c == '-' || c == ':' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + 1
			for j < len(s) && (s[j] == ':' || s[j] == '_' || s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
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
	case "~":
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
	default:
		return nil, fmt.Errorf("want == or != after %s, got %q", l.text, op)
	}
	p.pos++
	r, err := p.term()
	if err != nil {
		return nil, err
	}
	return cmpExpr{op: op, l: l, r: r}, nil
}

func (p *condParser) term() (term, error) {
	tok := p.peek()
	if tok == "" {
		return term{}, fmt.Errorf("unexpected end")
	}
	p.pos++
	if v, err := strconv.ParseInt(tok, 0, 64); err == nil {
		return term{obs: -1, imm: v, text: tok}, nil
	}
	o := memmodel.Observable{Thread: -1, Name: tok}
	if th, reg, ok := strings.Cut(tok, ":"); ok {
		ti, err := p.test.threadIndex(th)
		if err != nil {
			return term{}, err
		}
		if !regRE.MatchString(reg) {
			return term{}, fmt.Errorf("%q is not a register", reg)
		}
		o = memmodel.Observable{Thread: ti, Name: reg}
	} else if !identRE.MatchString(tok) {
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
