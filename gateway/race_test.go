//go:build race

package gateway

// raceEnabled: timing targets are only asserted without the race detector,
// which slows everything about tenfold.
const raceEnabled = true
