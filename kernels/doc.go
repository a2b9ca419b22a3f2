// Package kernels owns every device kernel once, as one [Descriptor]
// passed to [Register]: its name, its argument struct and their checks,
// its launch shape and launch-shape checks, its Go body, which the
// simulator runs against a [Block] (one thread block's view of its
// device), and the CUDA entry points it has. The C side of the arguments
// and entries is package kernels/cabi, which generates cuda/abi.cuh.
//
// Adding a kernel is: its descriptor and Go body here, its CUDA body in
// cuda/kernels.cu, then `go generate ./kernels/...` and
// scripts/build-fatbin.sh. A new argument struct also joins [Args] and
// gets its C layout in kernels/cabi.
//
// The CUDA twins of the bodies must compute bitwise the same results; the
// rules they must follow are written down here.
//
// # Arithmetic
//
// Reductions accumulate in float32 in fixed rank order 0..W-1 and round to
// the element type once:
//
//	acc = x[0]                          (decoded exactly to float32)
//	for r = 1..W-1: acc = op(acc, x[r]) (each step rounded to float32)
//	avg: acc = acc / float32(W)         (IEEE division, round to nearest even)
//	NaN results become the type's canonical quiet NaN
//	store round_to_nearest_even(acc)
//
// sum and avg add with IEEE float32 addition (no fused operations, no flush of
// subnormals: CUDA code must be built without fast-math). max takes x[r]
// when x[r] is NaN or x[r] > acc; min takes x[r] when x[r] is NaN or
// x[r] < acc; so NaN propagates and, among equal values (such as -0 and +0),
// the lowest rank wins. Canonical NaNs are 0x7fffffff (float32), 0x7fff
// (bfloat16) and 0x7fff (float16). Because accumulation starts from x[0],
// not from zero, a world of one returns its input (with NaNs canonicalised).
//
// Conversions: [BF16FromFloat32] and [F16FromFloat32] round to nearest even
// (CUDA's __float2bfloat16_rn and __float2half_rn); the reverse conversions
// are exact.
//
// # Signals inside kernels
//
// Block b of every rank synchronises with block b of every peer on channel
// b; lane p (thread p) handles peer p. A barrier is, for every peer p other
// than the rank itself, a put to p followed by a wait from p, each a
// compare-and-swap loop at system scope following package signal's rules.
// Collective kernels use three barriers: at the start (put relaxed, wait
// acquire; the copy form puts with release so the copied input is
// published), in the middle of the two-shot "_out" form (release put,
// acquire wait) and at the end, after the last access to peer memory
// (release put, acquire wait).
package kernels
