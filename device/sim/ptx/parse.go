package ptx

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Module is a parsed PTX module: its functions, each decoded into
// instructions the first time it is used.
type Module struct {
	funcs   map[string]*funcSrc
	entries []string

	mu         sync.Mutex
	sharedSize int // bytes of shared memory the decoded functions declared
}

// funcSrc is one function definition as found in the text.
type funcSrc struct {
	name   string
	entry  bool
	header []token // from after the name up to the body's "{"
	body   string  // between the braces
	line   int     // line of the body's first character

	once sync.Once
	fn   *Func
	err  error
}

// Func is a decoded function.
type Func struct {
	Name      string
	Entry     bool
	code      []inst
	nregs     int
	params    []*symbol // formal parameters in order
	frameSize int       // bytes of .param storage of a frame (formals and call arguments)
	callees   []string  // the functions it calls
}

// token is one lexical token and the line it starts on.
type token struct {
	s    string
	line int
}

// Parse parses PTX text. It finds every function definition; the bodies
// are decoded by [Module.Func] (which reports their errors).
func Parse(text string) (*Module, error) {
	m := &Module{funcs: map[string]*funcSrc{}}
	lx := lexer{src: text, line: 1}
	var stmt []token
	for {
		tok, ok, err := lx.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			if len(stmt) > 0 {
				return nil, fmt.Errorf("ptx: line %d: unterminated declaration %q", stmt[0].line, joinTokens(stmt))
			}
			break
		}
		if len(stmt) == 0 && (tok.s == ".version" || tok.s == ".target" || tok.s == ".address_size") {
			lx.skipLine()
			continue
		}
		switch tok.s {
		case ";":
			stmt = stmt[:0] // a declaration: forward .func or module-level variable
			continue
		case "{":
			if err := m.define(stmt, &lx, tok.line); err != nil {
				return nil, err
			}
			stmt = stmt[:0]
			continue
		}
		stmt = append(stmt, tok)
	}
	if len(m.funcs) == 0 {
		return nil, fmt.Errorf("ptx: no function definitions")
	}
	return m, nil
}

// define records the function whose header is head and whose body starts
// after the "{" the lexer just read.
func (m *Module) define(head []token, lx *lexer, line int) error {
	entry := false
	i := 0
	for i < len(head) && strings.HasPrefix(head[i].s, ".") {
		switch head[i].s {
		case ".entry":
			entry = true
		case ".func":
		case ".visible", ".weak", ".extern":
		default:
			return fmt.Errorf("ptx: line %d: unexpected %q before a function body", head[i].line, head[i].s)
		}
		i++
	}
	if i == 0 || i >= len(head) {
		return fmt.Errorf("ptx: line %d: a block outside a function", line)
	}
	if head[i].s == "(" {
		return fmt.Errorf("ptx: line %d: functions with return values are not supported", head[i].line)
	}
	name := head[i].s
	start := lx.pos
	bodyLine := lx.line
	if err := lx.skipBlock(); err != nil {
		return fmt.Errorf("ptx: function %s: %w", name, err)
	}
	if _, dup := m.funcs[name]; dup {
		return fmt.Errorf("ptx: line %d: function %s defined twice", head[i].line, name)
	}
	m.funcs[name] = &funcSrc{name: name, entry: entry, header: append([]token(nil), head[i+1:]...),
		body: lx.src[start : lx.pos-1], line: bodyLine}
	if entry {
		m.entries = append(m.entries, name)
	}
	return nil
}

// Entries lists the module's kernel entry points, sorted.
func (m *Module) Entries() []string {
	out := append([]string(nil), m.entries...)
	sort.Strings(out)
	return out
}

// Func returns the decoded function name, decoding it on first use.
func (m *Module) Func(name string) (*Func, error) {
	src := m.funcs[name]
	if src == nil {
		return nil, fmt.Errorf("ptx: no function %q in the module", name)
	}
	src.once.Do(func() {
		src.fn, src.err = m.decode(src)
		if src.err != nil {
			src.err = fmt.Errorf("ptx: function %s: %w", name, src.err)
		}
	})
	return src.fn, src.err
}

