package fuzz

import "math/bits"

// source is the generator inputs are drawn from: math/rand/v2's PCG
// (a 128-bit LCG with the DXSM output function) and the methods of its
// Rand that inputs use, computed here so that a draw is a few
// multiplications (inlined where they fit), not calls through the Source
// interface. Inputs are
// drawn per element, and a seed's inputs must never change: a test holds
// source to rand.Rand over rand.PCG over millions of draws.
type source struct{ hi, lo uint64 }

// seed resets the source to draw as rand.New(rand.NewPCG(seed1, seed2)).
func (s *source) seed(seed1, seed2 uint64) { s.hi, s.lo = seed1, seed2 }

// uint64 is PCG.Uint64: the state steps as state*mul + inc modulo 2^128,
// and DXSM mixes the new state's halves into the result.
func (s *source) uint64() uint64 {
	const (
		mulHi, mulLo = 2549297995355413924, 4865540595714422341
		incHi, incLo = 6364136223846793005, 1442695040888963407
		mix          = 0xda942042e4dd58b5
	)
	hi, lo := bits.Mul64(s.lo, mulLo)
	hi += s.hi*mulLo + s.lo*mulHi
	lo, carry := bits.Add64(lo, incLo, 0)
	hi, _ = bits.Add64(hi, incHi, carry)
	s.hi, s.lo = hi, lo
	hi ^= hi >> 32
	hi *= mix
	hi ^= hi >> 48
	return hi * (lo | 1)
}

// uint32 is Rand.Uint32: the high half of the next 64 bits.
func (s *source) uint32() uint32 { return uint32(s.uint64() >> 32) }

// float64 is Rand.Float64: 53 random bits as a fraction in [0, 1).
func (s *source) float64() float64 { return float64(s.uint64()<<11>>11) / (1 << 53) }

// intN is Rand.IntN for n > 0: a power of two masks; any other n takes the
// high word of a 128-bit product, rejecting the few low words that would
// bias it, as math/rand/v2 computes it on 64-bit machines (and, by design,
// on 32-bit ones).
func (s *source) intN(n int) int {
	un := uint64(n)
	if un&(un-1) == 0 {
		return int(s.uint64() & (un - 1))
	}
	hi, lo := bits.Mul64(s.uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(s.uint64(), un)
		}
	}
	return int(hi)
}

// intPow2 is intN for n a power of two, which masks: small enough to be
// inlined where intN is not.
func (s *source) intPow2(n int) int { return int(s.uint64() & uint64(n-1)) }
