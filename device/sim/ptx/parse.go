package ptx

import (
	"fmt"
	"slices"
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

	vars     map[string]*symbol // module-scope variables (.shared, .global, .const)
	varOrder []string           // their names in declaration order
	badVars  map[string]bool    // module-scope variables the interpreter refused
	globals  []byte             // the image of the .global and .const variables
	bad      []Unsupported      // module-scope statements refused

	mu         sync.Mutex
	sharedSize int // bytes of shared memory the module and its decoded functions declared
	// moduleShared is the bytes of the module-scope .shared variables
	// (sharedSize once the module is parsed, before any function is
	// decoded): what [Module.Resources] counts for every entry.
	moduleShared int

	stacks sync.Pool // *stacks of exited threads
}

// funcSrc is one function definition as found in the text.
type funcSrc struct {
	name   string
	entry  bool
	rets   []token // the return parameter list, with its parentheses
	header []token // from after the name up to the body's "{"
	body   string  // between the braces
	line   int     // line of the body's first character

	once    sync.Once
	fn      *Func
	err     error
	bad     []Unsupported // the statements decoding refused
	callees []string      // the functions it calls, even when decoding failed
	partial *Func         // what decoding produced, even when it failed
}

// Func is a decoded function.
type Func struct {
	Name      string
	Entry     bool
	code      []inst
	heads     []head // what Run reads first of each instruction of code
	nregs     int
	params    []*symbol // formal parameters in order
	rets      []*symbol // return parameters in order
	frameSize int       // bytes of .param storage of a frame (formals and call arguments)
	localSize int       // bytes of .local storage of a frame
	callees   []string  // the functions it calls
	shared    int       // bytes of the .shared variables its body declares
}

// token is one lexical token and the line it starts on.
type token struct {
	s    string
	line int
}

// Parse parses PTX text. It finds every function definition; the bodies
// are decoded by [Module.Func] (which reports their errors).
func Parse(text string) (*Module, error) {
	m := &Module{funcs: map[string]*funcSrc{}, vars: map[string]*symbol{}, badVars: map[string]bool{}}
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
			// A declaration: forward .func or module-level variable.
			m.declare(stmt)
			stmt = stmt[:0]
			continue
		case "{":
			if len(stmt) > 0 && stmt[len(stmt)-1].s == "=" || inInit(stmt) {
				// The braces of a variable's initializer.
				stmt = append(stmt, tok)
				continue
			}
			if err := m.define(stmt, &lx, tok.line); err != nil {
				return nil, err
			}
			stmt = stmt[:0]
			continue
		}
		stmt = append(stmt, tok)
	}
	if len(m.funcs) == 0 {
		if len(m.bad) > 0 {
			return nil, fmt.Errorf("ptx: line %d: %s", m.bad[0].Line, m.bad[0].Reason)
		}
		return nil, fmt.Errorf("ptx: no function definitions")
	}
	m.moduleShared = m.sharedSize
	return m, nil
}

// inInit reports whether stmt is inside the braces of an initializer
// ("= {" opened and not closed).
func inInit(stmt []token) bool {
	depth, eq := 0, false
	for _, t := range stmt {
		switch t.s {
		case "=":
			eq = true
		case "{":
			depth++
		case "}":
			depth--
		}
	}
	return eq && depth > 0
}

