// Package actor owns the runtime that ranks and services run on.
//
// Two runtimes implement [Runtime]:
//
//   - [Scheduler], the deterministic simulator runtime: every task is a
//     coroutine, exactly one runs at a time, and the choice of which task runs
//     next at every scheduling point comes from a seeded [Strategy]. Time is
//     virtual: it advances only when every task is blocked and some blocked
//     task has a deadline. Every decision and interaction is appended to a
//     [Trace] whose hash identifies the run. When no task can run and none has
//     a deadline, [Scheduler.Run] returns a [*DeadlockError] listing what each
//     blocked task waits for. A blocked task's condition is asked at every
//     step, unless its wait names a [Bell] that rings wherever the condition
//     can change ([Scheduler.WaitBell]): it is then asked only after a ring.
//   - [Live], which runs tasks on goroutines against the wall clock, for real
//     devices and multi-process jobs.
//
// Protoactor actors run on either: [NewSystem] builds an actor system whose
// log output is discarded, and [Scheduler.Dispatcher] hands every mailbox run
// to the scheduler as a task, so actors are as deterministic as rank code.
package actor
