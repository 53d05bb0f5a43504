//go:build race

package dashboard_test

// raceEnabled: the race detector makes every JSON byte about ten times
// dearer, so the tests that send tens of megabytes send fewer under it;
// .ci/run runs them again at full size without it.
const raceEnabled = true
