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
// Package oracle implements these rules on its own, element by element,
// sharing no code with this package: results are checked against it, so a
// bug in the reducer or the conversions here cannot change what they are
// checked against.
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
//
// # Peer memory order
//
// Both sides load peers' vectors in rank order 0..W-1 (one-shot, the
// two-shot reduce and its gather) and store a two-shot chunk into the
// buffers of ranks 0..W-1 in that order. The low-latency kernel sends a
// word's packet to the peers in rotated order, starting with the rank
// itself, on both sides.
//
// # Differences between the Go bodies and the CUDA kernels
//
// The Go bodies compute the same values and make the same signal
// operations; these are the remaining differences in how they run:
//
//   - Threads. A Go block is one scheduler task that handles a block's
//     share of vectors (Threads at a time, grid-stride) with a scheduling
//     point after each iteration; only barrier lanes ([Block.Lanes]) run
//     as separate tasks. On the GPU every thread runs on its own, so
//     stores of different threads to one peer may land in any order; in
//     the simulator plain loads and stores of one iteration are not split.
//   - The simulated memory is sequentially consistent: a missing order or
//     a too narrow scope never yields a stale value on its own. The race
//     detector (package device/sim/race) models the orders and scopes of
//     every signal and flags the accesses they fail to order.
//   - Low-latency packets: a block sends its iteration's packets to each
//     peer in up to llRuns runs of words, every run to every peer before
//     the next, with a scheduling point before each store, so a reader can
//     find a chunk part new, part stale, as on the GPU (where each thread
//     stores its word alone); the simulator's partial views are the prefixes
//     of those runs. A receiving block takes each peer's words in the same
//     runs, peers in rank order, a run once all its words carry the call's
//     number; a GPU thread waits for its own word of each peer in rank
//     order. The values reduced are the same.
//   - Low-latency call numbers: every Go block reads the last number with
//     a plain load; on the GPU thread 0 of each block reads it (volatile)
//     and shares it through shared memory. The finish is the same: count
//     the block with an acquire-release read-modify-write at GPU scope (the
//     GPU's __threadfence then atomicAdd; the simulator's compare-and-swap
//     loop), and the last block stores the count 0, then the number.
//   - Two-shot at worlds up to 4 loads two vectors a step on the GPU
//     (reduce2), one on the simulator; the loads and results are the same.
//   - Launch checks: the GPU checks pointers and alignment in parallel and
//     records the first failure in the error record; the simulator checks
//     them in order in each block. The errors reported are the same.
//   - Timeouts: the GPU reads the global timer every 64 spins; the
//     simulator waits in virtual time and times out exactly at the limit.
//   - Entry points: the GPU has one entry per dtype and world size 2, 4, 8
//     for 16-byte vectors beside the generic one (see [Entry]); the
//     simulator runs one body for all.
//   - Host calls on one shared GPU: ranks of one process that each open the
//     same GPU share its primary context. There the driver's cuMemFreeHost
//     waits for every kernel of the context and holds the context while it
//     waits, so a rank that freed pinned memory while a peer's kernel spun
//     for another rank kept that rank from launching until the kernel timed
//     out (device/cuda's TestGPUHostCallsDoNotWaitForPeerKernels lists the
//     calls measured; no other call of the device waited, under eager or
//     lazy module loading). The CUDA device therefore pools its streams,
//     pinned error records and modules per process and GPU, and frees them
//     at the last close. The simulator models such waits with
//     sim.Config.SharedContext: the host calls named in ContextSync
//     (destroying a stream, closing the device) wait for every kernel of the
//     context and hold it meanwhile, and every other stream call of the
//     context waits behind them. Its default names none, as the CUDA device
//     now makes none; SyncDestroyStream reproduces the device before the
//     pool, and the hang it caused.
package kernels
