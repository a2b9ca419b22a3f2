// Package ptxcheck runs any PTX kernel on simulated GPUs and reports what
// goes wrong: data races, hangs, kernel failures and wrong results.
//
// A [Source] is a PTX module (the text nvcc -ptx emits, with or without
// -lineinfo) with the signature of every entry point and, from its .loc
// directives, the CUDA line of every PTX line. A [Program] says what every
// rank does: the buffers it allocates (symmetric ones, mapped by every
// rank, whose pointer tables can be passed to kernels by reference or by
// value; zeroed signal buffers; plain ones), host writes, launches of
// entry points with any grid and block on any of its streams and with
// parameters packed to the entry's declared layout (scalars, pointers,
// by-value structs and pointer arrays), host barriers, synchronisations
// and checks of results. Sizes, parameters and values are expressions of
// rank, world, the element index and repeat counts. A harness file is a
// Program in JSON; docs/check.md documents its schema with an example.
//
// [RunProgram] runs a Program at each world size over seeds, each run a
// simulated job (package simjob) with the happens-before race detector,
// its PTX interpreted thread by thread (sim.PTXLauncher), and merges what
// the runs found into distinct [Finding]s: one per pair of source sites
// for races, with how many runs found it and the first seed that did, so
// that it replays. [Options].Faults injects faults that need no knowledge
// of the kernel's protocol (a stalled launch, a rank that dies, a lost or
// duplicated host write; see [FaultKind]), one per run drawn from its
// seed, or a fixed [Plan]. [Shrink] reduces the run of a finding to a
// smaller one that finds it too (fewer faults, a smaller world, fewer
// repeats, fewer scheduling decisions), whose Options replay it exactly.
// A program whose launched entries use what the
// interpreter cannot run is refused first with every refused line listed
// ([Refusal], [Source.Unsupported]).
package ptxcheck
