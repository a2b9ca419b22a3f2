package oracle

import (
	"encoding/binary"
	"math/rand/v2"
)

// The warp oracle covers the instructions whose lanes meet: shfl.sync in
// its four modes (with the predicate output), vote.sync (all, any, uni,
// ballot, on p and on !p), activemask and the %laneid and %lanemask_*
// special registers. One kernel, WarpKernel, runs every record with a
// block of 32 threads and then with a block of 64 (two warps).
//
// An input record (WarpInRecord bytes, 4-byte little-endian words) holds
// each warp's member mask and shfl modes, the clamp operand c, then per
// thread its value a, its lane operand b and its predicate p:
//
//	word 0, 1   member mask of warp 0, 1: lanes outside it skip the collectives
//	word 2, 3   shfl modes of warp 0, 1: bit 0 up, 1 down, 2 bfly, 3 idx
//	word 4      c, the clamp and segment mask of every shfl
//	word 5..7   zero
//	word 8+3t   a, b and p (p != 0) of thread t, t < 64
//
// A thread's output of a record (WarpOutRecord bytes, zeroed before the
// run; record i of a block of n threads, thread t at index i*n+t) is:
//
//	word 0      activemask at the kernel's entry, converged
//	word 1      %laneid
//	word 2..6   %lanemask_eq, _lt, _le, _gt, _ge
//	word 7      1 if the lane is in its warp's member mask
//	word 8..15  shfl up, down, bfly, idx: the value and the predicate
//	word 16..19 vote all, any, uni (1 or 0) and ballot of p
//	word 20..23 vote ballot, all, any, uni of !p
//
// Every record is valid on a GPU: every lane a member mask names executes
// the collective with that mask, and a shfl runs only where no member
// reads a lane in range but outside the mask (which is undefined). A
// full-warp vote ends each record, so no lane starts the next record's
// collectives, with another mask, while members of this one are still
// in theirs.
const (
	WarpInRecord  = 4 * (8 + 3*64)
	WarpOutRecord = 4 * 24
)

// WarpBlocks are the block sizes each record runs with.
var WarpBlocks = []int{32, 64}

// WarpRecord is one input record of the warp oracle.
type WarpRecord struct {
	Mask  [2]uint32
	Modes [2]uint32
	C     uint32
	A, B  [64]uint32
	P     [64]bool
}

// Shfl modes, as bits of WarpRecord.Modes.
const (
	ShflUp = 1 << iota
	ShflDown
	ShflBfly
	ShflIdx
)

// shflLane is the lane that lane reads in shfl mode with lane operand b
// and clamp operand c, and whether it is in range, as the PTX ISA
// defines them.
func shflLane(mode int, lane, b, c uint32) (uint32, bool) {
	bval := int(b & 31)
	seg := int(c >> 8 & 31)
	l := int(lane)
	maxLane := l&seg | int(c&31)&^seg
	minLane := l & seg
	var j int
	var in bool
	switch mode {
	case ShflUp:
		j = l - bval
		in = j >= maxLane
	case ShflDown:
		j = l + bval
		in = j <= maxLane
	case ShflBfly:
		j = l ^ bval
		in = j <= maxLane
	case ShflIdx:
		j = minLane | bval&^seg
		in = j <= maxLane
	}
	if !in {
		return lane, false
	}
	return uint32(j), true
}

// validModes are the shfl modes that warp w of r may run: those where no
// member reads a lane in range outside the member mask.
func (r *WarpRecord) validModes(w int) uint32 {
	mask := r.Mask[w]
	var modes uint32
	for _, m := range []int{ShflUp, ShflDown, ShflBfly, ShflIdx} {
		ok := true
		for l := uint32(0); l < 32; l++ {
			if mask>>l&1 == 0 {
				continue
			}
			if j, _ := shflLane(m, l, r.B[32*w+int(l)], r.C); mask>>j&1 == 0 {
				ok = false
				break
			}
		}
		if ok {
			modes |= uint32(m)
		}
	}
	return modes
}

