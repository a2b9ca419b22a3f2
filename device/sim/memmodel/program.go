package memmodel

import (
	"fmt"
	"sort"
)

// Sem is the memory-ordering semantics of an operation.
type Sem uint8

// The semantics an operation may carry.
const (
	Weak Sem = iota
	Relaxed
	Acquire
	Release
	AcqRel
	SC
)

var semNames = [...]string{"weak", "relaxed", "acquire", "release", "acq_rel", "sc"}

func (s Sem) String() string {
	if int(s) < len(semNames) {
		return semNames[s]
	}
	return fmt.Sprintf("Sem(%d)", s)
}

// Scope is the set of threads a strong operation is morally strong with.
type Scope uint8

// The scopes, narrowest first.
const (
	CTA Scope = iota
	GPU
	Sys
)

var scopeNames = [...]string{"cta", "gpu", "sys"}

func (s Scope) String() string {
	if int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return fmt.Sprintf("Scope(%d)", s)
}

// Op is an instruction's kind.
type Op uint8

// The instructions of a program.
const (
	// OpLoad reads Loc into Dst.
	OpLoad Op = iota
	// OpStore writes Args[0] to Loc.
	OpStore
	// OpAtom is a read-modify-write of Loc with AtomOp and Args; the old
	// value goes to Dst (a red leaves Dst empty).
	OpAtom
	// OpFence is fence.sc or fence.acq_rel (Sem) at Scope.
	OpFence
	// OpBarrier is bar.cta.sync or, with Arrive, bar.cta.arrive.
	OpBarrier
	// OpLocal sets Dst to AtomOp applied to Args (mov, add, sub, ...).
	OpLocal
	// OpBranch jumps to Target when Cond holds between Args[0] and Args[1].
	OpBranch
	// OpJump jumps to Target.
	OpJump
	// OpProxyFence is fence.proxy.KIND: Proxy names the proxy it orders
	// with the generic one, or ProxyAlias for fence.proxy.alias, which
	// orders accesses through different virtual aliases of a location.
	OpProxyFence
)

// Proxy is the path a memory access takes to memory. Accesses of one
// location through different proxies, or through different virtual
// aliases, are not morally strong and keep causality order only across a
// proxy fence.
type Proxy uint8

// The proxies; the zero value is the generic proxy of ld, st and atom.
const (
	Generic Proxy = iota
	// Surface is the proxy of suld, sust, suatom and sured.
	Surface
	// Texture is the proxy of tld.
	Texture
	// Constant is the proxy of cold.
	Constant
	// ProxyAlias is only a proxy fence's kind: fence.proxy.alias.
	ProxyAlias
)

var proxyNames = [...]string{"generic", "surface", "texture", "constant", "alias"}

func (p Proxy) String() string {
	if int(p) < len(proxyNames) {
		return proxyNames[p]
	}
	return fmt.Sprintf("Proxy(%d)", p)
}

// Alias declares a name as another virtual address of a location:
// "y @ generic aliases x" is Alias{Of: "x", Kind: Generic}, a second
// generic address of x's memory; "s @ surface aliases x" is Alias{Of: "x",
// Kind: Surface}, a surface handle of x's own (generic) address.
type Alias struct {
	Of   string
	Kind Proxy
	Line int // source line, for errors
}

// Operand is a register or an immediate value.
type Operand struct {
	Reg string // register name; empty for an immediate
	Imm int64
}

func (o Operand) String() string {
	if o.Reg != "" {
		return o.Reg
	}
	return fmt.Sprint(o.Imm)
}

// Inst is one instruction of a thread.
type Inst struct {
	Op     Op
	Sem    Sem
	Scope  Scope
	Loc    string
	Dst    string
	Args   []Operand
	AtomOp string // add, sub, and, or, xor, min, max, exch, cas, inc, dec; for OpLocal also mov, mul, div
	Cond   string // eq, ne, lt, le, gt, ge
	// Shared marks a shared-memory access: its location belongs to one
	// CTA, and only that CTA's threads may use it.
	Shared bool
	// Proxy is the proxy of a memory access, or the kind of a proxy
	// fence; plain fences are generic.
	Proxy  Proxy
	Target int // instruction index for OpBranch and OpJump

	// Barrier operands: the instance, an optional id and an optional
	// thread count (quorum).
	Instance Operand
	ID       *Operand
	Quorum   *Operand
	Arrive   bool

	Line int // source line, for errors
}

