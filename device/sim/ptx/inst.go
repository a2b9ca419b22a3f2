package ptx

import (
	"fmt"
	"slices"
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
	tF16x2
	tBF16x2
	tU16x2  // two u16 lanes (min, max)
	tS16x2  // two s16 lanes (min, max)
	tF32x2  // two f32 lanes in 64 bits (add, sub, mul, fma)
	tE4M3x2 // two fp8 e4m3 values (cvt only)
	tE5M2x2 // two fp8 e5m2 values (cvt only)
)

var typeNames = map[string]typ{
	".b16": tB16, ".b32": tB32, ".b64": tB64,
	".u8": tU8, ".u16": tU16, ".u32": tU32, ".u64": tU64,
	".s8": tS8, ".s16": tS16, ".s32": tS32, ".s64": tS64,
	".f16": tF16, ".bf16": tBF16, ".f32": tF32, ".f64": tF64, ".pred": tPred,
	".f16x2": tF16x2, ".bf16x2": tBF16x2, ".b8": tB8,
	".u16x2": tU16x2, ".s16x2": tS16x2, ".f32x2": tF32x2,
}

// fp8Names are the fp8 pair types, which only cvt takes.
var fp8Names = map[string]typ{"e4m3x2": tE4M3x2, "e5m2x2": tE5M2x2}

// typeInfo is what the interpreter asks of a type at every instruction:
// its size in bytes and its kind, indexed by typ (a table, as a switch
// costs a few branches each time).
var typeInfo = [...]struct {
	size          uint8
	signed, float bool
}{
	tNone: {size: 1}, tPred: {size: 1},
	tB8: {size: 1}, tU8: {size: 1}, tS8: {size: 1, signed: true},
	tB16: {size: 2}, tU16: {size: 2}, tS16: {size: 2, signed: true},
	tF16: {size: 2, float: true}, tBF16: {size: 2, float: true},
	tB32: {size: 4}, tU32: {size: 4}, tS32: {size: 4, signed: true}, tF32: {size: 4, float: true},
	tF16x2: {size: 4, float: true}, tBF16x2: {size: 4, float: true},
	tU16x2: {size: 4}, tS16x2: {size: 4, signed: true}, tF32x2: {size: 8, float: true},
	tE4M3x2: {size: 2}, tE5M2x2: {size: 2},
	tB64: {size: 8}, tU64: {size: 8}, tS64: {size: 8, signed: true}, tF64: {size: 8, float: true},
}

func (t typ) size() int { return int(typeInfo[t].size) }

func (t typ) bits() uint { return uint(8 * t.size()) }

func (t typ) signed() bool { return typeInfo[t].signed }

func (t typ) float() bool { return typeInfo[t].float }

// packed reports whether t is a pair of 16-bit floats in 32 bits.
func (t typ) packed() bool { return t == tF16x2 || t == tBF16x2 }

// scalar is the element type of a packed type, t itself otherwise.
func (t typ) scalar() typ {
	switch t {
	case tF16x2:
		return tF16
	case tBF16x2:
		return tBF16
	case tF32x2:
		return tF32
	}
	return t
}

// simd16 reports whether t is a pair of 16-bit integers in 32 bits.
func (t typ) simd16() bool { return t == tU16x2 || t == tS16x2 }

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

// AtomOp is the operation of an atom or red instruction.
type AtomOp uint8

// Atomic operations. Min and Max compare unsigned, MinS and MaxS signed;
// AddF adds floats of the access's size (f32 flushing subnormals, f64
// exact); Inc and Dec are atom.inc and atom.dec.
const (
	AtomCAS AtomOp = iota
	AtomExch
	AtomAdd
	AtomMin
	AtomMax
	AtomAnd
	AtomOr
	AtomXor
	AtomMinS
	AtomMaxS
	AtomAddF
	AtomInc
	AtomDec
)

func (o AtomOp) String() string {
	return [...]string{"cas", "exch", "add", "min", "max", "and", "or", "xor", "min.s", "max.s", "add.f", "inc", "dec"}[o]
}

// opcode is an instruction's operation.
type opcode uint8

const (
	opMov opcode = iota
	opAdd
	opSub
	opMul
	opMad
	opFma
	opDiv
	opRem
	opMin
	opMax
	opAbs
	opNeg
	opAnd
	opOr
	opXor
	opNot
	opCnot
	opShl
	opShr
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
	opPrmt
	opLop3
	opBfe
	opBfi
	opPopc
	opClz
	opBrev
	opShfl
	opVote
	opActivemask
	opTrap
	opNop
	opHint       // prefetch, prefetchu, griddepcontrol: no effect on what the interpreter models
	opWarpSync   // bar.warp.sync
	opPrintf     // a call of vprintf (printf.go)
	opRsqrt      // rsqrt.approx.f32 (rsqrt.go)
	opMapa       // mapa: the address of a variable in a block of the cluster
	opClusterBar // barrier.cluster.arrive and .wait (cluster.go)
)

