// Package fuzz owns protocol fuzzing of simulated jobs: drawing a program
// per seed, choosing a schedule strategy (random walk, PCT or a portfolio
// of both), drawing fault plans (rank crashes, delays, lost, corrupt or
// duplicated signal writes, lost or wrong fds, slow or failing Store
// requests), running a case and judging it, replaying a case exactly,
// shrinking a failing one, and driving many seeds across worker
// goroutines.
//
// A [Program] is what every rank runs: its groups (the world and up to two
// subgroups), its symmetric buffers (which several groups share, each in a
// region of its own) and its steps: all-reduces of every form (one-shot,
// its _out and _copy forms, two-shot in place and _out, the low-latency
// all-reduce, the intra-node service), batches of them queued
// asynchronously and synchronized, graphs captured and replayed, signal
// barriers and point-to-point signals followed by reads of a peer's
// region, waits for a signal nobody sends (which must fail with a timeout
// that reaches the rank), and re-allocations. Tensors range from 4 bytes
// to 64 KiB, and now and then from 256 KiB to 3 MiB ([DefaultLargeSizes]).
// Inputs are rewritten before every call, a quarter of them with special
// values (NaNs with payloads, infinities, both zeros, subnormals, the
// largest finite values, sums whose rounding depends on the order), and
// every result is checked bitwise against
// [oracle.AllReduce] on every rank (a NaN result is the type's canonical
// NaN, whatever the inputs' payloads; the oracle shares no code with the
// kernels, so a bug in their arithmetic cannot change the expected result
// too); a program has a text form
// ([ParseProgram]) that replay commands carry.
//
// A [Case] is everything that determines a run: the program, the seeds of
// its inputs and of its strategy, the strategy, the fault set and plan,
// and optionally a recorded [Schedule] that replaces the strategy. Running
// the same case gives the same trace hash. Every fault that fires is
// recorded in the trace (kind "fault"), and every scheduling decision that
// differs from the default policy (keep running the task that ran last,
// else the runnable task with the lowest ID) is recorded in the outcome's
// schedule, so a failure is replayed either from its seed or from its
// schedule.
//
// Judging: a rank that holds a wrong result after a call that returned
// success fails any case. A run whose fired faults cannot explain a rank's
// failure or a hang (none fired, or only delays that add up to less than
// half the ranks' timeout; see [ExplainsFailure]) is judged for liveness:
// every rank must finish without error. The others are judged for safety:
// a rank may fail, but only with an error it returns, and the simulation
// must not panic, deadlock or spin to its step limit. The step limit is
// sized from the program ([StepBudget]) unless a case sets one.
//
// Runs, shrinks and whole fuzzing sessions stop soon after their context
// ends ([RunContext], [ShrinkContext], [Fuzz]).
//
// With Case.Race the happens-before race detector of package race watches
// every simulated memory access, and a data race fails the case: always
// when it is judged for liveness, and in a safety run when every rank
// succeeded (once a rank has failed the protocol promises its peers no
// ordering, so races are then listed but not judged). Races with an
// injected signal write on one side are stray by design and ignored.
//
// Shrinking is delta debugging over the faults that fired, the program's
// steps, the collectives of each step, their sizes and the recorded
// decisions: it removes what the failure does not need, replaying each
// candidate with a [Replay] strategy that follows the decisions left and
// falls back to the default policy where they no longer apply.
package fuzz
