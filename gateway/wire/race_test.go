//go:build race

package wire

// raceEnabled: timing targets are only asserted without the race detector,
// which slows everything about tenfold.
const raceEnabled = true
