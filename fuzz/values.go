package fuzz

import (
	"encoding/binary"
	"math"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// Inputs. Most collectives get seeded values in [-1, 1), exactly
// representable in their dtype, with every 17th element a small integer.
// One collective in specialShare instead gets special values in about half
// its elements: each such element draws a theme that every rank shares
// (zeros, infinities, NaNs, the largest finite values, subnormals, or
// values whose sum rounds differently in another order), and each rank
// draws its own value of that theme, so that the ranks' values meet: +0 and
// -0 tie, a NaN arrives from a rank other than 0, two large values
// overflow, an infinity meets its negative.
//
// NaN inputs are quiet or signalling, of either sign, with random
// payloads. Their payloads never reach a result: every reduction whose
// result is NaN stores the type's canonical NaN (see package kernels), and
// so does [oracle.AllReduce], against which results are checked bitwise.

// specialShare is one over the share of collectives with special values.
const specialShare = 4

// theme is the kind of value an element of a special input draws.
type theme int

const (
	themePlain    theme = iota // a value in [-1, 1)
	themeZero                  // +0 or -0 (or, rarely, the smallest subnormal)
	themeInf                   // +inf or -inf, or a plain value
	themeNaN                   // a NaN in about half the ranks, plain values in the others
	themeHuge                  // the largest finite value or half of it, either sign: sums overflow
	themeTiny                  // subnormals and the smallest normal, either sign
	themeRounding              // powers of two far apart: the sum depends on the order
	numThemes
)

// bitsOf are the bit patterns of one dtype's special values.
type bitsOf struct {
	size     int    // bytes
	sign     uint32 // the sign bit
	inf      uint32
	quiet    uint32 // the quiet bit of a NaN
	payload  uint32 // the payload bits below the quiet bit
	maxFin   uint32 // the largest finite value
	minNorm  uint32 // the smallest normal value
	maxSub   uint32 // the largest subnormal value (subnormals are 1 to maxSub)
	minExp   int    // the exponent of the smallest normal value
	maxExp   int    // the exponent of the largest finite value
	mantBits int
}

var dtypeBits = map[device.DType]bitsOf{
	device.Float32:  {size: 4, sign: 1 << 31, inf: 0x7f800000, quiet: 1 << 22, payload: 1<<22 - 1, maxFin: 0x7f7fffff, minNorm: 0x00800000, maxSub: 0x007fffff, minExp: -126, maxExp: 127, mantBits: 23},
	device.BFloat16: {size: 2, sign: 1 << 15, inf: 0x7f80, quiet: 1 << 6, payload: 1<<6 - 1, maxFin: 0x7f7f, minNorm: 0x0080, maxSub: 0x007f, minExp: -126, maxExp: 127, mantBits: 7},
	device.Float16:  {size: 2, sign: 1 << 15, inf: 0x7c00, quiet: 1 << 9, payload: 1<<9 - 1, maxFin: 0x7bff, minNorm: 0x0400, maxSub: 0x03ff, minExp: -14, maxExp: 15, mantBits: 10},
}

// makeInput is rank r's input to collective idx of a step in replay it.
func makeInput(seed uint64, r, step, idx, it int, c Coll) []byte {
	call := seed ^ uint64(step)<<40 ^ uint64(idx)<<32 ^ uint64(it)<<24
	var rng source
	rng.seed(call, uint64(r)+1)
	numel := int(c.Bytes / uint64(c.DType.Size()))
	b := make([]byte, numel*c.DType.Size())
	// Element i is a small integer when i is a multiple of 17, else a
	// value in [-1, 1), rounded to the dtype as [kernels.Encode] does.
	for i := range numel {
		var v float32
		if i%17 == 0 {
			v = float32(rng.intN(9) - 4)
		} else {
			v = float32(rng.float64()*2 - 1)
		}
		switch c.DType {
		case device.BFloat16:
			binary.LittleEndian.PutUint16(b[2*i:], kernels.BF16FromFloat32(v))
		case device.Float16:
			binary.LittleEndian.PutUint16(b[2*i:], kernels.F16FromFloat32(v))
		default:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
	}
	// The themes are drawn from a generator every rank shares.
	var shared source
	shared.seed(call, 0x5bec1a1)
	if shared.intN(specialShare) != 0 {
		return b
	}
	db := dtypeBits[c.DType]
	// The largest exponent of the rounding theme, shared.
	base := db.minExp + 12 + shared.intN(db.maxExp-db.minExp-11)
	for i := range numel {
		th := theme(shared.intN(2 * int(numThemes)))
		if th >= numThemes {
			continue
		}
		if v, ok := specialBits(&rng, &db, th, base, r); ok {
			putBits(b, i, db.size, v)
		}
	}
	return b
}

// specialBits draws a value of theme th for rank r; ok is false when the
// element keeps its plain value.
func specialBits(rng *source, db *bitsOf, th theme, base, r int) (bits uint32, ok bool) {
	sign := uint32(0)
	if rng.intPow2(2) == 0 {
		sign = db.sign
	}
	switch th {
	case themeZero:
		if rng.intPow2(8) == 0 {
			return sign | 1, true
		}
		return sign, true
	case themeInf:
		if rng.intN(3) == 0 {
			return 0, false
		}
		return sign | db.inf, true
	case themeNaN:
		if r == 0 && rng.intN(3) != 0 || rng.intPow2(2) == 0 {
			return 0, false // most NaNs arrive from ranks other than 0
		}
		payload := rng.uint32() & db.payload
		if rng.intPow2(2) == 0 {
			return sign | db.inf | db.quiet | payload, true
		}
		return sign | db.inf | max(payload, 1), true // signalling: a payload but no quiet bit
	case themeHuge:
		if rng.intPow2(2) == 0 {
			return sign | db.maxFin, true
		}
		return sign | (db.maxFin - 1<<db.mantBits), true // half of it, about
	case themeTiny:
		switch rng.intPow2(4) {
		case 0:
			return sign | db.minNorm, true
		case 1:
			return sign | db.maxSub, true
		}
		return sign | (1 + rng.uint32()%db.maxSub), true
	case themeRounding:
		// 2^(base-k) for k in {0, 12, 24, 25, 30}, times 1 or 1.5: the
		// float32 accumulator cannot hold the exact sum of values that
		// far apart, so it depends on the order of additions.
		e := base - []int{0, 12, 24, 25, 30}[rng.intN(5)]
		if e < db.minExp || e > db.maxExp {
			return 0, false
		}
		exp := uint32(e+(1<<(db.size*8-db.mantBits-2))-1) << db.mantBits
		mant := uint32(0)
		if rng.intPow2(2) == 0 {
			mant = 1 << (db.mantBits - 1)
		}
		return sign | exp | mant, true
	}
	return 0, false
}

func putBits(b []byte, i, size int, v uint32) {
	if size == 2 {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
		return
	}
	binary.LittleEndian.PutUint32(b[4*i:], v)
}
