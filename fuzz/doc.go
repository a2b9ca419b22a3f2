// Package fuzz owns protocol fuzzing of simulated all-reduce jobs: choosing
// a schedule strategy per seed (random walk, PCT or a portfolio of both),
// drawing fault plans (rank crashes, delays, lost, corrupt or duplicated
// signal writes, lost or wrong fds, slow or failing Store requests),
// running a case and judging it, replaying a case exactly, shrinking a
// failing one, and driving many seeds across worker goroutines.
//
// A [Case] is everything that determines a run: the checked all-reduce
// ([workload.Spec]), the seed, the strategy, the fault set and plan, and
// optionally a recorded [Schedule] that replaces the strategy. Running the
// same case gives the same trace hash. Every fault that fires is recorded in
// the trace (kind "fault"), and every scheduling decision that differs from
// the default policy (keep running the task that ran last, else the runnable
// task with the lowest ID) is recorded in the outcome's schedule, so a
// failure is replayed either from its seed or from its schedule.
//
// Judging depends on the fault set. With no faults (liveness) every rank
// must finish and every result must be correct and bitwise identical. With
// faults (safety) a rank may fail, but only with an error it returns: no
// rank that returns success may hold a wrong result, and the simulation must
// not panic, deadlock or spin to its step limit. A safety case in which no
// fault fired is judged for liveness.
//
// With Case.Race the happens-before race detector of package race watches
// every simulated memory access, and a data race fails the case: always
// when it is judged for liveness, and in a safety run when every rank
// succeeded (once a rank has failed the protocol promises its peers no
// ordering, so races are then listed but not judged). Races with an
// injected signal write on one side are stray by design and ignored.
//
// Shrinking is delta debugging over the faults that fired and the recorded
// decisions: it removes what the failure does not need, replaying each
// candidate with a [Replay] strategy that follows the decisions left and
// falls back to the default policy where they no longer apply.
package fuzz
