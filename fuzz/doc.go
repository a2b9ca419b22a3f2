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
// Shrinking is delta debugging over the faults that fired and the recorded
// decisions: it removes what the failure does not need, replaying each
// candidate with a [Replay] strategy that follows the decisions left and
// falls back to the default policy where they no longer apply.
package fuzz
