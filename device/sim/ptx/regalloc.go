package ptx

import "slices"

// Register allocation. A function declares its registers in ranges sized
// for the compiler's virtual registers (%r<N>): tens of thousands for a
// kernel that inlines every case, most of them live for a few
// instructions. The decoder gives each declared register its own number;
// allocRegs then renumbers them into the slots of a register file sized by
// use: two registers share a slot unless one is written while the other
// is live, so the file holds about as many registers as the function has
// live at once, not every register it declares.
//
// The renumbering keeps the interpreter's semantics exactly, including
// reads of registers no path wrote, which read zero: such a register is
// live from the function's entry, where every slot is zero, and no
// register written while it is live shares its slot.

// maxAllocWork bounds the live-in entries and the interference entries
// (each an int32) the allocation of one function may build: about 32 MB
// each. The kernels need under a million (one_shot_all_reduce 865,074).
const maxAllocWork = 1 << 23

// regRefs calls use for every register operand in reads and then def for
// every register it writes (its destinations), with a pointer to the
// operand's field so that the caller may renumber it. A guarded
// instruction reads its guard first.
func (in *inst) regRefs(use, def func(r *int)) {
	if in.guard >= 0 {
		use(&in.guard)
	}
	useOp := func(o *operand) {
		switch o.kind {
		case oReg:
			use(&o.reg)
		case oVec:
			for i := range o.vec {
				use(&o.vec[i])
			}
		case oAddr:
			if o.base >= 0 {
				use(&o.base)
			}
		}
	}
	defOp := func(o *operand) {
		switch o.kind {
		case oReg:
			def(&o.reg)
		case oVec:
			for i := range o.vec {
				def(&o.vec[i])
			}
		}
	}
	ops := in.ops
	switch in.op {
	case opCall, opRet, opMembar, opTrap, opBra, opPrintf, opClusterBar:
		// No register operands: calls pass .param variables.
	case opSt, opNop, opHint, opWarpSync:
		for i := range ops {
			useOp(&ops[i])
		}
	case opBar:
		if in.bar != barRed {
			for i := range ops {
				useOp(&ops[i])
			}
			return
		}
		// bar.red's destination is written when the block releases
		// the thread, after the barrier's operands were read.
		for i := 1; i < len(ops); i++ {
			useOp(&ops[i])
		}
		defOp(&ops[0])
	default:
		// ld, atom and every register-to-register instruction: ops[0]
		// is the destination, the others are sources (an address's
		// base register among them).
		if len(ops) == 0 {
			return
		}
		for i := 1; i < len(ops); i++ {
			useOp(&ops[i])
		}
		defOp(&ops[0])
	}
}

// allocRegs renumbers fn's registers into a register file sized by use
// and sets fn.nregs to its size. fn.code must be complete, its branch
// targets resolved. limit bounds the analysis (see interference).
func allocRegs(fn *Func, limit int) {
	code := fn.code
	// Dense numbers, in order of first reference: declared registers no
	// instruction names get none.
	dense := make([]int32, fn.nregs)
	for i := range dense {
		dense[i] = -1
	}
	n := 0
	number := func(r *int) {
		if dense[*r] < 0 {
			dense[*r] = int32(n)
			n++
		}
		*r = int(dense[*r])
	}
	for i := range code {
		code[i].regRefs(number, number)
	}
	if n == 0 {
		fn.nregs = 0
		return
	}
	g := interference(code, n, limit)
	if g == nil {
		// Too many registers live at once to afford the analysis: each
		// register keeps a slot of its own.
		fn.nregs = n
		return
	}
	slot := color(g)
	nslots := 0
	for _, s := range slot {
		nslots = max(nslots, s+1)
	}
	rename := func(r *int) { *r = slot[*r] }
	for i := range code {
		code[i].regRefs(rename, rename)
	}
	fn.nregs = nslots
}

