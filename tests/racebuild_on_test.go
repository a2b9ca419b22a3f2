//go:build race

package tests

// raceBuild reports whether the tests run under Go's race detector, which
// makes the interpreter of PTX mode several times slower.
const raceBuild = true
