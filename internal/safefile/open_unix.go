//go:build unix

package safefile

import "syscall"

// NonblockFlag, added to an open's flags, makes opening a FIFO return at
// once instead of waiting for a writer. It changes nothing for a regular
// file, whose reads never block.
const NonblockFlag = syscall.O_NONBLOCK
