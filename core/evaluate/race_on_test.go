//go:build race

package evaluate

// raceEnabled is true when the tests run with the race detector, which
// makes a pass over thousands of queries take tens of seconds.
const raceEnabled = true
