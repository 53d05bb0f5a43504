package main

import "os"

// reloadSignals returns no signals: Windows has no SIGHUP, so serve does
// not reload its configuration there (restart it instead).
func reloadSignals() (<-chan os.Signal, func()) {
	return nil, func() {}
}
