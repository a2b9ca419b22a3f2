package oracle

import (
	"fmt"
	"math"
)

// Edge values of each domain.
var (
	f32Vals = []uint64{
		0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x3fc00000, 0x3dcccccd, 0x4b800001,
		0x7f7fffff, 0xff7fffff, 0x00800000, 0x00000001, 0x807fffff, 0x3f7fffff, 0x33800000,
		0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffc00123,
	}
	f64Vals = []uint64{
		0, 1 << 63, math.Float64bits(1), math.Float64bits(-1), math.Float64bits(1.5), math.Float64bits(0.1),
		math.Float64bits(1<<53 + 2), 0x7fefffffffffffff, 0xffefffffffffffff, 0x0010000000000000, 1,
		0x800fffffffffffff, math.Float64bits(math.Nextafter(1, 0)), 0x7ff0000000000000, 0xfff0000000000000,
		0x7ff8000000000000, 0x7ff0000000000001, 0xfff8000000000123, math.Float64bits(1e300), math.Float64bits(-3e-300),
	}
	f16Vals = []uint64{
		0x0000, 0x8000, 0x3c00, 0xbc00, 0x3e00, 0x2e66, 0x7bff, 0xfbff, 0x0400, 0x0001, 0x83ff,
		0x3bff, 0x1400, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe01,
	}
	bf16Vals = []uint64{
		0x0000, 0x8000, 0x3f80, 0xbf80, 0x3fc0, 0x3dcd, 0x7f7f, 0xff7f, 0x0080, 0x0001, 0x807f,
		0x3f7f, 0x3380, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1,
	}
	shiftVals = []uint64{0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 0xffffffff}
)

