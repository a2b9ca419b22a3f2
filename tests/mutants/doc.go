// Package mutants is the protocol mutation self-test: deliberately broken
// variants of the signalling protocol that the checks of a simulated run
// (wrong results, the happens-before race detector, deadlocks, timeouts,
// errors) must catch within a bounded number of schedules. A mutant that
// survives means a blind spot in the checks.
//
// # Where the mutants live
//
// Every mutant exists only in this package's _test.go files; no non-test
// build contains one. Production code offers generic interception points
// that fault injection uses as well, never a mutation switch:
//
//   - sim.Config.WrapBlock replaces the kernels.Block a kernel body runs
//     against. Kernel mutants wrap it: they count a block's calls of Lanes
//     (one per barrier: start, middle, end) and skip a barrier, or rewrite
//     the order of the compare-and-swaps inside it, or pretend a wait
//     consumed its signal. The kernel code under test is the real one.
//   - simjob.Config.WrapDevice replaces a rank's device: the channel-bound
//     mutant widens the pad size every launch declares by the world size
//     (so the device-side bound is padBytes/4 instead of
//     padBytes/(4*world)); the two-streams mutant issues the rank's signal
//     kernels on a second stream of its own.
//   - simjob.Config.WrapStore replaces a rank's Store client: the
//     StoreExchange mutant numbers collectives with one counter per process
//     instead of one per (store, prefix, group).
//
// # Kill tables
//
// TestFuzzerKillsMutants runs symmem fuzz itself, with its default
// configuration (fuzz.DefaultConfig: drawn programs, the portfolio
// strategy, safety faults, the race detector), against each of the
// mutants of fuzzMutants, its original ones and breakages of barrier
// presence, orders and scopes, block synchronisation, the low-latency
// workspace and flags, chunk bounds, Store exchange rounds, the fd ring,
// pad zeroing and stream order, and the shapes of five bugs that once
// survived (a max that drops a NaN from rank >= 1, a min whose ties go to
// the later rank, a bfloat16 avg that divides before summing, an
// asynchronous intra-node two-shot that never copies its result back, a
// wait_signal that loses its timeout), until a case fails, and logs the
// number of schedules each took (the goal is every mutant within 2,000).
// The reduction mutants run the real kernel bodies, registered under
// another name (test builds only), against a block whose stores of reduced
// vectors carry the result of the reducer's rule with one change. The
// three of them once survived because the fuzzer's reference called the
// kernels' own reducer, so that a bug there changed the expected result
// too; the reference is now package oracle, which shares no code with the
// kernels. Every mutant runs
// with SYMMEM_LONG=1, a fast smoke subset otherwise; SYMMEM_MUTANTS, a
// list of mutant numbers, picks some.
//
// TestMutantsAreKilled (SYMMEM_LONG=1 only) runs each mutant over schedules (a seed and a
// strategy: oldest task first, newest task first, then seeded random walks)
// until a check fails, and logs the table of mutants, whether each was
// found, after how many schedules and by which check. Set
// SYMMEM_MUTANT_TABLE to a file name to also write it there as Markdown,
// and SYMMEM_MUTANT_SCHEDULES to change the budget per mutant.
package mutants