// Thread is one thread of a program with its place in the grid.
type Thread struct {
	Name string
	CTA  int
	GPU  int
	Code []Inst
	Regs map[string]int64 // initial register values; others start at 0
}

// Program is a litmus-sized program: threads and the initial memory.
type Program struct {
	Threads []Thread
	Init    map[string]int64 // every location the program uses, with its initial value
	// Aliases are names of locations that are other virtual addresses of
	// a location of Init (directly or through another alias); they have
	// no entry in Init.
	Aliases map[string]Alias
}

// locations returns the program's physical locations in a fixed order:
// the names used that are not aliases.
func (p *Program) locations() []string {
	seen := map[string]bool{}
	for l := range p.Init {
		seen[l] = true
	}
	for _, t := range p.Threads {
		for _, in := range t.Code {
			if _, alias := p.Aliases[in.Loc]; in.Loc != "" && !alias {
				seen[in.Loc] = true
			}
		}
	}
	locs := make([]string, 0, len(seen))
	for l := range seen {
		locs = append(locs, l)
	}
	sort.Strings(locs)
	return locs
}

// physical is the location a name's memory is: the end of its alias
// chain.
func (p *Program) physical(name string) string {
	for i := 0; i <= len(p.Aliases); i++ {
		a, ok := p.Aliases[name]
		if !ok {
			return name
		}
		name = a.Of
	}
	return name // a cycle; Validate refuses it
}

// generic is the generic (virtual) address a name accesses: a generic
// alias is its own address, a surface, texture or constant alias uses the
// address it aliases.
func (p *Program) generic(name string) string {
	for i := 0; i <= len(p.Aliases); i++ {
		a, ok := p.Aliases[name]
		if !ok || a.Kind == Generic {
			return name
		}
		name = a.Of
	}
	return name
}

// validateAliases checks that every alias names a location and none
// loops or has an initial value of its own.
func (p *Program) validateAliases() error {
	names := make([]string, 0, len(p.Aliases))
	for n := range p.Aliases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := p.Aliases[n]
		if _, ok := p.Init[n]; ok {
			return fmt.Errorf("line %d: %s is an alias of %s and cannot have an initial value of its own", a.Line, n, a.Of)
		}
		if a.Kind == ProxyAlias || a.Kind > ProxyAlias {
			return fmt.Errorf("line %d: %s: alias kind %s: want generic, surface, texture or constant", a.Line, n, a.Kind)
		}
		seen := map[string]bool{n: true}
		for cur := a.Of; ; {
			next, ok := p.Aliases[cur]
			if !ok {
				if _, ok := p.Init[cur]; !ok {
					return fmt.Errorf("line %d: %s aliases %s, which is not a location with an initial value", a.Line, n, cur)
				}
				break
			}
			if seen[cur] {
				return fmt.Errorf("line %d: the aliases of %s form a cycle", a.Line, n)
			}
			seen[cur] = true
			cur = next.Of
		}
	}
	return nil
}