// Check decodes every function, reporting the first error.
func (m *Module) Check() error {
	names := make([]string, 0, len(m.funcs))
	for n := range m.funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := m.Func(n); err != nil {
			return err
		}
	}
	return nil
}

// lexer splits PTX text into tokens.
type lexer struct {
	src  string
	pos  int
	line int
}

const punct = "{}[](),;:+@!<>|"

// next returns the next token; ok is false at the end of the text.
func (lx *lexer) next() (token, bool, error) {
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case c == '\n':
			lx.line++
			lx.pos++
		case c == ' ' || c == '\t' || c == '\r':
			lx.pos++
		case c == '/' && strings.HasPrefix(lx.src[lx.pos:], "//"):
			lx.skipLine()
		case c == '/' && strings.HasPrefix(lx.src[lx.pos:], "/*"):
			end := strings.Index(lx.src[lx.pos+2:], "*/")
			if end < 0 {
				return token{}, false, fmt.Errorf("ptx: line %d: unterminated comment", lx.line)
			}
			lx.line += strings.Count(lx.src[lx.pos:lx.pos+2+end], "\n")
			lx.pos += end + 4
		case strings.IndexByte(punct, c) >= 0:
			lx.pos++
			return token{s: lx.src[lx.pos-1 : lx.pos], line: lx.line}, true, nil
		default:
			start := lx.pos
			for lx.pos < len(lx.src) {
				c := lx.src[lx.pos]
				if c == ' ' || c == '\t' || c == '\r' || c == '\n' || strings.IndexByte(punct, c) >= 0 ||
					(c == '/' && lx.pos+1 < len(lx.src) && (lx.src[lx.pos+1] == '/' || lx.src[lx.pos+1] == '*')) {
					break
				}
				lx.pos++
			}
			return token{s: lx.src[start:lx.pos], line: lx.line}, true, nil
		}
	}
	return token{}, false, nil
}

// skipLine moves to the start of the next line.
func (lx *lexer) skipLine() {
	for lx.pos < len(lx.src) && lx.src[lx.pos] != '\n' {
		lx.pos++
	}
}

// skipBlock moves past the "}" matching a "{" already read.
func (lx *lexer) skipBlock() error {
	depth := 1
	start := lx.line
	for {
		tok, ok, err := lx.next()
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("line %d: body not closed", start)
		}
		switch tok.s {
		case "{":
			depth++
		case "}":
			depth--
			if depth == 0 {
				return nil
			}
		}
	}
}

func joinTokens(ts []token) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.s)
	}
	return b.String()
}

// symKind is what a symbol names.
type symKind int

const (
	symKernelParam symKind = iota // an entry's parameter: in the launch's argument bytes
	symFrameParam                 // a function's parameter or a call argument: in the frame
	symShared                     // a shared variable: in the block's shared memory
)

// symbol is a named variable.
type symbol struct {
	name   string
	kind   symKind
	offset int
	size   int
}

// scope maps names declared in one { } block.
type scope struct {
	regs   map[string]int     // exact register names
	ranges map[string][2]int  // prefix -> (first slot, count) for %r<N>
	syms   map[string]*symbol // .param and .shared variables
}

func newScope() *scope {
	return &scope{regs: map[string]int{}, ranges: map[string][2]int{}, syms: map[string]*symbol{}}
}

// decoder decodes one function body.
type decoder struct {
	m      *Module
	src    *funcSrc
	fn     *Func
	toks   []token
	i      int
	scopes []*scope
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	inst  int
	label string
	line  int
}

func (m *Module) decode(src *funcSrc) (*Func, error) {
	lx := lexer{src: src.body, line: src.line}
	var toks []token
	for {
		t, ok, err := lx.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		toks = append(toks, t)
	}
	d := &decoder{m: m, src: src, fn: &Func{Name: src.name, Entry: src.entry}, toks: toks, labels: map[string]int{}}
	d.scopes = []*scope{newScope()}
	if err := d.header(); err != nil {
		return nil, err
	}
	for d.i < len(d.toks) {
		if err := d.statement(); err != nil {
			return nil, err
		}
	}
	if len(d.scopes) != 1 {
		return nil, fmt.Errorf("unbalanced braces in the body")
	}
	for _, f := range d.fixups {
		at, ok := d.labels[f.label]
		if !ok {
			return nil, fmt.Errorf("line %d: unknown label %s", f.line, f.label)
		}
		d.fn.code[f.inst].target = at
	}
	seen := map[string]bool{}
	for i := range d.fn.code {
		if c := d.fn.code[i].callee; c != "" && !seen[c] {
			seen[c] = true
			d.fn.callees = append(d.fn.callees, c)
		}
	}
	// Falling off the end returns.
	d.fn.code = append(d.fn.code, inst{op: opRet, guard: -1, line: lx.line, text: "ret (end of body)"})
	return d.fn, nil
}