// WarpRecords are the warp oracle's inputs: every clamp operand of the
// list with every member mask, lane operands uniform or per lane,
// predicates all set, all clear or mixed. They are drawn from a fixed
// seed, so they are the same on every run.
func WarpRecords() []WarpRecord {
	masks := []uint32{
		0xffffffff, 0x0000ffff, 0xffff0000, 0x55555555, 0xaaaaaaaa, 0x00000001, 0x80000000,
		0x80000001, 0x0000ff00, 0x0f0f0f0f, 0x7fffffff, 0xfffffffe,
	}
	// c as __shfl_*_sync builds it for widths 32, 16, 8, 4, 2 and 1 (up
	// clamps at the segment's start, the others at its end), odd clamps
	// and segment masks, and bits the ISA ignores set.
	cs := []uint32{
		0x1f, 0x0, 0x101f, 0x1000, 0x181f, 0x1800, 0x1c1f, 0x1c00, 0x1e1f, 0x1e00, 0x1f1f, 0x1f00,
		0x5, 0x0c05, 0x0817, 0xffffffff, 0xffffe0e0, 0x00ff00ff,
	}
	bs := []uint32{0, 1, 2, 3, 4, 5, 8, 15, 16, 17, 31, 32, 33, 63, 0x80000001, 0xffffffff}
	rng := rand.New(rand.NewPCG(25, 3))
	var recs []WarpRecord
	for _, c := range cs {
		for _, mask := range masks {
			r := WarpRecord{C: c, Mask: [2]uint32{mask, masks[rng.IntN(len(masks))]}}
			if rng.IntN(4) == 0 {
				r.Mask[1] = rng.Uint32() | 1<<rng.IntN(32)
			}
			pred := rng.IntN(4)
			for w := 0; w < 2; w++ {
				uniform := rng.IntN(2) == 0
				ub := bs[rng.IntN(len(bs))]
				for l := 0; l < 32; l++ {
					t := 32*w + l
					r.A[t] = rng.Uint32()
					switch {
					case uniform:
						r.B[t] = ub
					case rng.IntN(8) == 0:
						r.B[t] = rng.Uint32()
					default:
						r.B[t] = uint32(rng.IntN(32))
					}
					switch pred {
					case 0:
						r.P[t] = true
					case 1:
						r.P[t] = false
					default:
						r.P[t] = rng.IntN(2) == 0
					}
				}
				r.Modes[w] = r.validModes(w)
			}
			recs = append(recs, r)
		}
	}
	return recs
}