var opNames = map[string]opcode{
	"mov": opMov, "add": opAdd, "sub": opSub, "mul": opMul, "mad": opMad, "fma": opFma, "div": opDiv,
	"rem": opRem, "min": opMin, "max": opMax, "abs": opAbs, "neg": opNeg, "and": opAnd, "or": opOr,
	"xor": opXor, "not": opNot, "cnot": opCnot, "shl": opShl, "shr": opShr, "setp": opSetp,
	"selp": opSelp, "cvt": opCvt, "cvta": opCvta, "ld": opLd, "st": opSt, "atom": opAtom, "red": opAtom,
	"membar": opMembar, "fence": opMembar, "bar": opBar, "barrier": opBar, "bra": opBra, "ret": opRet,
	"exit": opRet, "call": opCall, "prmt": opPrmt, "lop3": opLop3, "bfe": opBfe, "bfi": opBfi,
	"popc": opPopc, "clz": opClz, "brev": opBrev, "shfl": opShfl, "vote": opVote,
	"activemask": opActivemask, "trap": opTrap, "nanosleep": opNop,
	"prefetch": opHint, "prefetchu": opHint, "griddepcontrol": opHint, "rsqrt": opRsqrt, "mapa": opMapa,
}

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
	spLocal
	spConst
)

// Generic-address windows of the parameter, shared and local state
// spaces. Device virtual addresses lie far above them.
const (
	ParamWindow  = 0x0000_1000_0000_0000
	SharedWindow = 0x0000_2000_0000_0000
	LocalWindow  = 0x0000_4000_0000_0000
	// GlobalVarWindow is where the module-scope .global and .const
	// variables appear (read-only; see globals.go).
	GlobalVarWindow = 0x0000_5000_0000_0000
	windowSize      = 0x0000_1000_0000_0000
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
	spClock
	spClock64
	spLanemaskEq
	spLanemaskLt
	spLanemaskLe
	spLanemaskGt
	spLanemaskGe
	// The cluster registers, with the values of a cluster of one block
	// (the simulator launches no explicit clusters).
	spClusteridX
	spNclusteridX
	spZero // %clusterid.y/.z, %cluster_ctaid.*, %cluster_ctarank, %is_explicit_cluster
	spOne  // %nclusterid.y/.z, %cluster_nctaid.*, %cluster_nctarank
)

var specialNames = map[string]special{
	"%tid.x": spTidX, "%tid.y": spTidY, "%tid.z": spTidZ,
	"%ntid.x": spNtidX, "%ntid.y": spNtidY, "%ntid.z": spNtidZ,
	"%ctaid.x": spCtaidX, "%ctaid.y": spCtaidY, "%ctaid.z": spCtaidZ,
	"%nctaid.x": spNctaidX, "%nctaid.y": spNctaidY, "%nctaid.z": spNctaidZ,
	"%laneid": spLaneid, "%warpid": spWarpid, "%globaltimer": spGlobaltimer,
	"%clock": spClock, "%clock64": spClock64,
	"%lanemask_eq": spLanemaskEq, "%lanemask_lt": spLanemaskLt, "%lanemask_le": spLanemaskLe,
	"%lanemask_gt": spLanemaskGt, "%lanemask_ge": spLanemaskGe,
	"%clusterid.x": spClusteridX, "%clusterid.y": spZero, "%clusterid.z": spZero,
	"%nclusterid.x": spNclusteridX, "%nclusterid.y": spOne, "%nclusterid.z": spOne,
	"%cluster_ctaid.x": spZero, "%cluster_ctaid.y": spZero, "%cluster_ctaid.z": spZero,
	"%cluster_nctaid.x": spOne, "%cluster_nctaid.y": spOne, "%cluster_nctaid.z": spOne,
	"%cluster_ctarank": spZero, "%cluster_nctarank": spOne, "%is_explicit_cluster": spZero,
}

// opKind is an operand's form.
type opKind uint8

const (
	oReg opKind = iota
	oImm
	oSpecial
	oAddr // [base+off] or [sym+off]
	oSym  // a variable's address
	oVec  // {r, r, ...} or p|q
	oLabel
)

type operand struct {
	kind opKind
	not  bool // a negated predicate: !p
	reg  int
	imm  uint64
	sp   special
	base int // oAddr: base register, -1 for none
	sym  *symbol
	off  int64
	vec  []int
	name string // oLabel: label or function name
}

// Modes of prmt, shfl and vote (inst.mode).
const (
	prmtGeneric = iota
	prmtF4e
	prmtB4e
	prmtRc8
	prmtEcl
	prmtEcr
	prmtRc16
)

