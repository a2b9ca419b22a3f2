// Package rank owns a participant of a symmetric-memory job: its Store
// client, IpcChannel, allocator, rendezvous, the SymmetricMemory handle, the
// all-reduce collectives and IntraNodeComm, and [Run], which builds a rank
// from its [Params], runs a program on it and closes it. Whatever runs the
// ranks (package simjob on the simulator, package launch on real devices)
// calls Run; rank imports no simulator package.
//
// Rank code does not know which device it runs on: the simulator and CUDA
// devices sit behind the same device.Device interface and run the same
// kernels.
package rank
