//go:build race

package proxy_test

// raceEnabled is true when the tests run with the race detector, which
// makes building large indexes about ten times slower.
const raceEnabled = true
