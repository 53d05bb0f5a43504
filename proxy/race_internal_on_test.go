//go:build race

package proxy

// raceOn is true when the package's internal tests run with the race
// detector.
const raceOn = true
