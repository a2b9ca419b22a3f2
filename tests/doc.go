// Package tests holds cross-package suites: the reference test table of
// symmetric memory and all-reduce, IntraNodeComm, property tests against a
// float64 reference, and bad-input checks. They run on the simulator.
package tests
