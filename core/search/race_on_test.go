//go:build race

package search_test

// raceEnabled is true when the tests run with the race detector, which
// makes each search over the 5,000-tool catalogs several times slower.
const raceEnabled = true
