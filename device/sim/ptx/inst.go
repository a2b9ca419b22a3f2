package ptx

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// typ is a PTX fundamental type.
type typ uint8

const (
	tNone typ = iota
	tB8
	tB16
	tB32
	tB64
	tU8
	tU16
	tU32
	tU64
	tS8
	tS16
	tS32
	tS64
	tF16
	tBF16
	tF32
	tF64
	tPred
)

var typeNames = map[string]typ{
	".b16": tB16, ".b32": tB32, ".b64": tB64,
	".u8": tU8, ".u16": tU16, ".u32": tU32, ".u64": tU64,
	".s8": tS8, ".s16": tS16, ".s32": tS32, ".s64": tS64,
	".f16": tF16, ".bf16": tBF16, ".f32": tF32, ".f64": tF64, ".pred": tPred,
}

func (t typ) size() int {
	switch t {
	case tB8, tU8, tS8:
		return 1
	case tB16, tU16, tS16, tF16, tBF16:
		return 2
	case tB32, tU32, tS32, tF32:
		return 4
	case tB64, tU64, tS64, tF64:
		return 8
	}
	return 1
}

func (t typ) bits() uint { return uint(8 * t.size()) }

func (t typ) signed() bool { return t == tS8 || t == tS16 || t == tS32 || t == tS64 }

func (t typ) float() bool { return t == tF16 || t == tBF16 || t == tF32 || t == tF64 }

// Sem is the memory-ordering semantics of an access.
type Sem uint8

// Semantics: Weak is a plain access; Volatile is ld.volatile/st.volatile
// (relaxed at system scope in the memory model); SC is fence.sc and membar.
const (
	Weak Sem = iota
	Relaxed
	Acquire
	Release
	AcqRel
	Volatile
	SC
)

func (s Sem) String() string {
	return [...]string{"weak", "relaxed", "acquire", "release", "acq_rel", "volatile", "sc"}[s]
}

// Scope is the scope of a strong access or fence.
type Scope uint8

// Scopes.
const (
	CTA Scope = iota
	GPU
	Sys
)

func (s Scope) String() string { return [...]string{"cta", "gpu", "sys"}[s] }

// AtomOp is the operation of an atom instruction.
type AtomOp uint8

// Atomic operations.
const (
	AtomCAS AtomOp = iota
	AtomExch
	AtomAdd
	AtomMin
	AtomMax
	AtomAnd
	AtomOr
	AtomXor
)

func (o AtomOp) String() string {
	return [...]string{"cas", "exch", "add", "min", "max", "and", "or", "xor"}[o]
}

// opcode is an instruction's operation.
type opcode uint8

const (
	opMov opcode = iota
	opAdd
	opSub
	opMul
	opMad
	opDiv
	opRem
	opMin
	opMax
	opAnd
	opOr
	opXor
	opNot
	opShl
	opShr
	opNeg
	opSetp
	opSelp
	opCvt
	opCvta
	opLd
	opSt
	opAtom
	opMembar
	opBar
	opBra
	opRet
	opCall
)

// cmpOp is a setp comparison.
type cmpOp uint8

const (
	cmpEq cmpOp = iota
	cmpNe
	cmpLt
	cmpLe
	cmpGt
	cmpGe
	cmpEqu
	cmpNeu
	cmpLtu
	cmpLeu
	cmpGtu
	cmpGeu
	cmpNum
	cmpNan
)

var cmpNames = map[string]cmpOp{
	"eq": cmpEq, "ne": cmpNe, "lt": cmpLt, "le": cmpLe, "gt": cmpGt, "ge": cmpGe,
	"lo": cmpLt, "ls": cmpLe, "hi": cmpGt, "hs": cmpGe,
	"equ": cmpEqu, "neu": cmpNeu, "ltu": cmpLtu, "leu": cmpLeu, "gtu": cmpGtu, "geu": cmpGeu,
	"num": cmpNum, "nan": cmpNan,
}

// space is a state space.
type space uint8

const (
	spGeneric space = iota
	spGlobal
	spShared
	spParam
)

// Generic-address windows of the parameter and shared state spaces. Device
// virtual addresses lie far above them.
const (
	ParamWindow  = 0x0000_1000_0000_0000
	SharedWindow = 0x0000_2000_0000_0000
	windowSize   = 0x0000_1000_0000_0000
)

// special is a special register.
type special uint8

