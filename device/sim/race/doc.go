// Package race owns the simulator's protocol checkers: a happens-before data
// race detector fed by [sim.World.Observe], and wait-for graphs of hung
// signal operations.
//
// # Threads and clocks
//
// Every scheduler task that touches simulated memory is a thread with a
// vector clock: a rank program (host), a stream's worker, a kernel block and
// a signalling lane. Successive blocks (or lanes, or workers) of the same
// stream, block index and lane index share a clock component when the new
// one provably starts after the old one ended, so clocks stay as wide as
// the number of concurrent threads, not the number of tasks a run creates.
//
// # Happens-before
//
// Edges come only from what the memory model of the SPEC allows:
//
//   - program order within a thread;
//   - stream order on one device: a host enqueues an op (Enqueue), the op
//     starts after that and after the stream's previous op ended;
//   - kernel launch and finish: blocks fork from the worker at the kernel's
//     start and join it at the kernel's end; lanes fork from and join their
//     block (the __syncthreads around [kernels.Block.Lanes]);
//   - host syncs: a host that learns an op completed (Synchronize, or the
//     return of Read or Write) knows everything the op did;
//   - atomics: an atomic read with acquire order synchronises with the
//     release-ordered atomic writes of the word up to the store it read
//     (the word's release sequence: compare-and-swaps continue it, plain
//     stores end it), when both are atomic and both scopes include the
//     other thread ([signal.Synchronizes]); so a GPU- or block-scoped
//     release never synchronises with another device;
//   - host-side synchronisation objects named by [Detector.Release] and
//     [Detector.Acquire] (the rank wiring reports Store keys set and read);
//   - fences, as the PTX model has them: a fence of scope s releases the
//     thread's clock at the fence to its later strong writes of scope s or
//     wider (a release pattern; the data written after the fence is not
//     released), and acquires what every earlier strong read of the
//     thread observed from releases that reach it at scope s (an acquire
//     pattern); a fence before a read-modify-write does not make it
//     acquire. A fence.sc (or membar) also acquires what every earlier
//     fence.sc released when both scopes include the other's thread (the
//     fence-SC order of the run);
//   - barriers: at a block-wide bar.sync (or bar.red) the block's threads
//     join and fork; at a named barrier (an id other than the kernels'
//     block-wide one, a thread count, bar.arrive) each arrival is a
//     release and a thread released from a phase acquires the arrivals of
//     that phase only (a thread that only arrives learns nothing).
//     Shared-memory accesses (reported per block) are ordered by barriers
//     alone.
//
// Plain loads and stores never synchronise. Two accesses to a common 4-byte
// word race when at least one writes, they are not morally strong (both
// strong accesses of the same bytes, whose scopes include each other's
// thread: strong accesses of different sizes or partly overlapping race),
// and neither happens before the other.
// Memory is keyed by physical allocation and offset, so the same bytes
// reached through different devices' mappings are the same location.
//
// A strong load of a kernel thread may return an older store than the
// latest (the simulator's weak reads, see package sim), and the simulator
// says which, element by element of a vector ([sim.Access].From, by the
// numbers of strong writes, [sim.Access].Stamp). Besides a word's latest
// write and release sequence, the detector keeps the strong writes before
// it that such a read may return (sim.WeakHistory-1 of them, per 4-byte
// word), each with the word's release sequence as it stood after it. A
// read then acquires (or, relaxed, observes for a later fence) the
// release sequence of the store it returned, not the latest, and only
// that write counts as observed. A read of a store the detector does not
// know learns nothing, which cannot hide a race: a value no numbered
// strong store wrote (what the word held before its strong stores: a
// plain store, the host, or a strong store of another size, which is not
// morally strong with the read), or a store older than the writes kept,
// which happens only when strong stores narrower than 4 bytes to
// different bytes of one word push each other out of its list (then a
// race the model does not have may be reported). Reads that return the
// latest store, and read-modify-writes, which always do, learn what they
// always did.
//
// # The kernel boundary
//
// CUDA orders the work of one stream: a kernel starts after the stream's
// previous op completed, and a kernel's completion means every memory
// operation of its threads is done. So the boundary between two kernels
// of a stream (and the end of a kernel, for whatever follows it on the
// stream or learns that it completed) is modelled as a system-scope fence
// on the device, both ways:
//
//   - a launch releases: everything ordered before it on that device
//     (earlier ops of the stream, host writes, earlier kernels, whatever
//     they wrote) is released by it, and a release fence followed by a
//     relaxed atomic write synchronises with an acquire that reads that
//     write (the C++ and PTX fence rule). So a relaxed put at a kernel's
//     start publishes the rank's earlier writes to a peer whose wait
//     acquires it: the SPEC's start barrier (put relaxed, wait acquire) is
//     correct;
//   - a kernel's end acquires: what its threads' strong reads observed
//     from releases (a relaxed wait that read a peer's release put) is
//     acquired at the end, as a fence after the read would, so the next op
//     of the stream is ordered after the peer's accesses that preceded its
//     put. PyTorch's end barrier (release put, relaxed wait) therefore
//     orders the next kernel's overwrite of a buffer after the peers'
//     reads of it.
//
// Nothing else is implied: the boundary orders nothing on another device.
// A relaxed wait acquires nothing within its own kernel, so the
// relaxed/relaxed start barrier is flagged as a race (a peer's write
// before its launch, this rank's loads after the wait), as the SPEC wants;
// a relaxed put publishes no access made inside the kernel before it, so
// a barrier whose peers read or write the buffer in the same kernel must
// put with release, and an end barrier whose put is relaxed does not
// order the peers' reads before this rank's next rewrite.
//
// # Reports
//
// A [Race] names both accesses (device, kernel launch, block, lane, or
// stream op; kind; virtual address; physical allocation and offset) and the
// missing edge: the latest signal communication between the two sides that
// failed to synchronise and why (a relaxed put or wait, a narrow scope), or
// that no signal passed between them at all (a missing barrier or wait).
// The same pair of code sites is listed once, with a repeat count.
// Detection follows the simulator's trace, so a seed gives the same
// report.
//
// A load by ld.global.nc is valid only of bytes nothing writes during its
// kernel's lifetime: a write after the kernel began and before the load,
// or after the load before the kernel ended (a write that does not know
// the kernel's completion), is reported as a [Race] with NC set, the
// access that loads marked NC (ncafter.go).
//
// # Wait-for graphs
//
// [NewWaitFor] turns the signal waits a [sim.World] records (after a
// deadlock, or at the first signal timeout) into edges "device A waits for
// device B to put / to consume", with the slot, the value it holds and the
// value it needs, and finds a cycle among them.
package race