// intVals are the edge values of an integer of width bits.
func intVals(width int) []uint64 {
	mask := uint64(math.MaxUint64)
	if width < 64 {
		mask = 1<<width - 1
	}
	top := uint64(1) << (width - 1)
	raw := []uint64{0, 1, 2, 3, 5, 100, top - 1, top, top + 1, mask, mask - 1, 0x5555555555555555, 0xaaaaaaaaaaaaaaaa,
		0xffffffffffffff9c, 0x123456789abcdef0}
	var out []uint64
	seen := map[uint64]bool{}
	for _, v := range raw {
		v &= mask
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// pairs is every (a, b) of two value lists.
func pairs(as, bs []uint64) [][3]uint64 {
	var out [][3]uint64
	for _, a := range as {
		for _, b := range bs {
			out = append(out, [3]uint64{a, b})
		}
	}
	return out
}

// triples is every (a, b, c) of three lists.
func triples(as, bs, cs []uint64) [][3]uint64 {
	var out [][3]uint64
	for _, a := range as {
		for _, b := range bs {
			for _, c := range cs {
				out = append(out, [3]uint64{a, b, c})
			}
		}
	}
	return out
}

// singles is each value alone.
func singles(as []uint64) [][3]uint64 {
	out := make([][3]uint64, len(as))
	for i, a := range as {
		out[i][0] = a
	}
	return out
}

// packedPairs makes x2 operands: a holds (v[i], v[j]), b (v[j], v[i]).
func packedPairs(vs []uint64) [][3]uint64 {
	var out [][3]uint64
	for i, x := range vs {
		for j, y := range vs {
			out = append(out, [3]uint64{x<<16 | y, y<<16 | x, vs[(i+j)%len(vs)]<<16 | vs[(i*3+j)%len(vs)]})
		}
	}
	return out
}

// pick is every n-th value, for the ternary operations.
func pick(vs []uint64, n int) []uint64 {
	var out []uint64
	for i := 0; i < len(vs); i += n {
		out = append(out, vs[i])
	}
	return out
}

// Forms lists the oracle's instruction forms, in a fixed order.
func Forms() []*Form {
	var fs []*Form
	add := func(text string, in, out []int, inputs [][3]uint64) {
		fs = append(fs, &Form{Text: text, In: in, Out: out, Inputs: inputs})
	}
	// Integer arithmetic.
	for _, w := range []int{16, 32, 64} {
		vals := intVals(w)
		for _, s := range []string{"s", "u"} {
			ty := fmt.Sprintf(".%s%d", s, w)
			for _, op := range []string{"add", "sub", "mul.lo", "mul.hi", "min", "max"} {
				add(op+ty+" D, A, B", []int{w, w}, []int{w}, pairs(vals, vals))
			}
			var nz []uint64
			for _, v := range vals {
				if v != 0 {
					nz = append(nz, v)
				}
			}
			add("div"+ty+" D, A, B", []int{w, w}, []int{w}, pairs(vals, nz))
			add("rem"+ty+" D, A, B", []int{w, w}, []int{w}, pairs(vals, nz))
			for _, c := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
				add("setp."+c+ty+" D|D2, A, B", []int{w, w}, []int{1, 1}, pairs(vals, vals))
			}
			if w < 64 {
				add("mul.wide"+ty+" D, A, B", []int{w, w}, []int{2 * w}, pairs(vals, vals))
			}
			if w >= 32 {
				add("mad.lo"+ty+" D, A, B, C", []int{w, w, w}, []int{w}, triples(pick(vals, 2), pick(vals, 2), pick(vals, 3)))
				add("mad.hi"+ty+" D, A, B, C", []int{w, w, w}, []int{w}, triples(pick(vals, 2), pick(vals, 2), pick(vals, 3)))
			}
			if w == 32 {
				add("mad.wide"+ty+" D, A, B, C", []int{w, w, 64}, []int{64}, triples(pick(vals, 2), pick(vals, 2), pick(intVals(64), 3)))
			}
		}
		sty := fmt.Sprintf(".s%d", w)
		bty := fmt.Sprintf(".b%d", w)
		add("abs"+sty+" D, A", []int{w}, []int{w}, singles(vals))
		add("neg"+sty+" D, A", []int{w}, []int{w}, singles(vals))
		for _, op := range []string{"and", "or", "xor"} {
			add(op+bty+" D, A, B", []int{w, w}, []int{w}, pairs(vals, vals))
		}
		add("not"+bty+" D, A", []int{w}, []int{w}, singles(vals))
		add("cnot"+bty+" D, A", []int{w}, []int{w}, singles(vals))
		add("shl"+bty+" D, A, B", []int{w, 32}, []int{w}, pairs(vals, shiftVals))
		add(fmt.Sprintf("shr.u%d D, A, B", w), []int{w, 32}, []int{w}, pairs(vals, shiftVals))
		add(fmt.Sprintf("shr.s%d D, A, B", w), []int{w, 32}, []int{w}, pairs(vals, shiftVals))
		add("selp"+bty+" D, A, B, C", []int{w, w, 1}, []int{w}, triples(pick(vals, 3), pick(vals, 4), []uint64{0, 1}))
	}
	v32 := intVals(32)
	add("add.sat.s32 D, A, B", []int{32, 32}, []int{32}, pairs(v32, v32))
	add("sub.sat.s32 D, A, B", []int{32, 32}, []int{32}, pairs(v32, v32))
	for _, w := range []int{32, 64} {
		vals := intVals(w)
		bty := fmt.Sprintf(".b%d", w)
		add("popc"+bty+" D, A", []int{w}, []int{32}, singles(vals))
		add("clz"+bty+" D, A", []int{w}, []int{32}, singles(vals))
		add("brev"+bty+" D, A", []int{w}, []int{w}, singles(vals))
		positions := []uint64{0, 1, 8, 31, 32, 33, 63, 64, 255, 0x104}
		lengths := []uint64{0, 1, 8, 31, 32, 33, 64, 255}
		for _, s := range []string{"u", "s"} {
			add(fmt.Sprintf("bfe.%s%d D, A, B, C", s, w), []int{w, 32, 32}, []int{w}, triples(pick(vals, 2), positions, lengths))
		}
		for _, n := range []int{0, 1, 8, 31, 32, 33} {
			add(fmt.Sprintf("bfi%s D, A, B, C, %d", bty, n), []int{w, w, 32}, []int{w}, triples(pick(vals, 3), pick(vals, 4), positions))
		}
	}
	prmtA := []uint64{0x88442211, 0x01827fff}
	prmtB := []uint64{0x99aabbcc, 0x7f800001}
	add("prmt.b32 D, A, B, C", []int{32, 32, 32}, []int{32}, triples(prmtA, prmtB,
		[]uint64{0x3210, 0x0123, 0x7654, 0x4567, 0x8888, 0xffff, 0x1f2e, 0x5140, 0x9abc, 0x76543210, 0xffff3210}))
	for _, m := range []string{"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"} {
		add("prmt.b32."+m+" D, A, B, C", []int{32, 32, 32}, []int{32}, triples(prmtA, prmtB, []uint64{0, 1, 2, 3, 7, 0xfffffffc}))
	}
	lopIn := [][3]uint64{{0xf0f0f0f0, 0xcccccccc, 0xaaaaaaaa}, {0x12345678, 0x9abcdef0, 0x0f0f00ff}, {0, 0xffffffff, 0x80000001}}
	for _, lut := range []int{0x00, 0x01, 0x80, 0x96, 0xe8, 0xfe, 0xff, 0xca, 0x1e, 0x3c, 0x6a} {
		add(fmt.Sprintf("lop3.b32 D, A, B, C, %d", lut), []int{32, 32, 32}, []int{32}, lopIn)
	}
	// Loads sign- or zero-extend into wider registers.
	for _, l := range []struct {
		ty  string
		dst int
		w   int
	}{{"s8", 16, 8}, {"s8", 32, 8}, {"s8", 64, 8}, {"u8", 32, 8}, {"s16", 32, 16}, {"s16", 64, 16}, {"u16", 64, 16}, {"s32", 64, 32}, {"u32", 64, 32}} {
		add(fmt.Sprintf("ld.global.%s D, [%%pi]", l.ty), nil, []int{l.dst}, singles(intVals(l.w)))
	}
	// Pack and unpack.
	v16 := intVals(16)
	add("mov.b32 D, {A, B}", []int{16, 16}, []int{32}, pairs(pick(v16, 2), pick(v16, 3)))
	add("mov.b32 {D, D2}, A", []int{32}, []int{16, 16}, singles(v32))
	add("mov.b64 D, {A, B}", []int{32, 32}, []int{64}, pairs(pick(v32, 2), pick(v32, 3)))
	add("mov.b64 {D, D2}, A", []int{64}, []int{32, 32}, singles(intVals(64)))
	// Floats.
	floatForms(add)
	convertForms(add)
	atomForms(add)
	// Forms of PTX ISA 8.1 (fp8 conversions, SIMD16 min and max, brace
	// operands with immediates).
	n := len(fs)
	fp8Forms(add)
	for _, f := range fs[n:] {
		f.Version = "8.1"
	}
	// Flush-to-zero and the sign of zero, on inputs of their own.
	n = len(fs)
	zeroForms(add)
	for _, f := range fs[n:] {
		f.Set = "zero"
	}
	return fs
}

func floatForms(add func(string, []int, []int, [][3]uint64)) {
	cmps := []string{"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"}
	// f32
	for _, op := range []string{"add", "sub", "mul"} {
		for _, m := range []string{"", ".rn", ".rz", ".rm", ".rp", ".ftz", ".sat", ".rn.ftz.sat"} {
			add(op+m+".f32 D, A, B", []int{32, 32}, []int{32}, pairs(f32Vals, f32Vals))
		}
	}
	for _, m := range []string{".rn", ".rz", ".rm", ".rp", ".rn.ftz", ".rn.sat"} {
		add("fma"+m+".f32 D, A, B, C", []int{32, 32, 32}, []int{32}, triples(pick(f32Vals, 2), pick(f32Vals, 3), pick(f32Vals, 2)))
		add("div"+m+".f32 D, A, B", []int{32, 32}, []int{32}, pairs(f32Vals, f32Vals))
	}
	add("mad.rn.f32 D, A, B, C", []int{32, 32, 32}, []int{32}, triples(pick(f32Vals, 3), pick(f32Vals, 2), pick(f32Vals, 3)))
	for _, op := range []string{"min", "max"} {
		for _, m := range []string{"", ".ftz", ".NaN"} {
			add(op+m+".f32 D, A, B", []int{32, 32}, []int{32}, pairs(f32Vals, f32Vals))
		}
	}
	for _, op := range []string{"neg", "abs"} {
		add(op+".f32 D, A", []int{32}, []int{32}, singles(f32Vals))
		add(op+".ftz.f32 D, A", []int{32}, []int{32}, singles(f32Vals))
	}
	for _, c := range cmps {
		add("setp."+c+".f32 D|D2, A, B", []int{32, 32}, []int{1, 1}, pairs(f32Vals, f32Vals))
	}
	add("setp.lt.ftz.f32 D|D2, A, B", []int{32, 32}, []int{1, 1}, pairs(f32Vals, f32Vals))
	// f64
	for _, op := range []string{"add", "sub", "mul"} {
		for _, m := range []string{"", ".rn"} {
			add(op+m+".f64 D, A, B", []int{64, 64}, []int{64}, pairs(f64Vals, f64Vals))
		}
	}
	add("fma.rn.f64 D, A, B, C", []int{64, 64, 64}, []int{64}, triples(pick(f64Vals, 2), pick(f64Vals, 3), pick(f64Vals, 2)))
	add("div.rn.f64 D, A, B", []int{64, 64}, []int{64}, pairs(f64Vals, f64Vals))
	for _, op := range []string{"min", "max", "min.NaN", "max.NaN"} {
		add(op+".f64 D, A, B", []int{64, 64}, []int{64}, pairs(f64Vals, f64Vals))
	}
	for _, op := range []string{"neg", "abs"} {
		add(op+".f64 D, A", []int{64}, []int{64}, singles(f64Vals))
	}
	for _, c := range cmps {
		add("setp."+c+".f64 D|D2, A, B", []int{64, 64}, []int{1, 1}, pairs(f64Vals, f64Vals))
	}
	// f16, bf16 and their pairs.
	for _, h := range []struct {
		ty   string
		vals []uint64
		mods []string
	}{
		{"f16", f16Vals, []string{"", ".rn", ".ftz", ".sat", ".rn.ftz.sat"}},
		{"bf16", bf16Vals, []string{"", ".rn"}},
	} {
		for _, x2 := range []bool{false, true} {
			ty := h.ty
			w := 16
			in := pairs(h.vals, h.vals)
			in3 := triples(pick(h.vals, 2), pick(h.vals, 2), pick(h.vals, 3))
			one := singles(h.vals)
			if x2 {
				ty += "x2"
				w = 32
				in = packedPairs(h.vals)
				in3 = packedPairs(h.vals)
				one = packedPairs(h.vals)
			}
			for _, op := range []string{"add", "sub", "mul"} {
				for _, m := range h.mods {
					add(op+m+"."+ty+" D, A, B", []int{w, w}, []int{w}, in)
				}
			}
			for _, m := range h.mods {
				if m == "" {
					continue
				}
				add("fma"+m+"."+ty+" D, A, B, C", []int{w, w, w}, []int{w}, in3)
			}
			mm := []string{"", ".NaN"}
			if h.ty == "f16" {
				mm = append(mm, ".ftz")
			}
			for _, op := range []string{"min", "max"} {
				for _, m := range mm {
					add(op+m+"."+ty+" D, A, B", []int{w, w}, []int{w}, in)
				}
			}
			for _, op := range []string{"neg", "abs"} {
				add(op+"."+ty+" D, A", []int{w}, []int{w}, one)
				if h.ty == "f16" {
					add(op+".ftz."+ty+" D, A", []int{w}, []int{w}, one)
				}
			}
			if !x2 {
				for _, c := range cmps {
					add("setp."+c+"."+ty+" D|D2, A, B", []int{w, w}, []int{1, 1}, in)
				}
			}
		}
	}
}

func convertForms(add func(string, []int, []int, [][3]uint64)) {
	floats := []struct {
		ty   string
		w    int
		vals []uint64
	}{{"f16", 16, f16Vals}, {"bf16", 16, bf16Vals}, {"f32", 32, f32Vals}, {"f64", 64, f64Vals}}
	// Between floats.
	extra32 := append(append([]uint64(nil), f32Vals...), 0x38800000, 0x387fe000, 0x33000000, 0x33000001, 0x477ff000, 0x477fefff,
		0x3f801000, 0x3f803000, 0x3f808000, 0x3f818000, 0x00400000, 0xc77ff000, 0x4effffff, 0xcf000000, 0x5f000000, 0x3effffff, 0x3f000000, 0xbf400000)
	extra64 := append(append([]uint64(nil), f64Vals...), 0x3ff0000010000000, 0x3ff0000030000000, 0x36a0000000000000, 0x47efffffefffffff,
		0x43e0000000000000, 0xc3e0000000000000, 0x43f0000000000000, 0x41dfffffffc00000, 0xc1e0000000000000, 0x3fe0000000000000, 0x3ff8000000000000, 0x4004000000000000)
	for _, src := range floats {
		vals := src.vals
		if src.ty == "f32" {
			vals = extra32
		} else if src.ty == "f64" {
			vals = extra64
		}
		for _, dst := range floats {
			if src.ty == dst.ty {
				for _, m := range []string{".rni", ".rzi", ".rmi", ".rpi"} {
					if src.w >= 32 {
						add(fmt.Sprintf("cvt%s.%s.%s D, A", m, dst.ty, src.ty), []int{src.w}, []int{dst.w}, singles(vals))
					}
				}
				continue
			}
			widen := dst.w > src.w && !(src.ty == "f16" && dst.ty == "bf16")
			if widen {
				add(fmt.Sprintf("cvt.%s.%s D, A", dst.ty, src.ty), []int{src.w}, []int{dst.w}, singles(vals))
				continue
			}
			for _, m := range []string{".rn", ".rz", ".rm", ".rp"} {
				add(fmt.Sprintf("cvt%s.%s.%s D, A", m, dst.ty, src.ty), []int{src.w}, []int{dst.w}, singles(vals))
			}
		}
	}
	add("cvt.ftz.f32.f32 D, A", []int{32}, []int{32}, singles(extra32))
	add("cvt.sat.f32.f32 D, A", []int{32}, []int{32}, singles(extra32))
	add("cvt.rn.relu.f16.f32 D, A", []int{32}, []int{16}, singles(extra32))
	add("cvt.rn.relu.bf16.f32 D, A", []int{32}, []int{16}, singles(extra32))
	add("cvt.rn.f16x2.f32 D, A, B", []int{32, 32}, []int{32}, pairs(pick(extra32, 2), pick(extra32, 3)))
	add("cvt.rz.f16x2.f32 D, A, B", []int{32, 32}, []int{32}, pairs(pick(extra32, 2), pick(extra32, 3)))
	add("cvt.rn.bf16x2.f32 D, A, B", []int{32, 32}, []int{32}, pairs(pick(extra32, 2), pick(extra32, 3)))
	add("cvt.rn.relu.bf16x2.f32 D, A, B", []int{32, 32}, []int{32}, pairs(pick(extra32, 2), pick(extra32, 3)))
	// Float to integer and back.
	ints := []struct {
		ty string
		w  int // register width
		bw int // value width
	}{{"s8", 16, 8}, {"u8", 16, 8}, {"s16", 16, 16}, {"u16", 16, 16}, {"s32", 32, 32}, {"u32", 32, 32}, {"s64", 64, 64}, {"u64", 64, 64}}
	for _, src := range floats {
		vals := src.vals
		if src.ty == "f32" {
			vals = extra32
		} else if src.ty == "f64" {
			vals = extra64
		}
		for _, it := range ints {
			for _, m := range []string{".rni", ".rzi", ".rmi", ".rpi"} {
				if (src.ty == "f16" || src.ty == "bf16") && m != ".rni" && m != ".rzi" {
					continue
				}
				add(fmt.Sprintf("cvt%s.%s.%s D, A", m, it.ty, src.ty), []int{src.w}, []int{it.w}, singles(vals))
			}
			ivals := intVals(it.bw)
			if it.bw == 8 {
				// 8-bit sources live in 16-bit registers: set high bits too.
				for i, v := range ivals {
					ivals[i] = v | uint64(i%2)*0xab00
				}
			}
			for _, m := range []string{".rn", ".rz", ".rm", ".rp"} {
				if (src.ty == "f16" || src.ty == "bf16") && m != ".rn" && m != ".rz" {
					continue
				}
				add(fmt.Sprintf("cvt%s.%s.%s D, A", m, src.ty, it.ty), []int{it.w}, []int{src.w}, singles(ivals))
			}
		}
	}
	add("cvt.rzi.ftz.s32.f32 D, A", []int{32}, []int{32}, singles(extra32))
	// Between integers.
	for _, c := range []struct {
		dst, src string
		dw, sw   int
		bits     int
	}{
		{"s8", "s32", 32, 32, 32}, {"u8", "s32", 32, 32, 32}, {"s16", "s32", 32, 32, 32}, {"s8", "s32", 16, 32, 32},
		{"s32", "s8", 32, 16, 16}, {"u32", "s8", 32, 16, 16}, {"s32", "u8", 32, 16, 16}, {"s64", "s32", 64, 32, 32},
		{"u64", "s32", 64, 32, 32}, {"s64", "u32", 64, 32, 32}, {"s32", "s64", 32, 64, 64}, {"u16", "u64", 16, 64, 64},
		{"s64", "s16", 64, 16, 16},
	} {
		add(fmt.Sprintf("cvt.%s.%s D, A", c.dst, c.src), []int{c.sw}, []int{c.dw}, singles(intVals(c.bits)))
	}
	for _, c := range []struct {
		dst, src string
		dw, sw   int
	}{
		{"s8", "s32", 32, 32}, {"u8", "s32", 32, 32}, {"s32", "s64", 32, 64}, {"u32", "s32", 32, 32},
		{"s16", "u32", 16, 32}, {"u32", "s64", 32, 64}, {"s32", "u64", 32, 64}, {"u64", "s64", 64, 64}, {"s64", "u64", 64, 64},
	} {
		add(fmt.Sprintf("cvt.sat.%s.%s D, A", c.dst, c.src), []int{c.sw}, []int{c.dw}, singles(intVals(c.sw)))
	}
}

func atomForms(add func(string, []int, []int, [][3]uint64)) {
	v32, v64 := intVals(32), intVals(64)
	for _, a := range []struct {
		op   string
		w    int
		vals []uint64
	}{
		{"add.f32", 32, f32Vals}, {"add.f64", 64, f64Vals}, {"min.s32", 32, v32}, {"max.s32", 32, v32},
		{"min.u32", 32, v32}, {"max.u32", 32, v32}, {"min.s64", 64, v64}, {"max.s64", 64, v64},
		{"min.u64", 64, v64}, {"max.u64", 64, v64}, {"inc.u32", 32, v32}, {"dec.u32", 32, v32},
		{"exch.b32", 32, v32}, {"add.u64", 64, v64},
	} {
		add(fmt.Sprintf("st.global.b%d [%%po], A; atom.global.%s D, [%%po], B; ld.global.b%d D2, [%%po]", a.w, a.op, a.w),
			[]int{a.w, a.w}, []int{a.w, a.w}, pairs(a.vals, a.vals))
	}
	add("st.global.b32 [%po], A; atom.global.cas.b32 D, [%po], B, C; ld.global.b32 D2, [%po]",
		[]int{32, 32, 32}, []int{32, 32}, triples(pick(v32, 2), pick(v32, 2), pick(v32, 3)))
	add("st.global.b32 [%po], A; red.global.add.f32 [%po], B; ld.global.b32 D, [%po]",
		[]int{32, 32}, []int{32}, pairs(f32Vals, f32Vals))
	add("st.global.b32 [%po], A; red.global.max.s32 [%po], B; ld.global.b32 D, [%po]",
		[]int{32, 32}, []int{32}, pairs(v32, v32))
}

// fp8Value is the value of fp8 code c (sign bit clear) of e4m3 (4
// exponent bits, bias 7, no infinities) or e5m2 (5 exponent bits, bias
// 15), computed from the definitions.
func fp8Value(c int, e4m3 bool) float64 {
	if e4m3 {
		exp, man := c>>3, c&7
		if exp == 0 {
			return math.Ldexp(float64(man), -9)
		}
		return math.Ldexp(float64(8+man), exp-10)
	}
	exp, man := c>>2, c&3
	if exp == 0 {
		return math.Ldexp(float64(man), -16)
	}
	return math.Ldexp(float64(4+man), exp-17)
}

// fp8F32Vals are f32 values around every fp8 value of both formats: the
// values, the midpoints between neighbours and the f32 values next to
// them, values past the largest finite ones, and the f32 edge values.
func fp8F32Vals() []uint64 {
	seen := map[uint64]bool{}
	var out []uint64
	addF := func(x float64) {
		for _, v := range []float32{float32(x), -float32(x)} {
			b := uint64(math.Float32bits(v))
			if !seen[b] {
				seen[b] = true
				out = append(out, b)
			}
		}
	}
	for _, e4m3 := range []bool{true, false} {
		last := 0x7b // e5m2's largest finite code
		if e4m3 {
			last = 0x7e
		}
		for c := 0; c <= last; c++ {
			v := fp8Value(c, e4m3)
			addF(v)
			next := 2 * v // past the largest: where rounding would go on
			if c < last {
				next = fp8Value(c+1, e4m3)
			}
			mid := float32((v + next) / 2)
			addF(float64(mid))
			addF(float64(math.Nextafter32(mid, 0)))
			addF(float64(math.Nextafter32(mid, float32(math.Inf(1)))))
		}
	}
	for _, x := range []float64{480, 500, 1e5, 61440, 65536, 1e30, math.Ldexp(1, -20), math.Ldexp(1, -40)} {
		addF(x)
	}
	for _, b := range f32Vals {
		if !seen[b] {
			seen[b] = true
			out = append(out, b)
		}
	}
	return out
}

func fp8Forms(add func(string, []int, []int, [][3]uint64)) {
	// Every fp8 code in both halves of a pair.
	var codes [][3]uint64
	for c := uint64(0); c < 256; c++ {
		codes = append(codes, [3]uint64{c | (c*37+11)&255<<8})
	}
	// Every f16 value once: the even codes in the low half of an f16x2,
	// the odd ones in the high half.
	var halves [][3]uint64
	for h := uint64(0); h < 1<<16; h += 2 {
		halves = append(halves, [3]uint64{h | (h^0x8000+1)<<16})
	}
	f32s := fp8F32Vals()
	var f32Pairs [][3]uint64
	for i, a := range f32s {
		f32Pairs = append(f32Pairs, [3]uint64{a, f32s[(i*7+3)%len(f32s)]})
	}
	for _, f8 := range []string{"e4m3x2", "e5m2x2"} {
		for _, relu := range []string{"", ".relu"} {
			add("cvt.rn"+relu+".f16x2."+f8+" D, A", []int{16}, []int{32}, codes)
			add("cvt.rn.satfinite"+relu+"."+f8+".f32 D, A, B", []int{32, 32}, []int{16}, f32Pairs)
			in := halves
			if relu != "" {
				in = packedPairs(f16Vals)
			}
			add("cvt.rn.satfinite"+relu+"."+f8+".f16x2 D, A", []int{32}, []int{16}, in)
		}
	}
	v16 := intVals(16)
	for _, op := range []string{"min", "max"} {
		for _, ty := range []string{".u16x2", ".s16x2", ".relu.s16x2"} {
			add(op+ty+" D, A, B", []int{32, 32}, []int{32}, packedPairs(v16))
		}
	}
	add("mov.b32 D, {0, A}", []int{16}, []int{32}, singles(v16))
	add("mov.b32 D, {A, -1}", []int{16}, []int{32}, singles(v16))
	add("mov.b64 D, {A, 0x1234}", []int{32}, []int{64}, singles(intVals(32)))
}

// Values around the subnormal range and the two zeros of each format: the
// zeros, the smallest and largest subnormals, half the smallest normal,
// the smallest normals and their neighbours, both signs, and operands
// whose sums, products and quotients land among them.
var (
	zeroF32 = []uint64{
		0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff, 0x807fffff, 0x00400000, 0x80400000,
		0x00800000, 0x80800000, 0x00800001, 0x80800001, 0x3f000000, 0xbf000000, 0x3f7fffff, 0xbf7fffff,
		0x3f800000, 0xbf800000, 0x34000000, 0x7f800000, 0x7fc00000,
	}
	// zeroF32Narrow adds f32 values at the subnormal edges of f16: the
	// smallest f16 subnormal (2^-24), half of it and its neighbours, the
	// largest f16 subnormal and the smallest normal, both signs.
	zeroF32Narrow = append(append([]uint64(nil), zeroF32...),
		0x33800000, 0xb3800000, 0x33000000, 0xb3000000, 0x33000001, 0xb3000001, 0x32ffffff, 0xb2ffffff,
		0x32800000, 0xb2800000, 0x387fc000, 0xb87fc000, 0x387fe000, 0xb87fe000, 0x38800000, 0xb8800000,
		0xb37fffff, 0xb3c00000)
	zeroF16 = []uint64{
		0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0200, 0x8200, 0x0400, 0x8400, 0x0401, 0x8401,
		0x3800, 0xb800, 0x3bff, 0x3c00, 0xbc00, 0x7c00, 0x7e00,
	}
	zeroBF16 = []uint64{
		0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x807f, 0x0040, 0x8040, 0x0080, 0x8080, 0x0081, 0x8081,
		0x3f00, 0xbf00, 0x3f7f, 0x3f80, 0xbf80, 0x7f80, 0x7fc0,
	}
	zeroF64 = []uint64{
		0, 1 << 63, 1, 1<<63 | 1, 0x000fffffffffffff, 0x800fffffffffffff, 0x0010000000000000, 0x8010000000000000,
		0x3810000000000000, 0xb810000000000000, 0x380fffffffffffff, 0xb80fffffffffffff, 0x36a0000000000000,
		0xb6a0000000000000, 0x3690000000000000, 0xb690000000000000, 0x37e0000000000000, 0xb7e0000000000000,
		math.Float64bits(1), math.Float64bits(-1),
	}
)

// zeroForms are the forms of flush-to-zero (.ftz, where PTX defines it)
// and the sign of zero: arithmetic whose inputs or results are subnormal
// (negative ones flush to -0), comparisons, min and max of -0 and +0,
// neg and abs of either zero, and conversions of tiny values, the
// operations a sentinel of -0 (Lamport-style polling) relies on.
func zeroForms(add func(string, []int, []int, [][3]uint64)) {
	cmps := []string{"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"}
	p32 := pairs(zeroF32, zeroF32)
	for _, op := range []string{"add", "sub", "mul"} {
		for _, m := range []string{"", ".ftz", ".rn.ftz", ".rz.ftz", ".rm.ftz", ".rp.ftz", ".rm"} {
			add(op+m+".f32 D, A, B", []int{32, 32}, []int{32}, p32)
		}
	}
	fmaIn := triples(zeroF32, pick(zeroF32, 2), []uint64{0, 1 << 31, 1, 0x80000001, 0x00800000, 0x80800000})
	for _, m := range []string{".rn", ".rn.ftz", ".rz.ftz", ".rm.ftz", ".rp.ftz"} {
		add("fma"+m+".f32 D, A, B, C", []int{32, 32, 32}, []int{32}, fmaIn)
	}
	add("mad.rn.ftz.f32 D, A, B, C", []int{32, 32, 32}, []int{32}, fmaIn)
	for _, m := range []string{".rn", ".rn.ftz", ".rz.ftz", ".rm.ftz", ".rp.ftz"} {
		add("div"+m+".f32 D, A, B", []int{32, 32}, []int{32}, p32)
	}
	for _, op := range []string{"min", "max"} {
		for _, m := range []string{"", ".ftz", ".NaN", ".ftz.NaN"} {
			add(op+m+".f32 D, A, B", []int{32, 32}, []int{32}, p32)
		}
	}
	for _, op := range []string{"neg", "abs"} {
		for _, m := range []string{"", ".ftz"} {
			add(op+m+".f32 D, A", []int{32}, []int{32}, singles(zeroF32))
		}
	}
	for _, c := range cmps {
		for _, m := range []string{"", ".ftz"} {
			add("setp."+c+m+".f32 D|D2, A, B", []int{32, 32}, []int{1, 1}, p32)
		}
	}
	// What a writer does to a value before storing it over a -0 sentinel,
	// and what a reader compares it with: adding +0 (which makes -0 +0),
	// multiplying by 1 with .ftz (which flushes), max with +0, comparing
	// with a -0 immediate. Not mul.f32 by an immediate 1.0: ptxas folds it
	// into a move, which keeps a NaN's payload (an H200 gave 0x7fc00000 for
	// 0x7fc00000, where mul.f32 of registers gives 0x7fffffff), so its
	// result is the assembler's, not the instruction's.
	for _, text := range []string{
		"add.f32 D, A, 0f00000000", "add.ftz.f32 D, A, 0f00000000", "add.f32 D, A, 0f80000000",
		"sub.f32 D, A, 0f00000000", "mul.ftz.f32 D, A, 0f3F800000",
		"max.f32 D, A, 0f00000000", "min.f32 D, A, 0f80000000",
	} {
		add(text, []int{32}, []int{32}, singles(zeroF32))
	}
	add("setp.eq.f32 D|D2, A, 0f80000000", []int{32}, []int{1, 1}, singles(zeroF32))
	add("setp.ne.ftz.f32 D|D2, A, 0f80000000", []int{32}, []int{1, 1}, singles(zeroF32))
	add("mov.f32 D, 0f80000000; neg.f32 D2, D", nil, []int{32, 32}, [][3]uint64{{0}})
	// Atomic float adds flush subnormal operands and results.
	add("st.global.b32 [%po], A; atom.global.add.f32 D, [%po], B; ld.global.b32 D2, [%po]", []int{32, 32}, []int{32, 32}, p32)
	add("st.global.b32 [%po], A; red.global.add.f32 [%po], B; ld.global.b32 D, [%po]", []int{32, 32}, []int{32}, p32)
	// f16, bf16 and their pairs.
	for _, h := range []struct {
		ty    string
		vals  []uint64
		arith []string // modifiers of add, sub, mul and fma
		mm    []string // of min and max
		unary []string // of neg and abs
		setp  []string
	}{
		{"f16", zeroF16, []string{".rn", ".ftz", ".rn.ftz"}, []string{"", ".ftz", ".NaN", ".ftz.NaN"}, []string{"", ".ftz"}, []string{"", ".ftz"}},
		{"bf16", zeroBF16, []string{".rn"}, []string{"", ".NaN"}, []string{""}, []string{""}},
	} {
		for _, x2 := range []bool{false, true} {
			ty, w := h.ty, 16
			in, in3, one := pairs(h.vals, h.vals), triples(pick(h.vals, 2), pick(h.vals, 2), pick(h.vals, 3)), singles(h.vals)
			if x2 {
				ty, w = ty+"x2", 32
				in = packedPairs(h.vals)
				in3, one = in, in
			}
			for _, m := range h.arith {
				for _, op := range []string{"add", "sub", "mul"} {
					add(op+m+"."+ty+" D, A, B", []int{w, w}, []int{w}, in)
				}
				if m != ".ftz" {
					add("fma"+m+"."+ty+" D, A, B, C", []int{w, w, w}, []int{w}, in3)
				}
			}
			for _, op := range []string{"min", "max"} {
				for _, m := range h.mm {
					add(op+m+"."+ty+" D, A, B", []int{w, w}, []int{w}, in)
				}
			}
			for _, op := range []string{"neg", "abs"} {
				for _, m := range h.unary {
					add(op+m+"."+ty+" D, A", []int{w}, []int{w}, one)
				}
			}
			if !x2 {
				// One predicate: the 16-bit forms have no second.
				for _, c := range cmps {
					for _, m := range h.setp {
						add("setp."+c+m+"."+ty+" D, A, B", []int{w, w}, []int{1}, in)
					}
				}
			}
		}
	}
	// f64 keeps its subnormals (no .ftz): the zeros' signs and the
	// subnormal edges.
	p64 := pairs(zeroF64, zeroF64)
	for _, op := range []string{"add.rn", "sub.rn", "mul.rn", "div.rn", "min", "max"} {
		add(op+".f64 D, A, B", []int{64, 64}, []int{64}, p64)
	}
	for _, c := range []string{"eq", "ne", "lt", "le", "gtu", "neu"} {
		add("setp."+c+".f64 D|D2, A, B", []int{64, 64}, []int{1, 1}, p64)
	}
	// Conversions of tiny values, with and without .ftz: f32 to the
	// 16-bit formats (-2^-26 becomes -0), to and from f64, and within f32.
	n32 := singles(zeroF32Narrow)
	for _, dst := range []string{"f16", "bf16"} {
		for _, m := range []string{".rn", ".rz", ".rm", ".rp", ".rn.ftz"} {
			add("cvt"+m+"."+dst+".f32 D, A", []int{32}, []int{16}, n32)
		}
	}
	for _, dst := range []string{"f16x2", "bf16x2"} {
		add("cvt.rn."+dst+".f32 D, A, B", []int{32, 32}, []int{32}, pairs(pick(zeroF32Narrow, 2), pick(zeroF32Narrow, 3)))
	}
	add("cvt.f32.f16 D, A", []int{16}, []int{32}, singles(zeroF16))
	add("cvt.ftz.f32.f16 D, A", []int{16}, []int{32}, singles(zeroF16))
	add("cvt.f32.bf16 D, A", []int{16}, []int{32}, singles(zeroBF16))
	add("cvt.ftz.f32.bf16 D, A", []int{16}, []int{32}, singles(zeroBF16))
	add("cvt.f64.f32 D, A", []int{32}, []int{64}, n32)
	add("cvt.ftz.f64.f32 D, A", []int{32}, []int{64}, n32)
	for _, m := range []string{".rn", ".rz", ".rm", ".rn.ftz", ".rm.ftz"} {
		add("cvt"+m+".f32.f64 D, A", []int{64}, []int{32}, singles(zeroF64))
	}
	for _, m := range []string{".ftz", ".rni", ".rni.ftz", ".rmi.ftz", ".rzi.ftz"} {
		add("cvt"+m+".f32.f32 D, A", []int{32}, []int{32}, n32)
	}
	for _, m := range []string{".rni", ".rzi", ".rmi.ftz"} {
		add("cvt"+m+".s32.f32 D, A", []int{32}, []int{32}, n32)
	}
}