// header declares the formal parameters: ( .param ... , ... ) and skips
// performance directives (.maxntid and the like).
func (d *decoder) header() error {
	h := d.src.header
	if len(h) == 0 || h[0].s != "(" {
		return nil
	}
	j := 1
	for j < len(h) && h[j].s != ")" {
		k := j
		for k < len(h) && h[k].s != "," && h[k].s != ")" {
			k++
		}
		kind := symFrameParam
		if d.src.entry {
			kind = symKernelParam
		}
		sym, err := d.paramDecl(h[j:k], kind)
		if err != nil {
			return err
		}
		d.fn.params = append(d.fn.params, sym)
		j = k
		if j < len(h) && h[j].s == "," {
			j++
		}
	}
	return nil
}

// paramDecl declares ".param [.align N] .TYPE name[[N]]" in the current scope.
func (d *decoder) paramDecl(ts []token, kind symKind) (*symbol, error) {
	if len(ts) < 3 || ts[0].s != ".param" {
		return nil, fmt.Errorf("line %d: bad parameter declaration %q", lineOf(ts), joinTokens(ts))
	}
	sym, err := d.varDecl(ts[1:], kind)
	if err != nil {
		return nil, err
	}
	return sym, nil
}

// varDecl declares "[.align N] .TYPE name[[N]]" of kind.
func (d *decoder) varDecl(ts []token, kind symKind) (*symbol, error) {
	align := 1
	j := 0
	if len(ts) > 1 && ts[0].s == ".align" {
		n, err := strconv.Atoi(ts[1].s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("line %d: bad alignment %q", ts[1].line, ts[1].s)
		}
		align = n
		j = 2
	}
	if j+1 >= len(ts) {
		return nil, fmt.Errorf("line %d: bad declaration %q", lineOf(ts), joinTokens(ts))
	}
	t, ok := typeNames[ts[j].s]
	if !ok && ts[j].s != ".b8" {
		return nil, fmt.Errorf("line %d: unsupported variable type %s", ts[j].line, ts[j].s)
	}
	size := 1
	if ok {
		size = t.size()
	}
	align = max(align, size)
	name := ts[j+1].s
	count := 1
	if j+2 < len(ts) {
		if len(ts) != j+5 || ts[j+2].s != "[" || ts[j+4].s != "]" {
			return nil, fmt.Errorf("line %d: bad declaration %q", lineOf(ts), joinTokens(ts))
		}
		n, err := strconv.Atoi(ts[j+3].s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("line %d: bad array length %q", ts[j+3].line, ts[j+3].s)
		}
		count = n
	}
	sym := &symbol{name: name, kind: kind, size: size * count}
	switch kind {
	case symShared:
		d.m.mu.Lock()
		sym.offset = alignUp(d.m.sharedSize, align)
		d.m.sharedSize = sym.offset + sym.size
		d.m.mu.Unlock()
	default:
		sym.offset = alignUp(d.fn.frameSize, align)
		d.fn.frameSize = sym.offset + sym.size
	}
	d.scopes[len(d.scopes)-1].syms[name] = sym
	return sym, nil
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

func lineOf(ts []token) int {
	if len(ts) == 0 {
		return 0
	}
	return ts[0].line
}

// statement decodes one statement: a brace, a label, a declaration or an
// instruction.
func (d *decoder) statement() error {
	t := d.toks[d.i]
	switch {
	case t.s == "{":
		d.i++
		d.scopes = append(d.scopes, newScope())
		return nil
	case t.s == "}":
		d.i++
		if len(d.scopes) == 1 {
			return fmt.Errorf("line %d: unbalanced }", t.line)
		}
		d.scopes = d.scopes[:len(d.scopes)-1]
		return nil
	case t.s == ";":
		d.i++
		return nil
	case d.i+1 < len(d.toks) && d.toks[d.i+1].s == ":":
		if _, dup := d.labels[t.s]; dup {
			return fmt.Errorf("line %d: label %s defined twice", t.line, t.s)
		}
		d.labels[t.s] = len(d.fn.code)
		d.i += 2
		return nil
	}
	stmt := d.untilSemicolon()
	if strings.HasPrefix(t.s, ".") {
		return d.declaration(stmt)
	}
	return d.instruction(stmt)
}

// untilSemicolon returns the tokens up to the next ";" (consumed).
func (d *decoder) untilSemicolon() []token {
	start := d.i
	for d.i < len(d.toks) && d.toks[d.i].s != ";" {
		d.i++
	}
	stmt := d.toks[start:d.i]
	if d.i < len(d.toks) {
		d.i++
	}
	return stmt
}

func (d *decoder) declaration(ts []token) error {
	switch ts[0].s {
	case ".reg":
		return d.regDecl(ts)
	case ".param":
		_, err := d.paramDecl(ts, symFrameParam)
		return err
	case ".shared":
		_, err := d.varDecl(ts[1:], symShared)
		return err
	case ".pragma", ".loc", ".file", ".section":
		return nil
	}
	return fmt.Errorf("line %d: unsupported declaration %s", ts[0].line, ts[0].s)
}

// regDecl declares ".reg .TYPE %name" or ".reg .TYPE %prefix<N>", possibly
// several separated by commas.
func (d *decoder) regDecl(ts []token) error {
	if len(ts) < 3 {
		return fmt.Errorf("line %d: bad register declaration %q", ts[0].line, joinTokens(ts))
	}
	if _, ok := typeNames[ts[1].s]; !ok {
		return fmt.Errorf("line %d: unsupported register type %s", ts[1].line, ts[1].s)
	}
	sc := d.scopes[len(d.scopes)-1]
	rest := ts[2:]
	for len(rest) > 0 {
		name := rest[0].s
		if len(rest) >= 4 && rest[1].s == "<" && rest[3].s == ">" {
			n, err := strconv.Atoi(rest[2].s)
			if err != nil || n < 0 {
				return fmt.Errorf("line %d: bad register count %q", rest[2].line, rest[2].s)
			}
			sc.ranges[name] = [2]int{d.fn.nregs, n}
			d.fn.nregs += n
			rest = rest[4:]
		} else {
			sc.regs[name] = d.fn.nregs
			d.fn.nregs++
			rest = rest[1:]
		}
		if len(rest) > 0 {
			if rest[0].s != "," {
				return fmt.Errorf("line %d: bad register declaration %q", ts[0].line, joinTokens(ts))
			}
			rest = rest[1:]
		}
	}
	return nil
}

// reg resolves a register name in the innermost scope that declares it.
func (d *decoder) reg(name string) (int, bool) {
	prefix, num := splitNumber(name)
	for i := len(d.scopes) - 1; i >= 0; i-- {
		sc := d.scopes[i]
		if r, ok := sc.regs[name]; ok {
			return r, true
		}
		if num >= 0 {
			if rg, ok := sc.ranges[prefix]; ok && num < rg[1] {
				return rg[0] + num, true
			}
		}
	}
	return 0, false
}

// sym resolves a variable name.
func (d *decoder) sym(name string) *symbol {
	for i := len(d.scopes) - 1; i >= 0; i-- {
		if s, ok := d.scopes[i].syms[name]; ok {
			return s
		}
	}
	return nil
}

// splitNumber splits "%r12" into "%r" and 12; num is -1 without digits.
func splitNumber(name string) (prefix string, num int) {
	j := len(name)
	for j > 0 && name[j-1] >= '0' && name[j-1] <= '9' {
		j--
	}
	if j == len(name) || j == 0 {
		return name, -1
	}
	n, err := strconv.Atoi(name[j:])
	if err != nil {
		return name, -1
	}
	return name[:j], n
}
