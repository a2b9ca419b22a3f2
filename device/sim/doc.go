// Package sim owns the simulated device: a host of devices whose memory is
// CPU memory behind per-device 64-bit virtual address spaces, whose streams
// and kernels run as tasks of one deterministic actor.Scheduler, and whose
// exported handles live in simulated per-process fd tables.
//
// Memory. Device i's virtual addresses start at 0x7f00_0000_0000 + i<<36, so a
// pointer used on the wrong device faults with an error naming both devices.
// Physical allocations are multiples of device.Granularity and are filled
// with a deterministic garbage pattern, not zeros, as fresh GPU memory is:
// code that forgets to zero a signal pad fails (a slot holding garbage is
// reported as corrupt). Each 4 KiB page gets its garbage when first
// touched, and the bytes of freed allocations (and of those a released
// world still held) are recycled for later allocations of their size, so a
// short simulation costs little memory traffic. ImportHandle aliases the same bytes, so writes
// through one mapping are seen through every other. Bytes are freed when no
// handle, mapping or fd refers to them. Any access outside a mapping with
// access granted returns a [*FaultError] from the op or kernel (never a
// panic).
//
// Streams. Each stream is an ordered queue; while it has work a worker task
// runs the op at its head to completion. A kernel op starts one task per
// block, all at once (a device with enough multiprocessors), and completes
// when every block has returned; a block's signalling lanes are tasks too.
//
// Occupancy. A PTX launch may give the device its blocks must fit on
// ([PTXLaunch].Occupancy, occupancy.go): a multiprocessor count with the
// limits of each (the H200's by default) or a direct limit of resident
// blocks. [Occupancy.Resident] computes how many blocks are resident at
// once from the block's threads, registers (given, the entry's .maxnreg,
// or [DefaultRegisters]) and shared memory (the static .shared the PTX
// declares, [ptx.Module.Resources], plus the launch's dynamic), by the
// rules of CUDA's occupancy calculator for sm_90. The launch starts that
// many blocks; each later one starts, in block order (CUDA leaves the order
// unspecified), when a resident block exits, ordered after it by nothing.
// Once a block failed no block starts, and a launch whose resident blocks
// spun past their timeout while blocks had not started fails with an
// [*OccupancyError] naming the residency, the hung blocks and those that
// never started. Without an occupancy every block is resident, as before.
// Synchronize, Read and Write block the calling task (which must be a
// scheduler task) through the scheduler. Errors raised by ops, such as a
// *device.KernelError when a signal wait times out, are reported by the next
// Synchronize and then cleared: the stream stays usable. Events take the
// virtual time when the stream reaches them.
//
// Signals. Pad slots are real uint32 words; compare-and-swap is done under
// the scheduler, so it is atomic, and a blocked wait is a scheduler wait on
// the slot's value, with a virtual-time timeout. Every atomic is recorded in
// the trace (kind "signal") with its order and scope.
//
// Concurrency. A World is driven by its scheduler: only one task runs at a
// time, so the simulator takes no locks (but for the process-wide cache of
// recycled allocations). Call its devices from the
// scheduler's tasks (set-up calls that never wait may also run before
// Scheduler.Run); calls that must wait return an error outside a task.
//
// PTX mode. With Config.Kernels.PTX a launch runs the kernels' PTX (package
// ptx) instead of the Go twin: the block's threads run as lane tasks from
// one barrier of every thread of the block to the next (bar.sync or
// bar.red without a thread count: the block joins them and forks them
// again), named barriers with a thread count and bar.arrive wait inside
// the lane tasks (package ptx, Barriers; a deadlock at barriers fails the
// launch with an error that says which threads wait where), global
// accesses and atomics go
// through the device's address space (each reported to the observer with
// its order and scope), a strong load that keeps reading the same bytes
// sleeps until they change or the launch's timeout would pass, and the
// kernel's error record lives in the launch and becomes its error.
//
// Memory model. What a kernel may observe is the PTX memory model's, as
// package memmodel states it exactly for litmus-sized programs (symmem
// litmus checks it against the published verdicts). Here the race detector
// (package race) applies it to every access of a kernel: fences are events
// ([Fence]) that release at the fence, acquire what every earlier strong
// read observed, respect their scope, and, as fence.sc or membar, are
// ordered with the earlier morally strong fence.sc; strong accesses of
// different sizes or partly overlapping are not morally strong; shared
// memory accesses are reported ([Access.Shared], [SharedPhys]) with
// barriers as their synchronisation, and each is a scheduling point. A
// barrier of every thread is the join and fork of the block's lanes; an
// arrival at a named barrier with a thread count or at bar.arrive is a
// release store to bytes of that arrival's own ([BarrierPhys]), and a
// thread its phase releases makes an acquire load of each of the phase's
// arrivals, so it learns what those threads did before arriving and
// nothing else (a consumer that only arrives learns nothing; arriving
// orders nothing after it). Weak reads over-approximate a phase's
// arrivals as every strong store before the last of them.
// Covered: weak, relaxed, acquire, release and acq_rel accesses, .volatile
// (relaxed at system scope), atomics and reductions, fence.sc,
// fence.acq_rel and membar at cta, gpu and sys scope, bar.sync, bar.arrive
// and bar.red on the 16 named barriers, with and without thread counts.
// Not covered: proxies (texture, surface, constant memory and
// fence.proxy), which the PTX interpreter refuses.
//
// Weak reads. The value a strong load returns is the memory model's too:
// each strong load of a kernel thread (PTX mode: ld.relaxed, ld.acquire,
// ld.volatile, each element of a vector; Go twins: the loads of
// WaitU32, the signal waits) chooses, as a seeded decision (from the
// scheduler's seed, so the same seed gives the same values), among the
// stores of its location the model lets it read: a short history of
// strong stores per location, in coherence order, less those hidden by
// what the thread read or wrote there and by what it knows through
// release/acquire, fences (fence.sc ordered with the earlier morally
// strong ones), bar.sync and the kernel's start, each at its scope
// (weak.go says how, and where the views over-approximate what a thread
// knows, which only hides stores). Half of the choices take the newest
// store, so a spin sees a new store soon. Read-modify-writes, plain loads
// and host reads return the newest value (a plain load that could see
// another is a race the detector reports). Load buffering: a PTX
// thread's store may be performed before an earlier load or relaxed atom
// of another address when the model does not order them (package ptx,
// [ptx.Reorderer]; half the time, never in a spin). So store buffering,
// message passing with relaxed data and flag (the flag read, the data
// old), load buffering and reads back in coherence order appear in kernel
// runs, and what the model forbids does not (package litmus runs the
// shared corpus as kernels to check both).
//
// A load followed by register arithmetic it does not feed moves after
// that arithmetic at decode, so a store whose address or data is computed
// between the two can go first too.
//
// Store order: a strong store (not a read-modify-write) is placed in its
// location's coherence order after the newest store of it its thread
// knows, and half the time, as a seeded decision, at an earlier place
// than the end when there is one (storeorder.go). So two stores of a
// thread to different words become visible in the other order unless a
// release or fence orders them (the S and 2+2W shapes, the lost flag of
// a clear-then-set handshake); a store placed before newer ones changes
// no bytes. A block-wide bar.sync teaches a PTX thread what its block's
// threads knew, observed, read and stored, not every store made so far.
//
// Not covered, each only losing outcomes the model allows: a weak store
// kept after an acquire load even where a read-modify-write of another
// thread could see it first (litmus LB+RMW-a; running it first in general
// would let a plain read see it too, which the model forbids), a release
// store kept after earlier loads (running it first would release less to
// a reader that acquires); a read-modify-write placed earlier in a
// location's coherence order than when it ran (MICRO24-Fig4b); plain loads
// that return an older store (a race the detector reports); the
// Go twins' packets (StoreU64s, WaitU64s), which read the newest words:
// in the low-latency protocol every word carries its call's flag, so an
// older word only prolongs the wait, and per-word histories made the
// Go-twin fuzzer 1.6 times and a 64 KiB low-latency all-reduce 6 times
// slower (the PTX mode covers the same kernel's packets). The race
// detector is told which store each strong load returned ([Access].From)
// and synchronises the load with that store, not the newest.
//
// Observation. [World.Observe] receives every memory access (with device,
// kernel, block, lane, virtual and physical address, size, direction, order
// and scope) and every synchronisation edge (stream order, block and lane
// fork and join, host completion), which is what a happens-before race
// detector needs, without changes to kernels.
package sim
