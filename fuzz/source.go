package fuzz

import (
	"math/bits"
	"math/rand/v2"
)

// source draws from a PCG exactly the numbers that a math/rand/v2 Rand
// over the same PCG draws with the methods of the same names, calling the
// PCG directly rather than through the Source interface. Inputs are drawn
// per element, and a seed's inputs must never change: a test holds source
// to rand.Rand over millions of draws.
type source struct{ pcg rand.PCG }

// seed resets the source to draw as rand.New(rand.NewPCG(seed1, seed2)).
func (s *source) seed(seed1, seed2 uint64) { s.pcg.Seed(seed1, seed2) }

// uint32 is Rand.Uint32: the high half of the next 64 bits.
func (s *source) uint32() uint32 { return uint32(s.pcg.Uint64() >> 32) }

// float64 is Rand.Float64: 53 random bits as a fraction in [0, 1).
func (s *source) float64() float64 { return float64(s.pcg.Uint64()<<11>>11) / (1 << 53) }

// intN is Rand.IntN for n > 0: Lemire's multiply-shift reduction with
// rejection, masking for powers of two, as math/rand/v2 computes it on
// 64-bit machines (and, by design, on 32-bit ones).
func (s *source) intN(n int) int {
	un := uint64(n)
	if un&(un-1) == 0 {
		return int(s.pcg.Uint64() & (un - 1))
	}
	hi, lo := bits.Mul64(s.pcg.Uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(s.pcg.Uint64(), un)
		}
	}
	return int(hi)
}
