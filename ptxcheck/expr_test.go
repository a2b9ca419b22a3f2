package ptxcheck

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// refEnv is the reference evaluator's: a parse tree walked node by node,
// names looked up in a map of the bound built-ins and vars under a chain
// of the bindings of the sums around the node. It is written apart from
// the compiler it checks, from the language's definition: the first
// unbound name read is the error, reading one gives 0, a sum's bounds
// are evaluated before its term binds its name.
type refEnv struct {
	names map[string]float64
	err   string // the first unbound name read
}

// refBinding is a name a sum binds, over the bindings around it.
type refBinding struct {
	name string
	v    float64
	up   *refBinding
}

func (e *refEnv) lookup(name string, b *refBinding) float64 {
	for ; b != nil; b = b.up {
		if b.name == name {
			return b.v
		}
	}
	if v, ok := e.names[name]; ok {
		return v
	}
	if e.err == "" {
		e.err = name
	}
	return 0
}

func (e *refEnv) eval(n node, b *refBinding) float64 {
	switch n := n.(type) {
	case num:
		return float64(n)
	case variable:
		return e.lookup(string(n), b)
	case unary:
		return -e.eval(n.x, b)
	case binop:
		l := e.eval(n.l, b)
		r := e.eval(n.r, b)
		switch n.op {
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
		var t bool
		switch n.op {
		case '=':
			t = l == r
		case '!':
			t = l != r
		case '<':
			t = l < r
		case 'l':
			t = l <= r
		case '>':
			t = l > r
		case 'g':
			t = l >= r
		default:
			panic(fmt.Sprintf("op %q", n.op))
		}
		if t {
			return 1
		}
		return 0
	case call:
		a := n.args
		switch n.fn {
		case "sum_ranks":
			w := int(e.lookup("world", b))
			s := 0.0
			for r := 0; r < w; r++ {
				s += e.eval(a[0], &refBinding{"rank", float64(r), b})
			}
			return s
		case "sum":
			lo := math.Ceil(e.eval(a[1], b))
			hi := e.eval(a[2], b)
			s := 0.0
			for k := lo; k <= hi; k++ {
				s += e.eval(a[3], &refBinding{string(a[0].(variable)), k, b})
			}
			return s
		case "min":
			x := e.eval(a[0], b)
			return math.Min(x, e.eval(a[1], b))
		case "max":
			x := e.eval(a[0], b)
			return math.Max(x, e.eval(a[1], b))
		case "floor":
			return math.Floor(e.eval(a[0], b))
		case "sqrt":
			return math.Sqrt(e.eval(a[0], b))
		}
	}
	panic(fmt.Sprintf("node %#v", n))
}

// refFree is the first name of n, in the order of the text, that no sum
// around it binds and that known does not hold ("" for none).
func refFree(n node, known map[string]bool, bound []string) string {
	switch n := n.(type) {
	case variable:
		for _, b := range bound {
			if b == string(n) {
				return ""
			}
		}
		if !known[string(n)] {
			return string(n)
		}
	case unary:
		return refFree(n.x, known, bound)
	case binop:
		if f := refFree(n.l, known, bound); f != "" {
			return f
		}
		return refFree(n.r, known, bound)
	case call:
		switch n.fn {
		case "sum_ranks":
			if !known["world"] {
				return "world"
			}
			return refFree(n.args[0], known, append(bound, "rank"))
		case "sum":
			for _, a := range n.args[1:3] {
				if f := refFree(a, known, bound); f != "" {
					return f
				}
			}
			return refFree(n.args[3], known, append(bound, string(n.args[0].(variable))))
		}
		for _, a := range n.args {
			if f := refFree(a, known, bound); f != "" {
				return f
			}
		}
	}
	return ""
}

// exprCase is an expression of a scope evaluated with some of the
// scope's names bound, in turn.
type exprCase struct {
	vars  []string             // the scope's vars
	src   string               // the expression
	bound []map[string]float64 // the built-ins and vars bound
}

// checkExpr compiles c's expression against its scope and evaluates it
// as the reference does with each set of bindings, comparing the error
// (at compile time: a free name; at evaluation: the first unbound name
// read) and the value's bits.
func checkExpr(t interface {
	Helper()
	Fatalf(string, ...any)
}, c exprCase) {
	t.Helper()
	tree, err := parseExpr(c.src)
	if err != nil {
		t.Fatalf("%s: %v", c.src, err)
	}
	known := map[string]bool{"world": true, "rank": true, "i": true, "iter": true}
	for _, v := range c.vars {
		known[v] = true
	}
	sc := newScope(c.vars)
	x, err := sc.expr(c.src)
	if free := refFree(tree, known, nil); free != "" {
		want := fmt.Sprintf("expression %q: unknown variable %q", c.src, free)
		if err == nil || err.Error() != want {
			t.Fatalf("%s compiled: %v, want the error %q", c.src, err, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", c.src, err)
	}
	for _, bound := range c.bound {
		f := sc.frame()
		for name, v := range bound {
			f.bind(sc.slots[name], v)
		}
		ref := &refEnv{names: bound}
		want := ref.eval(tree, nil)
		got, err := x.eval(f)
		switch {
		case ref.err != "":
			msg := fmt.Sprintf("expression %q: unknown variable %q", c.src, ref.err)
			if err == nil || err.Error() != msg {
				t.Fatalf("%s with %v = %v, %v; want the error %q", c.src, bound, got, err, msg)
			}
		case err != nil:
			t.Fatalf("%s with %v: %v; want %v", c.src, bound, err, want)
		case math.Float64bits(got) != math.Float64bits(want):
			t.Fatalf("%s with %v = %v (%#x), want %v (%#x)", c.src, bound, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}

// exprsOf lists the expressions of a harness, in the order of its
// fields.
func exprsOf(v reflect.Value) []string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return exprsOf(v.Elem())
	case reflect.String:
		if v.Type() == reflect.TypeFor[Expr]() && v.String() != "" {
			return []string{v.String()}
		}
	case reflect.Struct:
		var out []string
		for i := range v.NumField() {
			out = append(out, exprsOf(v.Field(i))...)
		}
		return out
	case reflect.Slice:
		var out []string
		for i := range v.Len() {
			out = append(out, exprsOf(v.Index(i))...)
		}
		return out
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(a, b int) bool { return keys[a].String() < keys[b].String() })
		var out []string
		for _, k := range keys {
			out = append(out, exprsOf(v.MapIndex(k))...)
		}
		return out
	}
	return nil
}

// TestExprExamples: every expression of the example harnesses compiles
// and evaluates, bits and errors, as the reference evaluates its tree, in
// worlds of 1 to 8 at ranks, elements and iterations around the edges,
// with i and iter bound and not.
func TestExprExamples(t *testing.T) {
	var files []string
	err := filepath.WalkDir("../examples", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("%d harnesses under ../examples, want the examples' 50 and more", len(files))
	}
	exprs := 0
	for _, file := range files {
		p, err := LoadHarness(file)
		if err != nil {
			t.Fatal(err)
		}
		var vars []string
		for v := range p.Vars {
			vars = append(vars, v)
		}
		sort.Strings(vars)
		srcs := exprsOf(reflect.ValueOf(p))
		exprs += len(srcs)
		for _, world := range []float64{1, 2, 4, 8} {
			// The vars, as the reference evaluates them: passes until
			// none is left or none evaluates.
			env := map[string]float64{"world": world}
			left := vars
			for len(left) > 0 {
				var next []string
				for _, v := range left {
					tree, err := parseExpr(string(p.Vars[v]))
					if err != nil {
						t.Fatalf("%s: vars: %s: %v", file, v, err)
					}
					ref := &refEnv{names: env}
					x := ref.eval(tree, nil)
					if ref.err != "" {
						next = append(next, v)
						continue
					}
					env[v] = x
				}
				if len(next) == len(left) {
					break
				}
				left = next
			}
			var bounds []map[string]float64
			for _, at := range []map[string]float64{
				{"rank": 0, "i": 0, "iter": 0}, {"rank": world - 1, "i": 8191, "iter": 2},
				{"rank": 1, "i": 13, "iter": 1}, {"rank": 0}, {},
			} {
				bound := map[string]float64{}
				for k, v := range env {
					bound[k] = v
				}
				for k, v := range at {
					bound[k] = v
				}
				bounds = append(bounds, bound)
			}
			for _, src := range srcs {
				checkExpr(t, exprCase{vars: vars, src: src, bound: bounds})
			}
		}
	}
	t.Logf("%d expressions of %d harnesses", exprs, len(files))
}

// genValue draws a variable's value: small integers mostly, with the
// float64s that differ from them in how arithmetic treats them.
func genValue(t *rapid.T, label string) float64 {
	return rapid.OneOf(
		rapid.Map(rapid.IntRange(-9, 9), func(n int) float64 { return float64(n) }),
		rapid.Map(rapid.IntRange(0, 1<<20), func(n int) float64 { return float64(n) }),
		rapid.SampledFrom([]float64{math.Copysign(0, -1), 0.5, -2.5, 1e300, -1e-300, 1 << 53, 1<<53 + 2,
			math.Inf(1), math.Inf(-1), math.NaN()}),
		rapid.Float64(),
	).Draw(t, label)
}

// exprGen draws expressions over the names of a scope.
type exprGen struct {
	t     *rapid.T
	names []string // the scope's: built-ins and vars
	sums  []string // names sums bind
}

func (g *exprGen) draw(depth int, bound []string) string {
	t := g.t
	leaf := depth <= 0 || rapid.IntRange(0, 3).Draw(t, "leaf") == 0
	if leaf {
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			return rapid.SampledFrom([]string{"0", "1", "2", "3", "7", "8", "10", "0x10", "1.5e1", ".5", "2.5", "1e308",
				"4503599627370497", "9007199254740993", "1000"}).Draw(t, "num")
		case 1:
			if len(bound) > 0 {
				return rapid.SampledFrom(bound).Draw(t, "bound")
			}
		case 2:
			// A name a sum binds, maybe outside any: unknown there.
			return rapid.SampledFrom(g.sums).Draw(t, "sumname")
		}
		return rapid.SampledFrom(g.names).Draw(t, "name")
	}
	sub := func() string { return g.draw(depth-1, bound) }
	switch rapid.IntRange(0, 11).Draw(t, "form") {
	case 0:
		return "-" + sub()
	case 1:
		return "(" + sub() + ")"
	case 2:
		op := rapid.SampledFrom([]string{"==", "!=", "<", "<=", ">", ">="}).Draw(t, "cmp")
		return "(" + sub() + " " + op + " " + sub() + ")"
	case 3:
		return "sum_ranks(" + g.draw(depth-1, append(bound, "rank")) + ")"
	case 4:
		// Bounds of at most a few iterations, NaN or none, whatever the
		// values drawn.
		k := rapid.SampledFrom(g.sums).Draw(t, "k")
		return fmt.Sprintf("sum(%s, max(%s, -2), min(%s, 3), %s)", k, sub(), sub(), g.draw(depth-1, append(bound, k)))
	case 5:
		fn := rapid.SampledFrom([]string{"min", "max"}).Draw(t, "fn")
		return fn + "(" + sub() + ", " + sub() + ")"
	case 6:
		fn := rapid.SampledFrom([]string{"floor", "sqrt"}).Draw(t, "fn")
		return fn + "(" + sub() + ")"
	}
	op := rapid.SampledFrom([]string{"+", "-", "*", "/", "%", "%"}).Draw(t, "op")
	l, r := sub(), sub()
	if rapid.Bool().Draw(t, "paren") {
		return "(" + l + " " + op + " " + r + ")"
	}
	return l + " " + op + " " + r
}

// TestExprRandom: random expressions compile and evaluate, bits and
// errors, as the reference evaluates their trees, with random values
// bound to some of the names: NaNs, infinities, negative zero, integers
// past 2^53, a var shadowed by a sum's name, sums nested in sums.
func TestExprRandom(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vars := []string{"a", "b", "n"}
		g := &exprGen{t: t, names: append([]string{"world", "rank", "i", "iter"}, vars...), sums: []string{"k", "j", "a"}}
		bound := map[string]float64{}
		if rapid.IntRange(0, 9).Draw(t, "noworld") > 0 {
			bound["world"] = float64(rapid.IntRange(1, 8).Draw(t, "world"))
		}
		for _, name := range g.names[1:] {
			if rapid.IntRange(0, 3).Draw(t, "unbound "+name) > 0 {
				bound[name] = genValue(t, name)
			}
		}
		for range 10 {
			src := g.draw(rapid.IntRange(0, 5).Draw(t, "depth"), nil)
			if rapid.Bool().Draw(t, "compare") {
				op := rapid.SampledFrom([]string{"==", "!=", "<", "<=", ">", ">="}).Draw(t, "topcmp")
				src += " " + op + " " + g.draw(2, nil)
			}
			checkExpr(t, exprCase{vars: vars, src: src, bound: []map[string]float64{bound}})
		}
	})
}