// Validate reports the first malformed instruction, naming its thread and
// line.
func (p *Program) Validate() error {
	if len(p.Threads) == 0 {
		return fmt.Errorf("program has no threads")
	}
	if err := p.validateAliases(); err != nil {
		return err
	}
	// A shared location is used by one CTA only, and only as shared.
	type user struct {
		gpu, cta int
		shared   bool
		thread   string
		line     int
	}
	users := map[string]user{}
	for _, t := range p.Threads {
		for _, in := range t.Code {
			if in.Loc == "" {
				continue
			}
			if _, alias := p.Aliases[in.Loc]; alias && in.Shared {
				return fmt.Errorf("%s line %d: alias %s cannot be shared memory", t.Name, in.Line, in.Loc)
			}
			u := user{gpu: t.GPU, cta: t.CTA, shared: in.Shared, thread: t.Name, line: in.Line}
			prev, ok := users[in.Loc]
			if !ok {
				users[in.Loc] = u
				continue
			}
			if prev.shared != u.shared {
				return fmt.Errorf("%s line %d: %s is used both as shared and as global memory (%s line %d)", t.Name, in.Line, in.Loc, prev.thread, prev.line)
			}
			if u.shared && (prev.gpu != u.gpu || prev.cta != u.cta) {
				return fmt.Errorf("%s line %d: shared location %s is used by two CTAs (%s line %d)", t.Name, in.Line, in.Loc, prev.thread, prev.line)
			}
		}
	}
	for _, t := range p.Threads {
		for _, in := range t.Code {
			bad := func(format string, a ...any) error {
				return fmt.Errorf("%s line %d: %s", t.Name, in.Line, fmt.Sprintf(format, a...))
			}
			switch in.Op {
			case OpLoad, OpStore, OpAtom:
				if in.Proxy == ProxyAlias || in.Proxy > ProxyAlias {
					return bad("a memory access cannot use proxy %s", in.Proxy)
				}
				if in.Op != OpLoad && (in.Proxy == Texture || in.Proxy == Constant) {
					return bad("the %s proxy is read-only", in.Proxy)
				}
			case OpFence:
				if in.Proxy != Generic {
					return bad("a fence.%s is generic; proxy fences are OpProxyFence", in.Sem)
				}
			case OpProxyFence:
				if in.Proxy > ProxyAlias {
					return bad("unknown proxy fence kind %d", in.Proxy)
				}
			}
			switch in.Op {
			case OpLoad:
				if in.Loc == "" || in.Dst == "" {
					return bad("load needs a register and a location")
				}
				if in.Sem != Weak && in.Sem != Relaxed && in.Sem != Acquire {
					return bad("load cannot be %s", in.Sem)
				}
			case OpStore:
				if in.Loc == "" || len(in.Args) != 1 {
					return bad("store needs a location and a value")
				}
				if in.Sem != Weak && in.Sem != Relaxed && in.Sem != Release {
					return bad("store cannot be %s", in.Sem)
				}
			case OpAtom:
				want := 1
				if in.AtomOp == "cas" {
					want = 2
				}
				if in.Loc == "" || len(in.Args) != want {
					return bad("atom.%s needs a location and %d operand(s)", in.AtomOp, want)
				}
				if in.Sem == Weak || in.Sem == SC {
					return bad("atom cannot be %s", in.Sem)
				}
				if _, err := atomValue(in.AtomOp, 0, 0, 0); err != nil {
					return bad("%v", err)
				}
			case OpFence:
				if in.Sem != SC && in.Sem != AcqRel {
					return bad("fence must be sc or acq_rel, not %s", in.Sem)
				}
			case OpBarrier, OpProxyFence:
			case OpLocal:
				if in.Dst == "" || len(in.Args) == 0 {
					return bad("%s needs a destination and operands", in.AtomOp)
				}
			case OpBranch, OpJump:
				if in.Target < 0 || in.Target > len(t.Code) {
					return bad("jump target %d out of range", in.Target)
				}
				if in.Op == OpBranch && len(in.Args) != 2 {
					return bad("branch needs two operands")
				}
			default:
				return bad("unknown instruction kind %d", in.Op)
			}
		}
	}
	return nil
}

// atomValue is the value an atomic operation writes, given the value read
// and its operands; for cas, ok is false when the comparison fails.
func atomValue(op string, old, a, b int64) (int64, error) {
	switch op {
	case "add":
		return old + a, nil
	case "sub":
		return old - a, nil
	case "inc":
		if old >= a {
			return 0, nil
		}
		return old + 1, nil
	case "dec":
		if old == 0 || old > a {
			return a, nil
		}
		return old - 1, nil
	case "and":
		return old & a, nil
	case "or":
		return old | a, nil
	case "xor":
		return old ^ a, nil
	case "min":
		return min(old, a), nil
	case "max":
		return max(old, a), nil
	case "exch":
		return a, nil
	case "cas":
		return b, nil
	}
	return 0, fmt.Errorf("unknown atomic operation %q", op)
}

// localValue computes a register operation.
func localValue(op string, args []int64) (int64, error) {
	switch op {
	case "mov":
		return args[0], nil
	case "mul":
		return args[0] * args[1], nil
	case "div":
		if args[1] == 0 {
			return 0, fmt.Errorf("division by zero")
		}
		return args[0] / args[1], nil
	}
	if len(args) != 2 {
		return 0, fmt.Errorf("%s takes two operands", op)
	}
	return atomValue(op, args[0], args[1], 0)
}

// holds evaluates a branch condition.
func holds(cond string, a, b int64) (bool, error) {
	switch cond {
	case "eq":
		return a == b, nil
	case "ne":
		return a != b, nil
	case "lt":
		return a < b, nil
	case "le":
		return a <= b, nil
	case "gt":
		return a > b, nil
	case "ge":
		return a >= b, nil
	}
	return false, fmt.Errorf("unknown branch condition %q", cond)
}
