//go:build race

package openai_test

// raceEnabled is true under the race detector, which makes measurements on
// the 3,601-tool catalog slow.
const raceEnabled = true