// WarpIn lays out recs as the kernel reads them.
func WarpIn(recs []WarpRecord) []byte {
	var b []byte
	for i := range recs {
		r := &recs[i]
		for _, v := range []uint32{r.Mask[0], r.Mask[1], r.Modes[0], r.Modes[1], r.C, 0, 0, 0} {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		for t := 0; t < 64; t++ {
			var p uint32
			if r.P[t] {
				p = 1
			}
			for _, v := range []uint32{r.A[t], r.B[t], p} {
				b = binary.LittleEndian.AppendUint32(b, v)
			}
		}
	}
	return b
}

// WarpKernel is the warp oracle's PTX module: one entry, warp(in, out, n),
// that runs n records.
const WarpKernel = `.version 8.0
.target sm_90
.address_size 64

.visible .entry warp(
	.param .u64 pin,
	.param .u64 pout,
	.param .u32 pn
)
{
	.reg .pred %q, %p, %sp;
	.reg .b32 %me, %nt, %lane, %w, %act, %i, %n, %t, %u, %mask, %modes, %c, %a, %b, %d;
	.reg .b64 %pi, %po, %rin, %rout, %rw, %rt, %off;
	ld.param.u64 %pi, [pin];
	ld.param.u64 %po, [pout];
	ld.param.u32 %n, [pn];
	activemask.b32 %act;
	mov.u32 %me, %tid.x;
	mov.u32 %nt, %ntid.x;
	mov.u32 %lane, %laneid;
	shr.u32 %w, %me, 5;
	mov.u32 %i, 0;
	setp.eq.u32 %q, %n, 0;
	@%q bra DONE;
LOOP:
	mul.wide.u32 %off, %i, 800;
	add.u64 %rin, %pi, %off;
	mad.lo.u32 %t, %i, %nt, %me;
	mul.wide.u32 %off, %t, 96;
	add.u64 %rout, %po, %off;
	mul.wide.u32 %off, %w, 4;
	add.u64 %rw, %rin, %off;
	mul.wide.u32 %off, %me, 12;
	add.u64 %rt, %rin, %off;
	ld.global.u32 %mask, [%rw];
	ld.global.u32 %modes, [%rw+8];
	ld.global.u32 %c, [%rin+16];
	ld.global.u32 %a, [%rt+32];
	ld.global.u32 %b, [%rt+36];
	ld.global.u32 %t, [%rt+40];
	setp.ne.u32 %p, %t, 0;
	st.global.u32 [%rout], %act;
	st.global.u32 [%rout+4], %lane;
	mov.u32 %t, %lanemask_eq;
	st.global.u32 [%rout+8], %t;
	mov.u32 %t, %lanemask_lt;
	st.global.u32 [%rout+12], %t;
	mov.u32 %t, %lanemask_le;
	st.global.u32 [%rout+16], %t;
	mov.u32 %t, %lanemask_gt;
	st.global.u32 [%rout+20], %t;
	mov.u32 %t, %lanemask_ge;
	st.global.u32 [%rout+24], %t;
	shr.u32 %t, %mask, %lane;
	and.b32 %t, %t, 1;
	st.global.u32 [%rout+28], %t;
	setp.eq.u32 %q, %t, 0;
	@%q bra NEXT;
	and.b32 %t, %modes, 1;
	setp.eq.u32 %q, %t, 0;
	@%q bra DOWN;
	shfl.sync.up.b32 %d|%sp, %a, %b, %c, %mask;
	selp.u32 %u, 1, 0, %sp;
	st.global.v2.u32 [%rout+32], {%d, %u};
DOWN:
	and.b32 %t, %modes, 2;
	setp.eq.u32 %q, %t, 0;
	@%q bra BFLY;
	shfl.sync.down.b32 %d|%sp, %a, %b, %c, %mask;
	selp.u32 %u, 1, 0, %sp;
	st.global.v2.u32 [%rout+40], {%d, %u};
BFLY:
	and.b32 %t, %modes, 4;
	setp.eq.u32 %q, %t, 0;
	@%q bra IDX;
	shfl.sync.bfly.b32 %d|%sp, %a, %b, %c, %mask;
	selp.u32 %u, 1, 0, %sp;
	st.global.v2.u32 [%rout+48], {%d, %u};
IDX:
	and.b32 %t, %modes, 8;
	setp.eq.u32 %q, %t, 0;
	@%q bra VOTE;
	shfl.sync.idx.b32 %d|%sp, %a, %b, %c, %mask;
	selp.u32 %u, 1, 0, %sp;
	st.global.v2.u32 [%rout+56], {%d, %u};
VOTE:
	vote.sync.all.pred %sp, %p, %mask;
	selp.u32 %u, 1, 0, %sp;
	st.global.u32 [%rout+64], %u;
	vote.sync.any.pred %sp, %p, %mask;
	selp.u32 %u, 1, 0, %sp;
	st.global.u32 [%rout+68], %u;
	vote.sync.uni.pred %sp, %p, %mask;
	selp.u32 %u, 1, 0, %sp;
	st.global.u32 [%rout+72], %u;
	vote.sync.ballot.b32 %d, %p, %mask;
	st.global.u32 [%rout+76], %d;
	vote.sync.ballot.b32 %d, !%p, %mask;
	st.global.u32 [%rout+80], %d;
	vote.sync.all.pred %sp, !%p, %mask;
	selp.u32 %u, 1, 0, %sp;
	st.global.u32 [%rout+84], %u;
	vote.sync.any.pred %sp, !%p, %mask;
	selp.u32 %u, 1, 0, %sp;
	st.global.u32 [%rout+88], %u;
	vote.sync.uni.pred %sp, !%p, %mask;
	selp.u32 %u, 1, 0, %sp;
	st.global.u32 [%rout+92], %u;
NEXT:
	vote.sync.ballot.b32 %t, %p, -1;
	add.u32 %i, %i, 1;
	setp.lt.u32 %q, %i, %n;
	@%q bra LOOP;
DONE:
	ret;
}
`
