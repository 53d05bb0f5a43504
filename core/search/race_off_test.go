//go:build !race

package search_test

// raceEnabled is true when the tests run with the race detector.
const raceEnabled = false