const (
	spTidX special = iota
	spTidY
	spTidZ
	spNtidX
	spNtidY
	spNtidZ
	spCtaidX
	spCtaidY
	spCtaidZ
	spNctaidX
	spNctaidY
	spNctaidZ
	spLaneid
	spWarpid
	spGlobaltimer
)

var specialNames = map[string]special{
	"%tid.x": spTidX, "%tid.y": spTidY, "%tid.z": spTidZ,
	"%ntid.x": spNtidX, "%ntid.y": spNtidY, "%ntid.z": spNtidZ,
	"%ctaid.x": spCtaidX, "%ctaid.y": spCtaidY, "%ctaid.z": spCtaidZ,
	"%nctaid.x": spNctaidX, "%nctaid.y": spNctaidY, "%nctaid.z": spNctaidZ,
	"%laneid": spLaneid, "%warpid": spWarpid, "%globaltimer": spGlobaltimer,
}

// opKind is an operand's form.
type opKind uint8

const (
	oReg opKind = iota
	oImm
	oSpecial
	oAddr // [base+off] or [sym+off]
	oSym  // a variable's address
	oVec  // {r, r, ...}
	oLabel
)

type operand struct {
	kind opKind
	reg  int
	imm  uint64
	sp   special
	base int // oAddr: base register, -1 for none
	sym  *symbol
	off  int64
	vec  []int
	name string // oLabel: label or function name
}

// inst is one decoded instruction.
type inst struct {
	op     opcode
	t, t2  typ // type; cvt's source type
	cmp    cmpOp
	wide   bool // mul.wide
	hi     bool // mul.hi
	rnd    bool // an explicit .rn
	space  space
	sem    Sem
	scope  Scope
	vec    int // 1, 2 or 4
	aop    AtomOp
	red    bool // bar.red
	guard  int  // predicate register, -1 for none
	neg    bool // @!p
	ops    []operand
	target int // bra
	callee string
	line   int
	text   string // the mnemonic
}

// instruction decodes one instruction statement.
func (d *decoder) instruction(ts []token) error {
	in := inst{guard: -1, vec: 1, line: ts[0].line}
	if ts[0].s == "@" {
		if len(ts) < 3 {
			return fmt.Errorf("line %d: bad guard", ts[0].line)
		}
		j := 1
		if ts[j].s == "!" {
			in.neg = true
			j++
		}
		r, ok := d.reg(ts[j].s)
		if !ok {
			return fmt.Errorf("line %d: unknown guard register %s", ts[j].line, ts[j].s)
		}
		in.guard = r
		ts = ts[j+1:]
		if len(ts) == 0 {
			return fmt.Errorf("line %d: guard without an instruction", in.line)
		}
	}
	in.text = ts[0].s
	if err := d.mnemonic(&in); err != nil {
		return err
	}
	if in.op == opCall {
		return d.call(&in, ts[1:])
	}
	ops, err := d.operands(ts[1:], &in)
	if err != nil {
		return err
	}
	in.ops = ops
	if err := checkArity(&in); err != nil {
		return err
	}
	if in.op == opBra {
		if in.ops[0].kind != oLabel {
			return fmt.Errorf("line %d: bra needs a label", in.line)
		}
		d.fixups = append(d.fixups, fixup{inst: len(d.fn.code), label: in.ops[0].name, line: in.line})
	}
	d.fn.code = append(d.fn.code, in)
	return nil
}

func unsupported(in *inst) error {
	return fmt.Errorf("line %d: unsupported instruction %s", in.line, in.text)
}

