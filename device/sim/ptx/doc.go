// Package ptx parses and interprets PTX, so that the simulator can run the
// very code a GPU runs: the project's kernels and kernels written
// elsewhere.
//
// It covers integer, bit and logic arithmetic (add to rem, mul.hi/wide,
// mad, min/max, abs/neg, shifts, bfe/bfi, prmt in every mode, lop3,
// popc/clz/brev), floating point in f16, bf16, f32 and f64 and the packed
// f16x2/bf16x2 (add/sub/mul/fma/div/min/max/neg/abs with the .rn/.rz/.rm/
// .rp, .ftz, .sat and .NaN modifiers PTX defines for them), setp in every
// comparison (unordered ones included), cvt between every integer and
// float type with its rounding, saturation and .relu, mov with {a, b}
// packing and unpacking (an element of the braces may be an immediate),
// predicates and branches, ld/st in the global,
// shared, local and param spaces with vector forms and cache hints
// (ld.global.nc), atom and red with memory order and scope, membar/fence,
// bar and barrier (sync, arrive, red.popc/.and/.or; see Barriers below),
// shfl.sync, vote.sync, activemask and bar.warp.sync, special
// registers (%clock and %clock64 included), calls with parameters and
// return values, trap and __assertfail (reaching them is a [TrapError]),
// vprintf (formatted, its text quoted by a [TrapError] that follows),
// the fp8 conversions (cvt between .e4m3x2/.e5m2x2 and f16x2 or two
// f32, with .satfinite and .relu), SIMD16 min/max (.u16x2, .s16x2,
// .relu), .f32x2 add/sub/mul/fma, module-scope .global and .const
// variables with their initializers (read-only, at [GlobalVarWindow]),
// and the hints prefetch, prefetchu and griddepcontrol (no effect: the
// simulator runs a stream's kernels one after the other). Registers
// declared without a % (inline assembly's) are registers like others.
// rsqrt.approx.f32 (and .ftz) runs bit for bit as an H200 computes it,
// from a table of its results that the GPU checked against every input
// (rsqrt.go). Anything else is refused when a function is decoded, never
// guessed (the other approximations among it: ex2, lg2, sin, cos, tanh,
// rcp and div .approx give the hardware's results, which no formula
// gives bit for bit):
// [Module.Unsupported] lists every refused statement of an entry and the
// functions it calls, each with its line; a module-scope statement the
// parser refuses does not stop the rest of the module, and
// [Module.AllUnsupported] lists it too.
//
// Debug line directives (.file and .loc, as nvcc -lineinfo writes them)
// are skipped, every other line keeping its number; declaring a register
// with a special register's name is refused, as ptxas refuses it (a
// numbered range such as %tid<3>, whose names are %tid0 to %tid2, is not).
//
// A [Module] is the parsed text; its functions are decoded on first use,
// their registers renumbered into a register file sized by the registers
// live at once rather than by those declared (a kernel that inlines every
// case declares tens of thousands). A [Thread] runs one CUDA thread of an
// entry: it executes instructions until it exits, fails, or reaches a
// barrier of every thread of the block, where it stops so that its block
// can release it once the barrier completed (see [Thread.Run]); one that
// exits hands its registers and frames to the module's next thread. Global
// memory, atomics, fences and the clock go through an [Env], which the
// simulator implements over its address spaces, scheduler and race
// detector; shared memory and parameters live in the thread's block
// ([BlockMem]; [Module.NewBlockMemDynamic] gives it the dynamic shared
// memory that .extern .shared arrays address), local memory in the thread.
//
// Warp collectives: a thread that reaches shfl.sync or vote.sync deposits
// its operands at its warp's meeting point in the BlockMem; the last lane
// of the member mask computes every member's result. The others wait
// through the Env's [WarpWaiter] (a scheduling point). A member lane that
// exits or waits at a block barrier instead is an error of the kernel, and
// so is reading a lane outside the mask. A member waiting at a collective
// of another mask (code the warp diverged in) is waited for while any lane
// of the warp can still move; once none can, that is an error too.
// activemask gives the lanes of the warp that have neither exited nor
// stopped at a block barrier.
//
// Barriers: each block has the 16 named barriers of the PTX ISA, and bar
// and barrier run in every form: bar.sync and barrier.sync{.aligned}
// with or without a thread count b, bar.arrive and barrier.arrive (with
// one), bar.red.popc.u32 and bar.red.and/.or.pred (a destination, the
// barrier, optionally b, and a predicate, possibly negated), .cta
// anywhere. A barrier counts arrivals per warp, as the ISA does: a lane
// that arrives waits for every lane of its warp that has not exited, and
// the warp's arrival then joins the barrier's current phase, which
// completes once b threads' worth of warps arrived or, without b, once
// every thread that has not exited did; the next arrival starts the next
// phase. bar.arrive goes on once its warp arrived; bar.sync and bar.red
// wait for the phase, and bar.red's result is its reduction over the
// threads that arrived in it. A barrier without b stops the thread (its
// block resumes it, [Thread.Release]); any other waits inside the thread
// through the [BarrierEnv], which also carries the memory model's view
// of barriers: an arrival releases what its thread did to the threads the
// phase releases, and nothing else. Errors, each naming the barrier and
// its lines: an id outside 0..15; b not a positive multiple of 32 or
// larger than the block (immediates at decode, registers when run); one
// phase whose arrivals differ in b, mix bar.red with bar.sync or
// bar.arrive, or mix reductions; a warp that arrives again before the
// phase completed; and a deadlock ([ErrDeadlock]: every thread that has
// not exited waits at a barrier none of which can complete), which says
// which threads wait at which barrier and line and how far each barrier
// is; and lanes of one warp arriving at a barrier through two different
// instructions when either is .aligned (every bar form, and barrier with
// .aligned: the promise that the whole warp executes that instruction).
// bar.warp.sync is a meeting of the lanes of its member mask, as
// shfl.sync is, and for the memory model a barrier of those lanes
// (barrier NumBarriers+w of [BarrierEnv] for warp w). A block is a
// cluster of one block: the cluster special registers have its values,
// mapa to rank 0 keeps an address, .shared::cluster is the block's shared
// memory, and barrier.cluster.arrive/.wait is a barrier of the block's
// threads with a separate arrive and wait (cluster.go).
//
// Arithmetic is exact: every operation computes its result once, rounded
// in its mode (the narrower formats through float64 with rounding to odd,
// so that the final rounding is single), with the GPU's NaN rules: f32,
// f16 and bf16 results are the canonical NaN; f64 operations propagate an
// operand NaN quieted; conversions keep or drop NaN payloads as the GPU
// does; .ftz flushes subnormal operands and the results that are tiny
// after rounding (rounded with an unbounded exponent: a value just below
// the smallest normal that rounds up to it is kept), each to a zero of its
// sign; a conversion's .ftz acts on f32 values only (its f32 source or
// result, a NaN among them made canonical), never on a subnormal f16 or
// bf16. The semantics oracle (internal/oracle, testdata/oracle) holds what
// an H200 computed for 925 instruction forms over edge values (every fp8
// code, every f16 value converted to fp8; and, as the set "zero", the
// subnormal and signed-zero values of every format through the .ftz forms
// of add, sub, mul, fma, mad, div, min, max, neg, abs, setp and cvt, f32,
// f16, f16x2, bf16 and bf16x2 arithmetic, setp with -0 and +0, and atomic
// float adds), and the tests compare the interpreter with it bit for bit. Integer division by zero, whose result
// PTX leaves unspecified, is an error of the kernel.
//
// Generic addresses: global addresses are the device's virtual addresses;
// the kernel's parameters, the block's shared memory and the thread's
// local memory appear at the fixed windows [ParamWindow], [SharedWindow]
// and [LocalWindow], so cvta is the identity and a generic load of a
// parameter (a reference argument of a called function) reads the
// launch's argument bytes.
package ptx
