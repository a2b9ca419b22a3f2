//go:build !race

package ptxcheck

// raceOn reports whether the tests run under the race detector, which
// makes the long sweep of the example harnesses take too long to run whole.
const raceOn = false