// mnemonic decodes the opcode and its modifiers.
func (d *decoder) mnemonic(in *inst) error {
	parts := strings.Split(in.text, ".")
	base, mods := parts[0], parts[1:]
	ops := map[string]opcode{
		"mov": opMov, "add": opAdd, "sub": opSub, "mul": opMul, "mad": opMad, "div": opDiv, "rem": opRem,
		"min": opMin, "max": opMax, "and": opAnd, "or": opOr, "xor": opXor, "not": opNot, "shl": opShl,
		"shr": opShr, "neg": opNeg, "setp": opSetp, "selp": opSelp, "cvt": opCvt, "cvta": opCvta,
		"ld": opLd, "st": opSt, "atom": opAtom, "red": opAtom, "membar": opMembar, "fence": opMembar,
		"bar": opBar, "barrier": opBar, "bra": opBra, "ret": opRet, "exit": opRet, "call": opCall,
	}
	op, ok := ops[base]
	if !ok {
		return unsupported(in)
	}
	in.op = op
	if base == "red" {
		return fmt.Errorf("line %d: unsupported instruction %s (red without a result)", in.line, in.text)
	}
	var types []typ
	sawSem, sawScope := false, false
	for _, m := range mods {
		if t, ok := typeNames["."+m]; ok {
			types = append(types, t)
			continue
		}
		switch {
		case m == "wide" && op == opMul:
			in.wide = true
		case m == "lo" && (op == opMul || op == opMad):
		case m == "hi" && (op == opMul || op == opMad):
			in.hi = true
		case m == "rn" && (op == opAdd || op == opSub || op == opMul || op == opDiv || op == opCvt):
			in.rnd = true
		case m == "uni" && (op == opBra || op == opCall):
		case m == "to" && op == opCvta:
		case m == "global" && (op == opLd || op == opSt || op == opAtom || op == opCvta):
			in.space = spGlobal
		case m == "shared" && (op == opLd || op == opSt || op == opAtom || op == opCvta):
			in.space = spShared
		case m == "param" && (op == opLd || op == opSt || op == opCvta):
			in.space = spParam
		case (m == "v2" || m == "v4") && (op == opLd || op == opSt):
			in.vec = int(m[1] - '0')
		case op == opSetp:
			c, ok := cmpNames[m]
			if !ok {
				return unsupported(in)
			}
			in.cmp = c
		case op == opAtom && atomOps[m] != 0:
			in.aop = atomOps[m] - 1
		case (op == opLd || op == opSt || op == opAtom || op == opMembar) && semNames[m] != 0:
			in.sem = semNames[m] - 1
			sawSem = true
		case (op == opLd || op == opSt || op == opAtom || op == opMembar) && scopeNames[m] != 0:
			in.scope = scopeNames[m] - 1
			sawScope = true
		case op == opBar && (m == "sync" || m == "aligned" || m == "cta"):
		case op == opBar && m == "red":
			in.red = true
		case op == opBar && in.red && m == "or":
		default:
			return unsupported(in)
		}
	}
	switch op {
	case opCvt:
		if len(types) != 2 {
			return unsupported(in)
		}
		in.t, in.t2 = types[0], types[1]
	case opBar, opBra, opRet, opCall, opMembar:
		if len(types) > 0 && !(op == opBar && in.red && types[0] == tPred) {
			return unsupported(in)
		}
	default:
		if len(types) != 1 {
			return unsupported(in)
		}
		in.t = types[0]
	}
	switch op {
	case opLd, opSt:
		if sawScope && !sawSem {
			return unsupported(in)
		}
		if in.sem == Volatile {
			in.scope = Sys
		}
		if sawSem && in.sem != Weak && in.sem != Volatile && !sawScope {
			return fmt.Errorf("line %d: %s needs a scope", in.line, in.text)
		}
		if in.sem == SC || (op == opLd && (in.sem == Release || in.sem == AcqRel)) || (op == opSt && (in.sem == Acquire || in.sem == AcqRel)) {
			return unsupported(in)
		}
	case opAtom:
		if !sawSem {
			in.sem = Relaxed
		}
		if !sawScope {
			in.scope = GPU
		}
		if in.sem == Weak || in.sem == Volatile || in.sem == SC {
			return unsupported(in)
		}
	case opMembar:
		if parts[0] == "membar" {
			// membar.{cta,gl,sys}: a fence.sc of that scope.
			switch {
			case len(mods) == 1 && mods[0] == "cta":
				in.scope = CTA
			case len(mods) == 1 && mods[0] == "gl":
				in.scope = GPU
			case len(mods) == 1 && mods[0] == "sys":
				in.scope = Sys
			default:
				return unsupported(in)
			}
			in.sem = SC
		} else if !sawScope || (in.sem != SC && in.sem != AcqRel) {
			return unsupported(in)
		}
	case opBar:
		if parts[0] == "barrier" && !strings.Contains(in.text, "sync") {
			return unsupported(in)
		}
	case opDiv:
		if in.t.float() && in.t != tF32 {
			return unsupported(in)
		}
		if in.t == tF32 && !in.rnd {
			return fmt.Errorf("line %d: %s: only the IEEE division div.rn.f32 is supported", in.line, in.text)
		}
	case opAdd, opSub, opMul:
		if in.t.float() && in.t != tF32 {
			return unsupported(in)
		}
	case opMad:
		if in.t.float() {
			return unsupported(in)
		}
	}
	return nil
}