// refuseModule records a module-scope statement the parser refused; the
// functions that use what it declares are refused where they do.
func (m *Module) refuseModule(stmt []token, err error) {
	u := Unsupported{Line: lineOf(stmt), Reason: err.Error()}
	if len(stmt) > 0 {
		u.Inst = stmt[0].s
	}
	var line int
	if n, _ := fmt.Sscanf(u.Reason, "line %d: ", &line); n == 1 {
		u.Line = line
		u.Reason = u.Reason[strings.Index(u.Reason, ": ")+2:]
	}
	m.bad = append(m.bad, u)
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
			// Not a function: skip the block, the rest of the module
			// still loads.
			m.refuseModule(head, fmt.Errorf("line %d: unexpected %q before a block (not a function definition)", head[i].line, head[i].s))
			return lx.skipBlock()
		}
		i++
	}
	if i == 0 || i >= len(head) {
		m.refuseModule(head, fmt.Errorf("line %d: a block outside a function", line))
		return lx.skipBlock()
	}
	var rets []token
	if head[i].s == "(" {
		j := i
		for j < len(head) && head[j].s != ")" {
			j++
		}
		if j+1 >= len(head) {
			return fmt.Errorf("ptx: line %d: bad return parameter list", head[i].line)
		}
		rets = append(rets, head[i:j+1]...)
		i = j + 1
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
	m.funcs[name] = &funcSrc{name: name, entry: entry, rets: rets, header: append([]token(nil), head[i+1:]...),
		body: lx.src[start : lx.pos-1], line: bodyLine}
	if entry {
		m.entries = append(m.entries, name)
	}
	return nil
}

// declare records a module-scope declaration: a .shared variable (an
// .extern one is the dynamic shared memory a launch sizes), a .global or
// .const variable (globals.go). One the interpreter refuses is a problem
// of the module ([Module.AllUnsupported]) and its name is remembered, so
// that a function that uses it is refused there; the rest of the module
// loads. Function prototypes and other directives are skipped.
func (m *Module) declare(stmt []token) {
	i := 0
	for i < len(stmt) && (stmt[i].s == ".visible" || stmt[i].s == ".extern" || stmt[i].s == ".weak") {
		i++
	}
	if i >= len(stmt) {
		return
	}
	extern := i > 0 && slices.ContainsFunc(stmt[:i], func(t token) bool { return t.s == ".extern" })
	var err error
	switch stmt[i].s {
	case ".shared":
		var sym *symbol
		if sym, err = m.varSym(stmt[i+1:], extern); err == nil {
			m.vars[sym.name] = sym
			m.varOrder = append(m.varOrder, sym.name)
		}
	case ".global", ".const":
		if extern {
			err = fmt.Errorf("line %d: an .extern %s variable, which another module defines", stmt[i].line, stmt[i].s)
		} else {
			err = m.globalVar(stmt[i+1:])
		}
	case ".local":
		err = fmt.Errorf("line %d: a module-scope .local variable", stmt[i].line)
	}
	if err == nil {
		return
	}
	m.refuseModule(stmt, err)
	for _, t := range stmt[i+1:] {
		if t.s == "=" {
			break
		}
		if !strings.HasPrefix(t.s, ".") && t.s != "[" && t.s != "]" {
			if _, err := strconv.Atoi(t.s); err != nil {
				m.badVars[t.s] = true
				break
			}
		}
	}
}

// unsupportedVar reports whether name is a module-scope variable of a
// state space the interpreter does not model.
func (m *Module) unsupportedVar(name string) bool { return m.badVars[name] }

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
			return
		}
		markHoists(src.fn.code) // on the declared registers, before they share slots
		allocRegs(src.fn, maxAllocWork)
		makeHeads(src.fn)
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

