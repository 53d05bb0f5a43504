//go:build unix

package files

import "syscall"

// openNonblock keeps an open of a named pipe from waiting for a writer.
const openNonblock = syscall.O_NONBLOCK