// membar mnemonics parse their scope by hand; these maps hold the others
// (value+1 so that 0 means absent).
var (
	semNames   = map[string]Sem{"relaxed": Relaxed + 1, "acquire": Acquire + 1, "release": Release + 1, "acq_rel": AcqRel + 1, "volatile": Volatile + 1, "weak": Weak + 1, "sc": SC + 1}
	scopeNames = map[string]Scope{"cta": CTA + 1, "gpu": GPU + 1, "sys": Sys + 1, "gl": GPU + 1}
	atomOps    = map[string]AtomOp{"cas": AtomCAS + 1, "exch": AtomExch + 1, "add": AtomAdd + 1, "min": AtomMin + 1, "max": AtomMax + 1, "and": AtomAnd + 1, "or": AtomOr + 1, "xor": AtomXor + 1}
)

// operands decodes a comma-separated operand list.
func (d *decoder) operands(ts []token, in *inst) ([]operand, error) {
	var out []operand
	for len(ts) > 0 {
		end := 0
		depth := 0
		for end < len(ts) {
			s := ts[end].s
			if s == "[" || s == "{" || s == "(" {
				depth++
			} else if s == "]" || s == "}" || s == ")" {
				depth--
			} else if s == "," && depth == 0 {
				break
			}
			end++
		}
		o, err := d.operand(ts[:end], in)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
		ts = ts[end:]
		if len(ts) > 0 {
			ts = ts[1:]
		}
	}
	return out, nil
}

func (d *decoder) operand(ts []token, in *inst) (operand, error) {
	if len(ts) == 0 {
		return operand{}, fmt.Errorf("line %d: %s: empty operand", in.line, in.text)
	}
	bad := func() (operand, error) {
		return operand{}, fmt.Errorf("line %d: %s: bad operand %q", in.line, in.text, joinTokens(ts))
	}
	switch ts[0].s {
	case "[":
		if ts[len(ts)-1].s != "]" {
			return bad()
		}
		return d.address(ts[1:len(ts)-1], in)
	case "{":
		if ts[len(ts)-1].s != "}" {
			return bad()
		}
		o := operand{kind: oVec}
		for j := 1; j < len(ts)-1; j += 2 {
			r, ok := d.reg(ts[j].s)
			if !ok {
				return bad()
			}
			o.vec = append(o.vec, r)
			if ts[j+1].s != "," && ts[j+1].s != "}" {
				return bad()
			}
		}
		return o, nil
	}
	if len(ts) != 1 {
		return bad()
	}
	s := ts[0].s
	if sp, ok := specialNames[s]; ok {
		return operand{kind: oSpecial, sp: sp}, nil
	}
	if strings.HasPrefix(s, "%") {
		r, ok := d.reg(s)
		if !ok {
			return operand{}, fmt.Errorf("line %d: %s: unknown register %s", in.line, in.text, s)
		}
		return operand{kind: oReg, reg: r}, nil
	}
	if v, ok := immediate(s); ok {
		return operand{kind: oImm, imm: v}, nil
	}
	if sym := d.sym(s); sym != nil {
		return operand{kind: oSym, sym: sym}, nil
	}
	return operand{kind: oLabel, name: s}, nil
}

// address decodes the inside of [ ]: reg, sym, imm, reg+imm or sym+imm.
func (d *decoder) address(ts []token, in *inst) (operand, error) {
	o := operand{kind: oAddr, base: -1}
	bad := func() (operand, error) {
		return operand{}, fmt.Errorf("line %d: %s: bad address [%s]", in.line, in.text, joinTokens(ts))
	}
	if len(ts) != 1 && (len(ts) != 3 || ts[1].s != "+") {
		return bad()
	}
	s := ts[0].s
	switch {
	case strings.HasPrefix(s, "%"):
		r, ok := d.reg(s)
		if !ok {
			return operand{}, fmt.Errorf("line %d: %s: unknown register %s", in.line, in.text, s)
		}
		o.base = r
	default:
		if v, ok := immediate(s); ok && len(ts) == 1 {
			o.off = int64(v)
			return o, nil
		}
		o.sym = d.sym(s)
		if o.sym == nil {
			return operand{}, fmt.Errorf("line %d: %s: unknown variable %s", in.line, in.text, s)
		}
	}
	if len(ts) == 3 {
		v, ok := immediate(ts[2].s)
		if !ok {
			return bad()
		}
		o.off = int64(v)
	}
	return o, nil
}