// isPunct reports whether c is a token by itself: {}[](),;:+@!<>|
func isPunct(c byte) bool {
	switch c {
	case '{', '}', '[', ']', '(', ')', ',', ';', ':', '+', '@', '!', '<', '>', '|':
		return true
	}
	return false
}

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
		case isPunct(c):
			lx.pos++
			return token{s: lx.src[lx.pos-1 : lx.pos], line: lx.line}, true, nil
		default:
			start := lx.pos
			for lx.pos < len(lx.src) {
				if wordBytes[lx.src[lx.pos]] {
					lx.pos++
					continue
				}
				c := lx.src[lx.pos]
				if c == ':' && strings.HasPrefix(lx.src[lx.pos:], "::") && lx.pos > start {
					lx.pos += 2 // a qualifier such as .L1::evict_last
					continue
				}
				if c != '/' || lx.pos+1 < len(lx.src) && (lx.src[lx.pos+1] == '/' || lx.src[lx.pos+1] == '*') {
					break // space, punctuation or a comment
				}
				lx.pos++ // a slash that starts no comment
			}
			if w := lx.src[start:lx.pos]; w == ".loc" || w == ".file" {
				// Debug line directives (nvcc -lineinfo) end at the line's
				// end, without a semicolon, and mean nothing to a run.
				lx.skipLine()
				continue
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

// wordBytes marks the bytes that continue a word whatever follows them:
// neither space, punctuation nor a slash (which may start a comment).
var wordBytes = func() (t [256]bool) {
	for c := range t {
		b := byte(c)
		t[c] = b != ' ' && b != '\t' && b != '\r' && b != '\n' && b != '/' && !isPunct(b)
	}
	return t
}()

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
	symDynShared                  // the dynamic shared memory (.extern .shared), after the static
	symLocal                      // a local variable: in the frame's local memory
	symGlobal                     // a module-scope .global or .const variable: in the module's image
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

	regTypes []typ // declared type of each register
	sinkReg  int   // the register of "_", -1 until used
	bad      []Unsupported
}

type fixup struct {
	inst  int
	label string
	line  int
}

