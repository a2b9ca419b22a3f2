// Package memmodel is the PTX memory consistency model, exact for small
// programs: it enumerates every candidate execution of a program (each
// load's write, coherence order, fence-SC order and barrier arrival order)
// and keeps those the model's axioms accept.
//
// The axioms are those of the PTX ISA's "Memory Consistency Model" as
// formalised in the cat model ptx-v7.5, proxies included:
//
//   - morally strong: two operations of one proxy related in program
//     order, or both strong (relaxed, acquire, release, acq_rel, sc, or a
//     fence) with scopes that each include the other's thread; two memory
//     operations must also be on the same generic (virtual) address;
//   - observation: a write is observed by a morally strong read of its
//     value, and through chains of atomic read-modify-writes;
//   - release patterns (a release write, or an acq_rel/sc fence followed by
//     a strong write) synchronize with acquire patterns (an acquire read,
//     or a strong read followed by an acq_rel/sc fence) they are observed
//     by, when the pattern's ends are morally strong;
//   - base causality is program order, synchronization, fence-SC order and
//     barrier synchronisation closed transitively; proxies keep of it, for
//     two memory operations of one location, only what a proxy-preserving
//     path gives: both generic on one address; both of one proxy, in one
//     CTA, on one address; or through proxy fences of the operations'
//     proxies (fence.proxy.surface, .texture, .constant) in their CTAs,
//     and between different virtual addresses of the location through a
//     fence.proxy.alias; causality adds a leading observation;
//   - Coherence (causally ordered writes to a location are in coherence
//     order; morally strong writes are ordered), FenceSC (fence-SC order
//     never contradicts causality), Atomicity (no morally strong write
//     between the read and write of a morally strong read-modify-write),
//     No-Thin-Air (reads-from and dependencies are acyclic) and Causality
//     (no read or write precedes, in causality order, a write it reads from
//     or is coherence-before).
//
// Coherence order is a partial order: weak writes from different threads
// need not be ordered, so a location may end with several final values.
//
// Barriers (bar.cta.sync and bar.cta.arrive) synchronize threads of one CTA
// that use the same barrier (instance and id). Without a thread count, the
// n-th arrivals of every thread whose run reaches the barrier form one
// instance; with a count Q, the k-th arrival overall waits for the
// max(k, Q)-th. Executions in which a thread waits forever are not
// executions: they have no final state.
//
// Loops are unrolled up to [Options.LoopBound] backward jumps per thread; a
// run that needs more is dropped and counted in [Result.CutRuns].
//
// Locations are physical; [Program.Aliases] gives a location more names:
// "y @ generic aliases x" is a second virtual address of x's memory, "s @
// surface aliases x" a surface handle of x's own address. Accesses carry
// the proxy of their instruction ([Inst.Proxy]: ld/st/atom generic,
// suld/sust/suatom/sured surface, tld texture, cold constant).
//
// [Terminates] decides termination under fair scheduling: whether some
// execution leaves a thread spinning forever on values that no longer
// change, or waiting at a barrier that never completes, while every other
// thread has ended or is stuck too.
//
// [Simulate] is an operational model of the same axioms: seeded runs that
// reach a subset of the allowed outcomes and nothing forbidden (not load
// buffering, nor reads back in coherence order). Kernel runs on the
// simulator use its view-based rules, with cheaper views, for the values
// their strong loads return (package sim, "Weak reads"); they do read
// back in coherence order, and buffer loads where no dependency, fence or
// acquire/release orders a store after an earlier load.
package memmodel
