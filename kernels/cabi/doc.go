// Package cabi is the C side of the kernels: the ABI the CUDA kernels
// (kernels/cuda) share with the Go host code, and the rules that pick a
// kernel's CUDA entry point. Both the CUDA device and a simulator that
// runs the compiled kernels use it.
//
// Every kernel takes one argument: a C struct passed by value whose first
// member is a [LaunchHeader] written by the device, followed by the
// fields of the kernel's Go argument struct. The structs, the enums that
// cross the ABI (dtype, reduce op, error reasons) and the list of
// specialised entry points are declared once, here and in the kernels'
// descriptors; `go generate` writes them into the header
// kernels/cuda/abi.cuh, which asserts every offset with static_assert, and
// a test fails when the committed header is stale.
package cabi

//go:generate go run ./internal/abigen -o ../cuda/abi.cuh
