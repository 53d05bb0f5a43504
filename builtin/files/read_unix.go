//go:build unix

package files

import (
	"syscall"
)

// readFile reads a regular file into buf (grown as needed) and returns its
// bytes, or nil for a file that is not regular, is too large, or cannot be
// read. It uses raw system calls: os.Open would also try to register every
// file with the network poller, one more system call per file, which is a
// large share of a search over many small files. O_NOFOLLOW refuses a file
// that was replaced by a symbolic link after the walk saw it.
func readFile(path string, buf *[]byte) []byte {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size > maxFileBytes {
		return nil
	}
	size := int(st.Size)
	if cap(*buf) < size+1 {
		*buf = make([]byte, 0, size+size/8+512)
	}
	b := (*buf)[:cap(*buf)]
	n := 0
	for n < len(b) {
		k, err := syscall.Read(fd, b[n:])
		if err == syscall.EINTR || err == syscall.EAGAIN {
			continue
		}
		if err != nil {
			return nil
		}
		if k == 0 {
			break
		}
		n += k
		if n >= size && n < len(b) {
			// All that fstat announced has come; a file that grows
			// while it is read is searched as it was.
			break
		}
	}
	return b[:n]
}