const (
	shflUp = iota
	shflDown
	shflBfly
	shflIdx
)

const (
	voteAll = iota
	voteAny
	voteUni
	voteBallot
)

var (
	prmtModes = map[string]uint8{"f4e": prmtF4e, "b4e": prmtB4e, "rc8": prmtRc8, "ecl": prmtEcl, "ecr": prmtEcr, "rc16": prmtRc16}
	shflModes = map[string]uint8{"up": shflUp, "down": shflDown, "bfly": shflBfly, "idx": shflIdx}
	voteModes = map[string]uint8{"all": voteAll, "any": voteAny, "uni": voteUni, "ballot": voteBallot}
)

// inst is one decoded instruction.
type inst struct {
	op      opcode
	t, t2   typ // type; cvt's source type
	cmp     cmpOp
	wide    bool // mul.wide, mad.wide
	hi      bool // mul.hi, mad.hi
	rmode   rmode
	irnd    bool // the rounding is to an integer (.rni and the like)
	ftz     bool
	sat     bool
	relu    bool
	satfin  bool // cvt .satfinite
	nanOut  bool // min.NaN, max.NaN
	cvt     cvtRule
	space   space
	sem     Sem
	scope   Scope
	vec     int // 1, 2 or 4
	aop     AtomOp
	noDst   bool  // red: an atom without a result
	nc      bool  // ld.global.nc: a load through the non-coherent path
	bar     uint8 // opBar: barSync, barArrive or barRed
	aligned bool  // opBar: bar, or barrier.aligned (the warp executes this very instruction)
	mode    uint8 // prmt, shfl or vote mode; bar.red's operation
	dstSize uint8 // bytes of the destination register (ld and cvt extend to it)
	guard   int   // predicate register, -1 for none
	neg     bool  // @!p
	ops     []operand
	rets    []operand // call: the return parameters
	target  int       // bra
	// hoist is, for a load or atom, 1 + the index of the store after it
	// that the model lets run first (hoist.go), found at decode; 0 for
	// none.
	hoist  int
	callee string
	trap   string // opTrap: what was reached
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
	if in.noDst {
		// red: the operands of an atom after its (absent) destination.
		in.ops = append([]operand{{kind: oReg, reg: d.sink()}}, in.ops...)
	}
	if err := checkArity(&in); err != nil {
		return err
	}
	if len(in.ops) > 0 && in.ops[0].kind == oReg {
		in.dstSize = uint8(d.regType(in.ops[0].reg).size())
	} else if len(in.ops) > 0 && in.ops[0].kind == oVec {
		in.dstSize = uint8(d.regType(in.ops[0].vec[0]).size())
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

var roundNames = map[string]rmode{"rn": rnEven, "rz": rnZero, "rm": rnDown, "rp": rnUp,
	"rni": rnEven, "rzi": rnZero, "rmi": rnDown, "rpi": rnUp}

// cacheHints are ld and st modifiers that only steer caches: they change
// nothing the interpreter models.
var cacheHints = map[string]bool{"ca": true, "cg": true, "cs": true, "lu": true, "cv": true, "wb": true, "wt": true,
	"L1::evict_normal": true, "L1::evict_unchanged": true, "L1::evict_first": true, "L1::evict_last": true,
	"L1::no_allocate": true, "L2::evict_normal": true, "L2::evict_first": true, "L2::evict_last": true,
	"L2::64B": true, "L2::128B": true, "L2::256B": true}

// mnemonic decodes the opcode and its modifiers.
func (d *decoder) mnemonic(in *inst) error {
	if why := proxyRefusal(in.text); why != "" {
		return fmt.Errorf("line %d: %s", in.line, why)
	}
	parts := strings.Split(in.text, ".")
	base, mods := parts[0], parts[1:]
	op, ok := opNames[base]
	if !ok {
		return unsupported(in)
	}
	in.op = op
	in.noDst = base == "red"
	if op == opHint {
		return hint(in, base, mods)
	}
	if op == opBar && base == "barrier" && slices.Contains(mods, "cluster") {
		return decodeClusterBar(in, mods)
	}
	if op == opBar && len(mods) == 2 && mods[0] == "warp" && mods[1] == "sync" && base == "bar" {
		in.op = opWarpSync
		return nil
	}
	arith := op == opAdd || op == opSub || op == opMul || op == opMad || op == opFma || op == opDiv
	var types []typ
	sawSem, sawScope, sawSync := false, false, false
	for _, m := range mods {
		if t, ok := typeNames["."+m]; ok {
			types = append(types, t)
			continue
		}
		if t, ok := fp8Names[m]; ok && op == opCvt {
			types = append(types, t)
			continue
		}
		switch {
		case m == "wide" && (op == opMul || op == opMad):
			in.wide = true
		case m == "lo" && (op == opMul || op == opMad):
		case m == "hi" && (op == opMul || op == opMad):
			in.hi = true
		case roundNames[m] != rnNone && (arith || op == opCvt):
			in.rmode = roundNames[m]
			in.irnd = strings.HasSuffix(m, "i")
			if in.irnd && op != opCvt {
				return unsupported(in)
			}
		case m == "ftz" && (arith || op == opMin || op == opMax || op == opAbs || op == opNeg || op == opSetp || op == opCvt || op == opRsqrt):
			in.ftz = true
		case m == "approx" && op == opRsqrt:
			// The only rsqrt there is for f32 (checkModifiers).
		case m == "sat" && (arith || op == opCvt):
			in.sat = true
		case m == "relu" && (op == opCvt || op == opMin || op == opMax):
			in.relu = true
		case m == "satfinite" && op == opCvt:
			in.satfin = true
		case m == "NaN" && (op == opMin || op == opMax):
			in.nanOut = true
		case m == "uni" && (op == opBra || op == opCall):
		case m == "to" && op == opCvta:
		case m == "global" && (op == opLd || op == opSt || op == opAtom || op == opCvta):
			in.space = spGlobal
		case m == "const" && (op == opLd || op == opCvta):
			in.space = spConst
		case m == "shared" && (op == opLd || op == opSt || op == opAtom || op == opCvta):
			in.space = spShared
		case (m == "shared::cta" || m == "shared::cluster") && (op == opLd || op == opSt || op == opAtom):
			// The block's own shared memory: a cluster is one block.
			in.space = spShared
		case m == "shared::cluster" && op == opMapa:
			in.space = spShared
		case m == "param" && (op == opLd || op == opSt || op == opCvta):
			in.space = spParam
		case m == "local" && (op == opLd || op == opSt || op == opCvta):
			in.space = spLocal
		case m == "nc" && op == opLd:
			in.nc = true
		case cacheHints[m] && (op == opLd || op == opSt):
		case (m == "v2" || m == "v4") && (op == opLd || op == opSt):
			in.vec = int(m[1] - '0')
		case op == opSetp && hasCmp(m):
			in.cmp = cmpNames[m]
		case op == opAtom && atomOps[m] != 0:
			in.aop = atomOps[m] - 1
		case (op == opLd || op == opSt || op == opAtom || op == opMembar) && semNames[m] != 0:
			in.sem = semNames[m] - 1
			sawSem = true
		case (op == opLd || op == opSt || op == opAtom || op == opMembar) && scopeNames[m] != 0:
			in.scope = scopeNames[m] - 1
			sawScope = true
		case op == opBar && m == "cta":
		case op == opBar && m == "aligned" && parts[0] == "barrier":
			in.aligned = true
		case op == opBar && m == "sync" && !sawSync && in.bar == barSync:
			sawSync = true
		case op == opBar && m == "arrive" && !sawSync && in.bar == barSync:
			in.bar = barArrive
		case op == opBar && m == "red" && !sawSync && in.bar == barSync:
			in.bar = barRed
		case op == opBar && in.bar == barRed && redNames[m] != 0 && in.mode == 0:
			in.mode = redNames[m]
		case op == opPrmt && prmtModes[m] != 0:
			in.mode = prmtModes[m]
		case (op == opShfl || op == opVote) && m == "sync":
			sawSync = true
		case op == opShfl && hasKey(shflModes, m):
			in.mode = shflModes[m]
		case op == opVote && hasKey(voteModes, m):
			in.mode = voteModes[m]
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
		if isFP8(in.t) || isFP8(in.t2) {
			return decodeCvtFP8(in)
		}
		if in.satfin {
			return unsupported(in)
		}
		if in.t == tPred || in.t2 == tPred || in.t2.packed() || in.t == tB8 || in.t2 == tB8 {
			return unsupported(in)
		}
		return decodeCvt(in)
	case opBar:
		if err := decodeBar(in, types, sawSync); err != nil {
			return err
		}
		in.aligned = in.aligned || parts[0] == "bar" // bar is barrier...aligned
	case opBra, opRet, opCall, opMembar, opTrap:
		if len(types) > 0 {
			return unsupported(in)
		}
	case opShfl, opVote:
		if !sawSync || len(types) != 1 {
			return fmt.Errorf("line %d: unsupported instruction %s (only the .sync forms)", in.line, in.text)
		}
		in.t = types[0]
		if op == opShfl && in.t != tB32 || op == opVote && (in.mode == voteBallot) != (in.t == tB32) ||
			op == opVote && in.mode != voteBallot && in.t != tPred {
			return unsupported(in)
		}
	default:
		if len(types) != 1 {
			return unsupported(in)
		}
		in.t = types[0]
	}
	return d.checkModifiers(in, parts, sawSem, sawScope)
}

func hasKey(m map[string]uint8, k string) bool { _, ok := m[k]; return ok }

func hasCmp(k string) bool { _, ok := cmpNames[k]; return ok }

// checkModifiers refuses the combinations of types and modifiers the
// interpreter does not perform exactly.
func (d *decoder) checkModifiers(in *inst, parts []string, sawSem, sawScope bool) error {
	op, ty := in.op, in.t
	mods := parts[1:]
	if ty.simd16() && op != opMin && op != opMax || ty == tF32x2 && op != opAdd && op != opSub && op != opMul && op != opFma {
		return unsupported(in)
	}
	if in.relu && op != opCvt && ty != tS16x2 {
		return unsupported(in)
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
		if ty == tPred {
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
		if in.noDst && in.aop == AtomCAS || in.noDst && in.aop == AtomExch {
			return unsupported(in)
		}
		switch {
		case ty == tF32 || ty == tF64:
			if in.aop != AtomAdd {
				return unsupported(in)
			}
			in.aop = AtomAddF
		case ty.float() || ty == tB8 || ty == tPred:
			return unsupported(in)
		case ty.signed() && (in.aop == AtomMin || in.aop == AtomMax):
			in.aop += AtomMinS - AtomMin
		case (in.aop == AtomInc || in.aop == AtomDec) && ty != tU32:
			return unsupported(in)
		case (in.aop == AtomAnd || in.aop == AtomOr || in.aop == AtomXor) && ty.signed():
			return unsupported(in)
		}
		if ty.size() != 4 && ty.size() != 8 {
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
	case opAdd, opSub, opMul, opMad, opFma, opDiv:
		return checkArith(in)
	case opMin, opMax:
		if ty.simd16() && (in.ftz || in.nanOut) {
			return unsupported(in)
		}
		if ty == tPred || ty == tB8 || (in.ftz || in.nanOut) && !ty.float() || in.nanOut && ty == tF64 || in.ftz && (ty == tF64 || ty.scalar() == tBF16) {
			return unsupported(in)
		}
	case opAbs, opNeg:
		if ty == tPred || ty == tB8 || !ty.float() && !ty.signed() || in.ftz && (ty == tF64 || ty.scalar() == tBF16) {
			return unsupported(in)
		}
	case opRem:
		if ty.float() || ty == tPred || ty == tB8 {
			return unsupported(in)
		}
	case opAnd, opOr, opXor, opNot, opCnot, opShl, opShr:
		if ty.float() || ty == tB8 || (op == opShl || op == opShr || op == opCnot) && ty == tPred {
			return unsupported(in)
		}
	case opSetp:
		if ty == tPred || ty == tB8 || ty.packed() || in.ftz && ty != tF32 && ty != tF16 ||
			!ty.float() && in.cmp > cmpGe {
			return unsupported(in)
		}
		if !ty.signed() && !ty.float() && in.cmp >= cmpLt && in.cmp <= cmpGe && (ty == tB16 || ty == tB32 || ty == tB64) {
			return fmt.Errorf("line %d: %s: an ordered comparison of untyped bits", in.line, in.text)
		}
	case opSelp, opMov:
		if ty == tB8 || ty.packed() && op == opSelp {
			return unsupported(in)
		}
	case opPrmt, opLop3:
		if ty != tB32 {
			return unsupported(in)
		}
	case opBfe:
		if ty != tU32 && ty != tS32 && ty != tU64 && ty != tS64 {
			return unsupported(in)
		}
	case opBfi, opPopc, opClz, opBrev:
		if ty != tB32 && ty != tB64 {
			return unsupported(in)
		}
	case opActivemask:
		if ty != tB32 {
			return unsupported(in)
		}
	case opNop:
		if ty != tU32 {
			return unsupported(in)
		}
	case opMapa:
		if ty != tU32 && ty != tU64 {
			return unsupported(in)
		}
	case opRsqrt:
		if ty != tF32 || !slices.Contains(mods, "approx") {
			return fmt.Errorf("line %d: %s: only rsqrt.approx{.ftz}.f32 is supported (reproduced bit for bit from an H200's results)", in.line, in.text)
		}
		if _, err := rsqrtTable(); err != nil {
			return fmt.Errorf("line %d: %s: %w", in.line, in.text, err)
		}
	}
	return nil
}

// checkArith refuses the arithmetic forms the interpreter does not perform
// exactly: approximate division, f64 with directed rounding, and the
// float forms whose modifiers PTX does not define.
func checkArith(in *inst) error {
	op, ty := in.op, in.t
	if !ty.float() {
		if in.rmode != rnNone || in.ftz || ty == tPred || ty == tB8 || op == opFma ||
			in.sat && !(ty == tS32 && (op == opAdd || op == opSub)) ||
			(in.wide || in.hi) && op != opMul && op != opMad || in.wide && ty.size() == 8 {
			return unsupported(in)
		}
		if op == opMad && !in.wide && !in.hi && !strings.Contains(in.text, ".lo") {
			return fmt.Errorf("line %d: %s needs .lo, .hi or .wide", in.line, in.text)
		}
		return nil
	}
	if in.wide || in.hi {
		return unsupported(in)
	}
	if op == opMad {
		// mad.rn.f32 and mad.rn.f64 are fma; mad.f32 without rounding
		// may be implemented either way.
		if in.rmode == rnNone || ty != tF32 && ty != tF64 {
			return fmt.Errorf("line %d: %s: only mad with a rounding modifier (a fused multiply-add) is supported", in.line, in.text)
		}
		in.op = opFma
		op = opFma
	}
	if op == opDiv && in.sat || op == opFma && in.rmode == rnNone {
		return unsupported(in)
	}
	switch ty.scalar() {
	case tF32:
		if op == opDiv && in.rmode == rnNone {
			return fmt.Errorf("line %d: %s: approximate division is not supported (only div.rn/rz/rm/rp.f32)", in.line, in.text)
		}
		if op == opFma && in.rmode == rnNone {
			return fmt.Errorf("line %d: %s needs a rounding modifier", in.line, in.text)
		}
		if ty.packed() {
			return unsupported(in)
		}
	case tF64:
		if in.rmode != rnNone && in.rmode != rnEven || in.ftz || in.sat {
			return fmt.Errorf("line %d: %s: f64 arithmetic is supported with round to nearest only", in.line, in.text)
		}
		if (op == opDiv || op == opFma) && in.rmode == rnNone {
			return fmt.Errorf("line %d: %s needs a rounding modifier", in.line, in.text)
		}
	case tF16, tBF16:
		if in.rmode != rnNone && in.rmode != rnEven || op == opDiv {
			return unsupported(in)
		}
		if ty.scalar() == tBF16 && (in.ftz || in.sat) {
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
	atomOps    = map[string]AtomOp{"cas": AtomCAS + 1, "exch": AtomExch + 1, "add": AtomAdd + 1, "min": AtomMin + 1,
		"max": AtomMax + 1, "and": AtomAnd + 1, "or": AtomOr + 1, "xor": AtomXor + 1, "inc": AtomInc + 1, "dec": AtomDec + 1}
)

// operands decodes a comma-separated operand list.
func (d *decoder) operands(ts []token, in *inst) ([]operand, error) {
	// ends[k] is the end of operand k in ts: the commas outside brackets.
	var buf [8]int
	ends, depth := buf[:0], 0
	for i, t := range ts {
		switch t.s {
		case "[", "{", "(":
			depth++
		case "]", "}", ")":
			depth--
		case ",":
			if depth == 0 {
				ends = append(ends, i)
			}
		}
	}
	if n := len(ends); n == 0 && len(ts) > 0 || n > 0 && ends[n-1] < len(ts)-1 {
		ends = append(ends, len(ts)) // the last operand, unless a comma ends the list
	}
	out := make([]operand, 0, len(ends))
	start := 0
	for _, end := range ends {
		o, err := d.operand(ts[start:end], in)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
		start = end + 1
	}
	return out, nil
}

// immReg is a register that holds immediate v, an element of a vector
// operand of n elements of in ({0, %rs1}): the decoder sets it with a mov
// just before in (an element of a mov is the width of the whole over n;
// of a ld or st, the access's type).
func (d *decoder) immReg(in *inst, v uint64, n int) int {
	et := in.t
	if in.op == opMov && n > 0 {
		et = sizeType(in.t.size() / n)
	}
	r := d.newReg(sizeType(et.size()))
	d.fn.code = append(d.fn.code, inst{op: opMov, t: sizeType(et.size()), guard: -1, vec: 1, line: in.line, text: "mov (an immediate of " + in.text + "'s braces)",
		ops: []operand{{kind: oReg, reg: r}, {kind: oImm, imm: trunc(v, et)}}, dstSize: uint8(et.size())})
	return r
}

// vecReg resolves a register of a vector operand; "_" is a sink.
func (d *decoder) vecReg(s string) (int, bool) {
	if s == "_" {
		return d.sink(), true
	}
	return d.reg(s)
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
			r, ok := d.vecReg(ts[j].s)
			if !ok {
				v, isImm := immediate(ts[j].s)
				if !isImm {
					return bad()
				}
				r = d.immReg(in, v, len(ts)/2)
			}
			o.vec = append(o.vec, r)
			if ts[j+1].s != "," && ts[j+1].s != "}" {
				return bad()
			}
		}
		return o, nil
	case "!":
		o, err := d.operand(ts[1:], in)
		if err != nil || o.kind != oReg {
			return bad()
		}
		o.not = true
		return o, nil
	}
	if len(ts) == 3 && ts[1].s == "|" {
		p, ok1 := d.vecReg(ts[0].s)
		q, ok2 := d.vecReg(ts[2].s)
		if !ok1 || !ok2 {
			return bad()
		}
		return operand{kind: oVec, vec: []int{p, q}}, nil
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
	if s == "_" {
		return operand{kind: oReg, reg: d.sink()}, nil
	}
	if r, ok := d.reg(s); ok {
		// A register declared without the % (inline assembly's
		// "c", "low", "__$temp3").
		return operand{kind: oReg, reg: r}, nil
	}
	if v, ok := immediate(s); ok {
		return operand{kind: oImm, imm: v}, nil
	}
	if sym := d.sym(s); sym != nil {
		return operand{kind: oSym, sym: sym}, nil
	}
	if d.m.unsupportedVar(s) {
		return operand{}, fmt.Errorf("line %d: %s: module-scope variable %s was refused where it is declared", in.line, in.text, s)
	}
	return operand{kind: oLabel, name: s}, nil
}

// address decodes the inside of [ ]: reg, sym, imm, reg+imm or sym+imm.
func (d *decoder) address(ts []token, in *inst) (operand, error) {
	o := operand{kind: oAddr, base: -1}
	bad := func() (operand, error) {
		return operand{}, fmt.Errorf("line %d: %s: bad address [%s]", in.line, in.text, joinTokens(ts))
	}
	if len(ts) == 4 && ts[1].s == "+" && ts[2].s == "-" {
		ts = []token{ts[0], ts[1], {s: "-" + ts[3].s, line: ts[3].line}}
	}
	if len(ts) != 1 && (len(ts) != 3 || ts[1].s != "+") {
		return bad()
	}
	s := ts[0].s
	_, isReg := d.reg(s)
	switch {
	case strings.HasPrefix(s, "%") || isReg:
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
			if d.m.unsupportedVar(s) {
				return operand{}, fmt.Errorf("line %d: %s: module-scope variable %s was refused where it is declared", in.line, in.text, s)
			}
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

// call decodes "call[.uni] [(rets),] func[, (args)]". A call of
// __assertfail is an assertion that failed: reaching it is an error of the
// kernel.
func (d *decoder) call(in *inst, ts []token) error {
	if len(ts) == 0 {
		return fmt.Errorf("line %d: call without a target", in.line)
	}
	paramList := func(ts []token) ([]operand, error) {
		var out []operand
		if len(ts) < 2 || ts[0].s != "(" || ts[len(ts)-1].s != ")" {
			return nil, fmt.Errorf("line %d: bad call parameter list %q", in.line, joinTokens(ts))
		}
		for j := 1; j < len(ts)-1; j += 2 {
			sym := d.sym(ts[j].s)
			if sym == nil || sym.kind != symFrameParam {
				return nil, fmt.Errorf("line %d: call parameter %s is not a declared .param", in.line, ts[j].s)
			}
			out = append(out, operand{kind: oSym, sym: sym})
			if ts[j+1].s != "," && ts[j+1].s != ")" {
				return nil, fmt.Errorf("line %d: bad call parameter list %q", in.line, joinTokens(ts))
			}
		}
		return out, nil
	}
	if ts[0].s == "(" {
		end := 0
		for end < len(ts) && ts[end].s != ")" {
			end++
		}
		if end+2 >= len(ts) || ts[end+1].s != "," {
			return fmt.Errorf("line %d: bad call %q", in.line, joinTokens(ts))
		}
		rets, err := paramList(ts[:end+1])
		if err != nil {
			return err
		}
		in.rets = rets
		ts = ts[end+2:]
	}
	in.callee = ts[0].s
	ts = ts[1:]
	if len(ts) > 0 {
		if ts[0].s != "," {
			return fmt.Errorf("line %d: bad call arguments %q", in.line, joinTokens(ts))
		}
		args, err := paramList(ts[1:])
		if err != nil {
			return err
		}
		in.ops = args
	}
	if in.callee == "__assertfail" {
		in.op, in.trap, in.callee = opTrap, "assertion failed (__assertfail)", ""
	}
	if in.callee == "vprintf" && d.m.funcs["vprintf"] == nil {
		if len(in.rets) != 1 || len(in.ops) != 2 || in.rets[0].sym.size < 4 || in.ops[0].sym.size < 8 || in.ops[1].sym.size < 8 {
			return fmt.Errorf("line %d: vprintf takes a 32-bit result and two 64-bit arguments (format, arguments)", in.line)
		}
		in.op, in.callee = opPrintf, ""
	}
	d.fn.code = append(d.fn.code, *in)
	return nil
}

// arity is the operand count of the instructions whose operands
// checkArity does not check case by case.
var arity = map[opcode]int{
	opMov: 2, opAdd: 3, opSub: 3, opMul: 3, opMad: 4, opFma: 4, opDiv: 3, opRem: 3, opMin: 3, opMax: 3,
	opAbs: 2, opAnd: 3, opOr: 3, opXor: 3, opNot: 2, opCnot: 2, opShl: 3, opShr: 3, opNeg: 2, opSelp: 4,
	opCvta: 2, opMembar: 0, opBra: 1, opRet: 0, opPrmt: 4, opLop3: 5, opBfe: 4, opBfi: 5,
	opPopc: 2, opClz: 2, opBrev: 2, opActivemask: 1, opTrap: 0, opNop: 1, opRsqrt: 2, opMapa: 3,
}

// checkArity checks the operand count and kinds of an instruction.
func checkArity(in *inst) error {
	n := len(in.ops)
	bad := func() error {
		return fmt.Errorf("line %d: %s: unexpected operands", in.line, in.text)
	}
	plain := func(os []operand) bool {
		for _, o := range os {
			if o.kind == oAddr || o.kind == oVec || o.kind == oLabel || o.kind == oSym || o.not {
				return false
			}
		}
		return true
	}
	switch in.op {
	case opSetp:
		if n != 3 || !(in.ops[0].kind == oReg || in.ops[0].kind == oVec && len(in.ops[0].vec) == 2) || !plain(in.ops[1:]) {
			return bad()
		}
		if in.ops[0].kind == oVec && (in.t == tF16 || in.t == tBF16) {
			return fmt.Errorf("line %d: %s: no second predicate for 16-bit floats", in.line, in.text)
		}
	case opCvt:
		n2 := 2 + boolInt(in.cvt == cvtPair || in.cvt == cvtToFP8Pair)
		if n != n2 || in.ops[0].kind != oReg || !plain(in.ops[1:]) {
			return bad()
		}
	case opAtom:
		if n != 3+boolInt(in.aop == AtomCAS) || in.ops[0].kind != oReg || in.ops[1].kind != oAddr {
			return bad()
		}
	case opBar:
		return checkBarOperands(in)
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
	case opMov:
		if n != 2 {
			return bad()
		}
		dst, src := in.ops[0], in.ops[1]
		switch {
		case dst.kind == oVec:
			if src.kind != oReg || !packable(in.t, len(dst.vec)) {
				return bad()
			}
		case src.kind == oVec:
			if dst.kind != oReg || !packable(in.t, len(src.vec)) {
				return bad()
			}
		case dst.kind != oReg || src.kind == oAddr || src.kind == oLabel || src.not:
			return bad()
		}
		if src.kind == oSym && src.sym.kind == symFrameParam {
			return fmt.Errorf("line %d: %s: the address of a function parameter is not supported", in.line, in.text)
		}
	case opShfl:
		if n != 5 || !(in.ops[0].kind == oReg || in.ops[0].kind == oVec && len(in.ops[0].vec) == 2) || !plain(in.ops[1:]) {
			return bad()
		}
	case opVote:
		if n != 3 || in.ops[0].kind != oReg || in.ops[1].kind != oReg && in.ops[1].kind != oImm || !plain(in.ops[2:]) {
			return bad()
		}
	case opLop3:
		if n != 5 || in.ops[4].kind != oImm || in.ops[0].kind != oReg || !plain(in.ops[1:]) {
			return bad()
		}
	case opHint:
		if in.text == "griddepcontrol.wait" || in.text == "griddepcontrol.launch_dependents" {
			if n != 0 {
				return bad()
			}
		} else if n != 1 || in.ops[0].kind != oAddr {
			return bad()
		}
	case opClusterBar:
		if n != 0 {
			return bad()
		}
	case opWarpSync:
		if n != 1 || in.ops[0].kind != oReg && in.ops[0].kind != oImm || in.ops[0].not {
			return bad()
		}
	case opTrap:
		if n != 0 {
			return bad()
		}
		in.trap = "trap"
	default:
		w, ok := arity[in.op]
		if !ok || n != w {
			return bad()
		}
		if n > 0 && in.op != opBra && in.op != opNop && in.ops[0].kind != oReg {
			return bad()
		}
		for _, o := range in.ops[min(n, 1):] {
			if o.kind == oAddr || o.kind == oVec || o.not || (o.kind == oLabel && in.op != opBra) {
				return bad()
			}
		}
		if in.op == opCvta && in.ops[1].kind == oSym && in.ops[1].sym.kind == symFrameParam {
			return fmt.Errorf("line %d: %s: the address of a function parameter is not supported", in.line, in.text)
		}
	}
	return nil
}

// packable reports whether mov of type t packs or unpacks n elements.
func packable(t typ, n int) bool {
	switch t.size() {
	case 4:
		return n == 2
	case 8:
		return n == 2 || n == 4
	}
	return false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
