//go:build race

package catalog

// raceEnabled reports whether the race detector is on; it makes the token
// count of the shared catalog about eight times slower.
const raceEnabled = true
