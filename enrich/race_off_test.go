//go:build !race

package enrich

const raceEnabled = false
