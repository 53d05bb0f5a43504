//go:build race

package enrich

// raceEnabled is true when the tests run with the race detector, which
// makes searches over the shared catalog take tens of seconds.
const raceEnabled = true
