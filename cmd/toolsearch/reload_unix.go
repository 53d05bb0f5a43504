//go:build !windows

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// reloadSignals returns the channel of the signals that reload serve's
// configuration (SIGHUP), and the function that stops delivering them.
func reloadSignals() (<-chan os.Signal, func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	return c, func() { signal.Stop(c) }
}