// immediate parses an integer (decimal, 0x hex, negative) or a float
// written as 0fXXXXXXXX (f32 bits) or 0dXXXXXXXXXXXXXXXX (f64 bits).
func immediate(s string) (uint64, bool) {
	if len(s) == 0 || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
		return 0, false
	}
	if len(s) == 10 && (strings.HasPrefix(s, "0f") || strings.HasPrefix(s, "0F")) {
		v, err := strconv.ParseUint(s[2:], 16, 32)
		return v, err == nil
	}
	if len(s) == 18 && (strings.HasPrefix(s, "0d") || strings.HasPrefix(s, "0D")) {
		v, err := strconv.ParseUint(s[2:], 16, 64)
		return v, err == nil
	}
	s = strings.TrimSuffix(s, "U")
	if v, err := strconv.ParseInt(s, 0, 64); err == nil {
		return uint64(v), true
	}
	v, err := strconv.ParseUint(s, 0, 64)
	return v, err == nil
}

// call decodes "call[.uni] func, (args)" (no return values).
func (d *decoder) call(in *inst, ts []token) error {
	if len(ts) == 0 {
		return fmt.Errorf("line %d: call without a target", in.line)
	}
	if ts[0].s == "(" {
		return fmt.Errorf("line %d: calls with return values are not supported", in.line)
	}
	in.callee = ts[0].s
	ts = ts[1:]
	if len(ts) > 0 {
		if ts[0].s != "," || len(ts) < 3 || ts[1].s != "(" || ts[len(ts)-1].s != ")" {
			return fmt.Errorf("line %d: bad call arguments %q", in.line, joinTokens(ts))
		}
		for j := 2; j < len(ts)-1; j += 2 {
			sym := d.sym(ts[j].s)
			if sym == nil || sym.kind != symFrameParam {
				return fmt.Errorf("line %d: call argument %s is not a declared .param", in.line, ts[j].s)
			}
			in.ops = append(in.ops, operand{kind: oSym, sym: sym})
			if ts[j+1].s != "," && ts[j+1].s != ")" {
				return fmt.Errorf("line %d: bad call arguments %q", in.line, joinTokens(ts))
			}
		}
	}
	d.fn.code = append(d.fn.code, *in)
	return nil
}

// checkArity checks the operand count and kinds of an instruction.
func checkArity(in *inst) error {
	want := map[opcode]int{
		opMov: 2, opAdd: 3, opSub: 3, opMul: 3, opMad: 4, opDiv: 3, opRem: 3, opMin: 3, opMax: 3,
		opAnd: 3, opOr: 3, opXor: 3, opNot: 2, opShl: 3, opShr: 3, opNeg: 2, opSelp: 4, opCvt: 2,
		opCvta: 2, opLd: 2, opSt: 2, opMembar: 0, opBra: 1, opRet: 0,
	}
	n := len(in.ops)
	bad := func() error {
		return fmt.Errorf("line %d: %s: unexpected operands", in.line, in.text)
	}
	switch in.op {
	case opSetp:
		if n != 3 || in.ops[0].kind != oReg {
			return bad()
		}
	case opAtom:
		if n != 3+boolInt(in.aop == AtomCAS) || in.ops[0].kind != oReg || in.ops[1].kind != oAddr {
			return bad()
		}
		if in.t.size() != 4 && in.t.size() != 8 {
			return unsupported(in)
		}
	case opBar:
		if in.red {
			if n != 3 && n != 4 {
				return bad()
			}
		} else if n != 1 && n != 2 {
			return bad()
		}
	case opLd, opSt:
		if n != 2 {
			return bad()
		}
		data, addr := in.ops[0], in.ops[1]
		if in.op == opSt {
			data, addr = addr, data
		}
		if addr.kind != oAddr {
			return bad()
		}
		if in.vec > 1 && (data.kind != oVec || len(data.vec) != in.vec) {
			return bad()
		}
		if in.vec == 1 && data.kind != oReg && !(in.op == opSt && data.kind == oImm) {
			return bad()
		}
	default:
		if w, ok := want[in.op]; ok && n != w {
			return bad()
		}
		if n > 0 && in.op != opBra && in.ops[0].kind != oReg {
			return bad()
		}
		for _, o := range in.ops[min(n, 1):] {
			if o.kind == oAddr || o.kind == oVec || (o.kind == oLabel && in.op != opBra) {
				return bad()
			}
		}
	}
	if in.op == opMov && in.ops[1].kind == oSym && in.ops[1].sym.kind == symFrameParam {
		return fmt.Errorf("line %d: %s: the address of a function parameter is not supported", in.line, in.text)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// f32 reads the low 32 bits of a register as a float32.
func f32(v uint64) float32 { return math.Float32frombits(uint32(v)) }
