// Package safefile reads the files a user names (configuration, state,
// tokens, catalogs) so that a wrong path cannot hang or exhaust the
// process: only regular files are read, a FIFO or a device is refused
// without blocking (opening a FIFO for reading would wait for a writer,
// reading /dev/zero would never end), and a file larger than its bound is
// refused rather than read whole.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotRegular is returned for a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned for a file larger than the bound.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading when it is a regular file. Opening never
// blocks: a FIFO or a device is refused with an error wrapping
// ErrNotRegular that says what the path is.
func Open(path string) (*os.File, error) {
	// Where the open itself cannot be made non-blocking, refuse what
	// is plainly not a file first.
	if NonblockFlag == 0 {
		if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
			return nil, notRegular(path, fi.Mode())
		}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|NonblockFlag, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(path, fi.Mode())
	}
	return f, nil
}

// ReadFile reads the regular file at path, at most limit bytes; a larger
// file is an error wrapping ErrTooLarge that names the bound.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: larger than %d bytes", ErrTooLarge, limit)}
	}
	return data, nil
}

func notRegular(path string, m fs.FileMode) error {
	kind := "not a regular file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		kind = "a character device"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	}
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: it is %s", ErrNotRegular, kind)}
}

// WriteFile writes data to path atomically: into a temporary file in the
// same folder, flushed to disk, then renamed over path, so that a reader
// (or a crash) sees the old file or the new one, never a part of either.
// The folder is made when missing.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(perm)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, werr)
	}
	if d, err := os.Open(dir); err == nil { // make the rename itself durable
		_ = d.Sync()
		d.Close()
	}
	return nil
}