// TestMod: mod's integer division gives math.Mod's bits wherever it is
// taken, and math.Mod's elsewhere: signs, zeros, non-integers, values
// past 2^53, infinities and NaN.
func TestMod(t *testing.T) {
	edges := []float64{math.Copysign(0, -1), 0, 1, -1, 3, -3, 8, 1 << 53, -(1 << 53), 1<<53 + 2, 1<<53 - 1, 1 << 63,
		0.5, 2.5, -2.5, math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64, math.MaxFloat64}
	for _, x := range edges {
		for _, y := range edges {
			if got, want := mod(x, y), math.Mod(x, y); math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("mod(%v, %v) = %v (%#x), math.Mod: %v (%#x)", x, y, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		num := rapid.OneOf(
			rapid.Map(rapid.Int64Range(-1<<54, 1<<54), func(n int64) float64 { return float64(n) }),
			rapid.Map(rapid.IntRange(-20, 20), func(n int) float64 { return float64(n) }),
			rapid.SampledFrom([]float64{math.Copysign(0, -1), 0, 1 << 53, 1<<53 + 2, 1<<53 - 1, 1 << 63, 0.5, 2.5,
				math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64, math.MaxFloat64}),
			rapid.Float64(),
		)
		x, y := num.Draw(t, "x"), num.Draw(t, "y")
		if got, want := mod(x, y), math.Mod(x, y); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("mod(%v, %v) = %v (%#x), math.Mod: %v (%#x)", x, y, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	})
}

// TestExprUnbound: a name of the scope that is not bound where the
// expression is evaluated is an error naming the first one the
// evaluation reads, and one it does not read (a sum of no terms) none; a
// name outside the scope is an error when the expression is compiled.
func TestExprUnbound(t *testing.T) {
	sc := newScope([]string{"n"})
	for _, c := range []struct{ src, want string }{
		{"i + iter", `expression "i + iter": unknown variable "i"`},
		{"sum(k, 0, 1, iter) + i", `expression "sum(k, 0, 1, iter) + i": unknown variable "iter"`},
		{"sum(k, 1, 0, iter) + n", `expression "sum(k, 1, 0, iter) + n": unknown variable "n"`},
		{"sum(k, 1, 0, iter)", ""},
		{"sum_ranks(rank)", ""},
	} {
		x, err := sc.expr(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		f := sc.frame()
		f.bind(slotWorld, 3)
		v, err := x.eval(f)
		if c.want == "" && (err != nil || v != map[string]float64{"sum(k, 1, 0, iter)": 0, "sum_ranks(rank)": 3}[c.src]) ||
			c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("%s = %v, %v; want the error %q", c.src, v, err, c.want)
		}
	}
	for src, want := range map[string]string{
		"nope + 1": "nope", "sum(k, 0, 1, k) + k": "k", "sum(k, 0, k, 1)": "k", "n + sum_ranks(m)": "m",
	} {
		_, err := sc.expr(src)
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(want)) || !strings.Contains(err.Error(), "unknown variable") {
			t.Errorf("%s: %v, want an unknown variable %q at compile time", src, err, want)
		}
	}
	// A frame's bindings restored: unbound again.
	f := sc.frame()
	saved := f.save(slotI)
	f.bind(slotI, 5)
	f.restore(slotI, saved)
	x, _ := sc.expr("i")
	if _, err := x.eval(f); err == nil || errors.Unwrap(err) == nil {
		t.Errorf("i after its binding was restored: %v, want unbound", err)
	}
}
