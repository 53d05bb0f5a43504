//go:build !race

package anthropic_test

// raceEnabled is true when the tests run with the race detector, which
// makes the measurement on the 3,601-tool catalog take minutes.
const raceEnabled = false
