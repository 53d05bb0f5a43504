//go:build !unix

package files

import (
	"io"
	"os"
)

// readFile reads a regular file into buf (grown as needed) and returns its
// bytes, or nil for a file that is not regular, is too large, or cannot be
// read.
func readFile(path string, buf *[]byte) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxFileBytes {
		return nil
	}
	size := int(fi.Size())
	if cap(*buf) < size+1 {
		*buf = make([]byte, 0, size+size/8+512)
	}
	b := (*buf)[:cap(*buf)]
	n, err := io.ReadAtLeast(f, b, size)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil
	}
	return b[:n]
}
