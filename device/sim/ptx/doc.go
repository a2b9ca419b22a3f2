// Package ptx parses and interprets the PTX of the CUDA kernels, so that the
// simulator can run the very code a GPU runs.
//
// It covers the subset that nvcc emits for the kernels (integer and f32
// arithmetic, f16/bf16 conversions, predicates and branches, ld/st in the
// global, shared and param spaces with vector forms, atom with memory
// order and scope, membar, bar.sync and bar.red.or, special registers,
// calls of non-inlined functions). Anything else is refused with an error
// naming the instruction and its line: the interpreter never guesses.
//
// A [Module] is the parsed text; its functions are decoded on first use. A
// [Thread] runs one CUDA thread of an entry: it executes instructions until
// it exits, fails, or reaches a block barrier, where it stops so that its
// block can release it once every thread arrived (see [Thread.Run]). Global
// memory, atomics, fences and the clock go through an [Env], which the
// simulator implements over its address spaces, scheduler and race
// detector; shared memory and parameters live in the thread's block.
//
// Arithmetic follows the PTX ISA exactly where the kernels depend on it:
// f32 add and div round to nearest even (the .rn forms; Go's float32
// operations are IEEE operations with the same rounding, and subnormals are
// kept as without .ftz), cvt.rn.f16.f32 and cvt.rn.bf16.f32 round to
// nearest even with overflow to infinity, and cvt.f32.f16 is exact.
//
// Generic addresses: global addresses are the device's virtual addresses;
// the kernel's parameters and the block's shared memory appear at the fixed
// windows [ParamWindow] and [SharedWindow], so cvta is the identity and a
// generic load of a parameter (a reference argument of a called function)
// reads the launch's argument bytes.
package ptx
