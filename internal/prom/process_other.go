//go:build !linux

package prom

// processStats has nothing to read on this system beyond the Go runtime's
// own figures.
func processStats() []processStat { return nil }