// interference computes which of the n registers code names interfere:
// r and x interfere when an instruction writes r while x is live after it
// (x's value is read later), so they must not share a slot. A guarded
// write may not happen, so it does not end the live range of the
// register it writes. An instruction reads all its operands before it
// writes, so a register it reads for the last time may share a slot with
// one it writes. At the entry every slot is zero, as every register is
// then.
//
// Liveness is computed register by register, walking back from each read
// through the predecessor blocks up to the writes (the path exploration
// of Brandner et al.), so its cost follows the live ranges rather than
// the number of registers times the number of blocks. Both it and the
// interference grow with the registers live at once; past limit entries
// of either, interference gives up and returns nil.
func interference(code []inst, n, limit int) *graph {
	// The registers each instruction reads and writes, flat.
	var refs []int32
	useAt, defAt := make([]int32, len(code)+1), make([]int32, len(code)+1)
	for i := range code {
		useAt[i] = int32(len(refs))
		code[i].regRefs(func(r *int) { refs = append(refs, int32(*r)) }, func(*int) {})
		defAt[i] = int32(len(refs))
		code[i].regRefs(func(*int) {}, func(r *int) { refs = append(refs, int32(*r)) })
	}
	useAt[len(code)] = int32(len(refs))
	uses := func(i int) []int32 { return refs[useAt[i]:defAt[i]] }
	defs := func(i int) []int32 { return refs[defAt[i]:useAt[i+1]] }

	// Basic blocks: a leader is the first instruction, a branch target,
	// or follows a branch, a return or a trap.
	leader := make([]bool, len(code)+1)
	leader[0], leader[len(code)] = true, true
	for i := range code {
		switch code[i].op {
		case opBra:
			leader[code[i].target] = true
			leader[i+1] = true
		case opRet, opTrap:
			leader[i+1] = true
		}
	}
	var firsts []int // block b is code[firsts[b]:firsts[b+1]]
	blockOf := make([]int32, len(code)+1)
	for i := 0; i <= len(code); i++ {
		if leader[i] {
			firsts = append(firsts, i)
		}
		blockOf[i] = int32(len(firsts) - 1)
	}
	nb := len(firsts) - 1
	succs, preds := make([][]int32, nb), make([][]int32, nb)
	edge := func(b, s int32) {
		succs[b] = append(succs[b], s)
		preds[s] = append(preds[s], b)
	}
	for b := range int32(nb) {
		last := &code[firsts[b+1]-1]
		falls := firsts[b+1] < len(code)
		switch last.op {
		case opBra:
			edge(b, blockOf[last.target])
			falls = falls && last.guard >= 0
		case opRet, opTrap:
			falls = falls && last.guard >= 0
		}
		if falls {
			edge(b, b+1)
		}
	}

	// Per register: the blocks that read it before writing it (where it
	// is live in) and the blocks that write it unguarded.
	gens, kills := make([][]int32, n), make([][]int32, n)
	seen := make([]int32, n) // seen[r] == b+1: r was written or read in block b
	for b := range int32(nb) {
		for i := firsts[b]; i < firsts[b+1]; i++ {
			for _, r := range uses(i) {
				if seen[r] != b+1 {
					seen[r] = b + 1
					gens[r] = append(gens[r], b)
				}
			}
			if code[i].guard < 0 {
				for _, r := range defs(i) {
					seen[r] = b + 1
					if k := kills[r]; len(k) == 0 || k[len(k)-1] != b {
						kills[r] = append(kills[r], b)
					}
				}
			}
		}
	}
	liveIn := make([][]int32, nb)
	entries := 0                                            // of liveIn, then of adj
	killed, visited := make([]int32, nb), make([]int32, nb) // == r+1 for register r
	var work []int32
	for r := range int32(n) {
		for _, b := range kills[r] {
			killed[b] = r + 1
		}
		work = append(work[:0], gens[r]...)
		for len(work) > 0 {
			b := work[len(work)-1]
			work = work[:len(work)-1]
			if visited[b] == r+1 {
				continue
			}
			visited[b] = r + 1
			liveIn[b] = append(liveIn[b], r)
			if entries++; entries > limit {
				return nil
			}
			for _, p := range preds[b] {
				if killed[p] != r+1 && visited[p] != r+1 {
					work = append(work, p)
				}
			}
		}
	}

	// The interferences, walked twice: once to count each register's,
	// once to lay them out in one array.
	live := newSparseSet(n)
	walk := func(edge func(r, x int32)) bool {
		entries := 0
		for b := range nb {
			live.reset()
			for _, s := range succs[b] {
				for _, r := range liveIn[s] {
					live.add(r)
				}
			}
			for i := firsts[b+1] - 1; i >= firsts[b]; i-- {
				for _, r := range defs(i) {
					if entries += 2 * len(live.members()); entries > limit {
						return false
					}
					for _, x := range live.members() {
						if x != r {
							edge(r, x)
						}
					}
				}
				if code[i].guard < 0 {
					for _, r := range defs(i) {
						live.remove(r)
					}
				}
				for _, r := range uses(i) {
					live.add(r)
				}
			}
		}
		return true
	}
	g := &graph{start: make([]int32, n+1)}
	if !walk(func(r, x int32) { g.start[r+1]++; g.start[x+1]++ }) {
		return nil
	}
	for r := range n {
		g.start[r+1] += g.start[r]
	}
	g.adj = make([]int32, g.start[n])
	next := slices.Clone(g.start[:n])
	walk(func(r, x int32) {
		g.adj[next[r]], g.adj[next[x]] = x, r
		next[r]++
		next[x]++
	})
	return g
}

// graph is an interference graph of registers 0 to len(start)-2: the
// registers r interferes with are adj[start[r]:start[r+1]] (some more
// than once).
type graph struct {
	start []int32
	adj   []int32
}

// registers is how many registers g has.
func (g *graph) registers() int { return len(g.start) - 1 }

// neighbours are the registers r interferes with.
func (g *graph) neighbours(r int) []int32 { return g.adj[g.start[r]:g.start[r+1]] }

// sparseSet is a set of integers below a bound with constant-time add,
// remove and reset, and iteration over its members only.
type sparseSet struct {
	dense  []int32
	sparse []int32
}

func newSparseSet(n int) *sparseSet {
	return &sparseSet{dense: make([]int32, 0, n), sparse: make([]int32, n)}
}

func (s *sparseSet) has(x int32) bool {
	i := s.sparse[x]
	return int(i) < len(s.dense) && s.dense[i] == x
}

func (s *sparseSet) add(x int32) {
	if !s.has(x) {
		s.sparse[x] = int32(len(s.dense))
		s.dense = append(s.dense, x)
	}
}

func (s *sparseSet) remove(x int32) {
	if s.has(x) {
		i, last := s.sparse[x], s.dense[len(s.dense)-1]
		s.dense[i], s.sparse[last] = last, i
		s.dense = s.dense[:len(s.dense)-1]
	}
}

func (s *sparseSet) reset() { s.dense = s.dense[:0] }

// members are the set's members in no particular order (valid until the
// set changes).
func (s *sparseSet) members() []int32 { return s.dense }

// color gives each register the lowest slot that no register it
// interferes with and numbered before it has.
func color(g *graph) []int {
	n := g.registers()
	slot := make([]int, n)
	taken := make([]int, n+1) // taken[s] == r+1: a neighbour of r has s
	for r := range n {
		for _, x := range g.neighbours(r) {
			if int(x) < r {
				taken[slot[x]] = r + 1
			}
		}
		s := 0
		for taken[s] == r+1 {
			s++
		}
		slot[r] = s
	}
	return slot
}
