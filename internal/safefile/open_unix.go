//go:build unix

package safefile

import (
	"os"
	"syscall"
)

// openFlags makes opening a FIFO return at once instead of waiting for a
// writer.
const openFlags = syscall.O_NONBLOCK

// blocking turns the non-blocking mode off again for a regular file, so
// reads behave as usual.
func blocking(f *os.File) error {
	return syscall.SetNonblock(int(f.Fd()), false)
}
