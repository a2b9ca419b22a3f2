// Package ptx holds the suites of the simulator's PTX mode, in which a
// launch runs the kernels' compiled PTX thread by thread: the conformance
// table at worlds 2 to 8, the differential test against the Go twins, and
// the PTX mutants the fuzzer must kill. They are a package of their own so
// that go test runs them beside package tests.
package ptx