func (m *Module) decode(src *funcSrc) (*Func, error) {
	lx := lexer{src: src.body, line: src.line}
	// Compiled PTX has about one token per five bytes: room for them
	// all at once, rather than a slice grown and copied a dozen times.
	toks := make([]token, 0, len(src.body)/4)
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
	statements := 0 // at least the instructions
	for _, t := range toks {
		if t.s == ";" {
			statements++
		}
	}
	d := &decoder{m: m, src: src, fn: &Func{Name: src.name, Entry: src.entry, code: make([]inst, 0, statements)}, toks: toks,
		labels: map[string]int{}, sinkReg: -1}
	d.scopes = []*scope{newScope()}
	if err := d.header(); err != nil {
		// A parameter list it cannot read: refused at its line.
		d.refuse(nil, err)
		if d.bad[0].Line == 0 {
			d.bad[0].Line = src.line
		}
		d.bad[0].Inst = ".param"
		src.bad = d.bad
		return nil, badError(d.bad)
	}
	for d.i < len(d.toks) {
		start := d.i
		if err := d.statement(); err != nil {
			d.refuse(d.toks[start:d.i], err)
		}
	}
	if len(d.scopes) != 1 {
		return nil, fmt.Errorf("unbalanced braces in the body")
	}
	for _, f := range d.fixups {
		at, ok := d.labels[f.label]
		if !ok {
			d.bad = append(d.bad, Unsupported{Func: src.name, Line: f.line, Inst: "bra", Reason: "unknown label " + f.label})
			continue
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
	src.callees, src.bad, src.partial = d.fn.callees, d.bad, d.fn
	if len(d.bad) > 0 {
		return nil, badError(d.bad)
	}
	// Falling off the end returns.
	d.fn.code = append(d.fn.code, inst{op: opRet, guard: -1, line: lx.line, text: "ret (end of body)"})
	return d.fn, nil
}

// refuse records a statement that failed to decode.
func (d *decoder) refuse(stmt []token, err error) {
	u := Unsupported{Func: d.src.name, Reason: err.Error()}
	if len(stmt) > 0 {
		u.Line = stmt[0].line
	}
	// The mnemonic: the first token after a guard.
	for j := 0; j < len(stmt); j++ {
		if stmt[j].s == "@" {
			j++
			if j < len(stmt) && stmt[j].s == "!" {
				j++
			}
			continue
		}
		u.Inst = stmt[j].s
		break
	}
	var line int
	if n, _ := fmt.Sscanf(u.Reason, "line %d: ", &line); n == 1 {
		u.Line = line
		u.Reason = u.Reason[strings.Index(u.Reason, ": ")+2:]
	}
	d.bad = append(d.bad, u)
}

// header declares the return parameters and the formal parameters, and
// skips performance directives (.maxntid and the like).
func (d *decoder) header() error {
	if r := d.src.rets; len(r) > 0 {
		syms, err := d.paramList(r, symFrameParam)
		if err != nil {
			return err
		}
		d.fn.rets = syms
	}
	h := d.src.header
	if len(h) == 0 || h[0].s != "(" {
		return nil
	}
	end := slices.IndexFunc(h, func(t token) bool { return t.s == ")" })
	if end < 0 {
		return fmt.Errorf("line %d: parameter list not closed", h[0].line)
	}
	kind := symFrameParam
	if d.src.entry {
		kind = symKernelParam
	}
	syms, err := d.paramList(h[:end+1], kind)
	if err != nil {
		return err
	}
	d.fn.params = syms
	return nil
}

// paramList declares the parameters of "( .param ..., ... )".
func (d *decoder) paramList(h []token, kind symKind) ([]*symbol, error) {
	var out []*symbol
	j := 1
	for j < len(h) && h[j].s != ")" {
		k := j
		for k < len(h) && h[k].s != "," && h[k].s != ")" {
			k++
		}
		sym, err := d.paramDecl(h[j:k], kind)
		if err != nil {
			return nil, err
		}
		out = append(out, sym)
		j = k
		if j < len(h) && h[j].s == "," {
			j++
		}
	}
	return out, nil
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

// varSpec parses "[.align N] .TYPE name[[N]]" (or "name[]" when unsized
// is allowed): the name, the size in bytes and the alignment.
func varSpec(ts []token, unsized bool) (name string, size, align int, err error) {
	align = 1
	j := 0
	if len(ts) > 1 && ts[0].s == ".align" {
		n, err := strconv.Atoi(ts[1].s)
		if err != nil || n < 1 || n&(n-1) != 0 {
			return "", 0, 0, fmt.Errorf("line %d: bad alignment %q (not a power of two)", ts[1].line, ts[1].s)
		}
		align = n
		j = 2
	}
	if j+1 >= len(ts) {
		return "", 0, 0, fmt.Errorf("line %d: bad declaration %q", lineOf(ts), joinTokens(ts))
	}
	t, ok := typeNames[ts[j].s]
	if !ok || t == tPred {
		return "", 0, 0, fmt.Errorf("line %d: unsupported variable type %s", ts[j].line, ts[j].s)
	}
	size = t.size()
	if j+1 < len(ts) && ts[j+1].s == ".ptr" {
		// A kernel parameter's pointer attributes (.ptr [.space]
		// [.align N]): what the pointer points to, which changes nothing
		// of the parameter itself.
		j++
		if j+1 < len(ts) && ptrSpaces[ts[j+1].s] {
			j++
		}
		if j+2 < len(ts) && ts[j+1].s == ".align" {
			if n, err := strconv.Atoi(ts[j+2].s); err != nil || n < 1 || n&(n-1) != 0 {
				return "", 0, 0, fmt.Errorf("line %d: bad pointer alignment %q", ts[j+2].line, ts[j+2].s)
			}
			j += 2
		}
		if j+1 >= len(ts) {
			return "", 0, 0, fmt.Errorf("line %d: bad declaration %q", lineOf(ts), joinTokens(ts))
		}
	}
	align = max(align, size)
	name = ts[j+1].s
	count := 1
	rest := ts[j+2:]
	switch {
	case len(rest) == 0:
	case unsized && len(rest) == 2 && rest[0].s == "[" && rest[1].s == "]":
		count = 0
	case len(rest) == 3 && rest[0].s == "[" && rest[2].s == "]":
		n, err := strconv.Atoi(rest[1].s)
		if err != nil || n < 1 {
			return "", 0, 0, fmt.Errorf("line %d: bad array length %q", rest[1].line, rest[1].s)
		}
		count = n
	default:
		return "", 0, 0, fmt.Errorf("line %d: bad declaration %q (initializers and multi-dimensional arrays are not supported)", lineOf(ts), joinTokens(ts))
	}
	return name, size * count, align, nil
}

// varSym makes the symbol of a .shared variable: an extern one is the
// dynamic shared memory, after the static one.
func (m *Module) varSym(ts []token, extern bool) (*symbol, error) {
	name, size, align, err := varSpec(ts, extern)
	if err != nil {
		return nil, err
	}
	if extern {
		return &symbol{name: name, kind: symDynShared}, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	off := alignUp(m.sharedSize, align)
	m.sharedSize = off + size
	return &symbol{name: name, kind: symShared, offset: off, size: size}, nil
}

// varDecl declares "[.align N] .TYPE name[[N]]" of kind.
func (d *decoder) varDecl(ts []token, kind symKind) (*symbol, error) {
	var sym *symbol
	switch kind {
	case symShared:
		s, err := d.m.varSym(ts, false)
		if err != nil {
			return nil, err
		}
		sym = s
		d.fn.shared += s.size
	default:
		name, size, align, err := varSpec(ts, false)
		if err != nil {
			return nil, err
		}
		sym = &symbol{name: name, kind: kind, size: size}
		if kind == symLocal {
			sym.offset = alignUp(d.fn.localSize, align)
			d.fn.localSize = sym.offset + size
		} else {
			sym.offset = alignUp(d.fn.frameSize, align)
			d.fn.frameSize = sym.offset + size
		}
	}
	d.scopes[len(d.scopes)-1].syms[sym.name] = sym
	return sym, nil
}

// ptrSpaces are the state spaces a .ptr parameter may point to.
var ptrSpaces = map[string]bool{".global": true, ".shared": true, ".const": true, ".local": true}

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
	case ".extern":
		if len(ts) > 1 && ts[1].s == ".shared" {
			sym, err := d.m.varSym(ts[2:], true)
			if err != nil {
				return err
			}
			d.scopes[len(d.scopes)-1].syms[sym.name] = sym
			return nil
		}
	case ".local":
		_, err := d.varDecl(ts[1:], symLocal)
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
	rt, ok := typeNames[ts[1].s]
	if !ok || rt == tB8 || rt.simd16() || rt == tF32x2 {
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
			for range n {
				d.newReg(rt)
			}
			rest = rest[4:]
		} else {
			if reservedRegName(name) {
				return fmt.Errorf("line %d: register %s: the name of a special register cannot be declared", rest[0].line, name)
			}
			sc.regs[name] = d.newReg(rt)
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

// reservedRegName reports whether name is a special register's (%tid,
// %clock, ... with or without a component), which ptxas refuses to declare.
func reservedRegName(name string) bool {
	base, _, _ := strings.Cut(name, ".")
	if _, ok := specialNames[name]; ok {
		return true
	}
	for sp := range specialNames {
		if b, _, _ := strings.Cut(sp, "."); b == base {
			return true
		}
	}
	switch base {
	case "%nwarpid", "%smid", "%nsmid", "%gridid", "%clock_hi", "%globaltimer_lo", "%globaltimer_hi",
		"%total_smem_size", "%dynamic_smem_size", "%aggr_smem_size", "%current_graph_exec",
		"%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid", "%cluster_ctarank",
		"%cluster_nctarank", "%is_explicit_cluster":
		return true
	}
	return false
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

// newReg allocates a register of type t.
func (d *decoder) newReg(t typ) int {
	d.regTypes = append(d.regTypes, t)
	d.fn.nregs++
	return d.fn.nregs - 1
}

// regType is the declared type of register r.
func (d *decoder) regType(r int) typ { return d.regTypes[r] }

// sink is a register that discards what is written to it ("_").
func (d *decoder) sink() int {
	if d.sinkReg < 0 {
		d.sinkReg = d.newReg(tB64)
	}
	return d.sinkReg
}

// sym resolves a variable name: the function's scopes, then the module's.
func (d *decoder) sym(name string) *symbol {
	for i := len(d.scopes) - 1; i >= 0; i-- {
		if s, ok := d.scopes[i].syms[name]; ok {
			return s
		}
	}
	return d.m.vars[name]
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
