// Package rank owns a participant of a symmetric-memory job: its Store
// client, IpcChannel, allocator, rendezvous, the SymmetricMemory handle, the
// all-reduce collectives and IntraNodeComm, and the ways to run W ranks on a
// device backend (in-process on the simulator or GPUs).
//
// Rank code does not know which device it runs on: the simulator and CUDA
// devices sit behind the same device.Device interface and run the same
// kernels.
package rank
