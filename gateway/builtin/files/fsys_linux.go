//go:build linux && (amd64 || arm64) && !toolsearch_osroot

package files

import (
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// Values of openat(2) and fstatat(2) that the syscall package does not
// export on every architecture; they are the same on all of Linux's.
const (
	atFDCWD           = -0x64 // the current folder, as a folder descriptor
	atSymlinkNoFollow = 0x100 // describe a symbolic link, not its target
)

// A dirFD is an open folder. Its methods take one name in it, never a path
// with a separator, and never follow a symbolic link that name is.
//
// It uses raw system calls: os.Root would also register every file with
// the network poller, one more system call per file, which is a large share
// of a search over many small files.
type dirFD struct {
	fd   int
	f    *os.File // owns fd once list has been called
	name string   // the folder's path, for os.File and messages
}

// openRootDir opens a root folder by its path. Roots come from the user's
// configuration or the client, so the path itself is trusted.
func openRootDir(path string) (*dirFD, error) {
	fd, err := openat(atFDCWD, path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &dirFD{fd: fd, name: path}, nil
}

// openat opens name relative to dir, retrying when a signal interrupts it.
func openat(dir int, name string, flags int) (int, error) {
	for {
		fd, err := syscall.Openat(dir, name, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// openDir opens the folder name in d. A symbolic link is errSymlink and any
// other kind of file errNotFolder.
func (d *dirFD) openDir(name string) (*dirFD, error) {
	fd, err := openat(d.fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC)
	if err != nil {
		return nil, d.why(name, err)
	}
	return &dirFD{fd: fd, name: d.name + "/" + name}, nil
}

// why explains a failed open of name: a symbolic link, something that is
// not a folder, or the error itself.
func (d *dirFD) why(name string, err error) error {
	if err == syscall.ELOOP || err == syscall.ENOTDIR {
		if st, lerr := d.lstat(name); lerr == nil {
			switch {
			case st.mode&fs.ModeSymlink != 0:
				return errSymlink
			case !st.mode.IsDir():
				return errNotFolder
			}
		}
	}
	if err == syscall.ENOENT {
		return fs.ErrNotExist
	}
	return err
}

// openFile opens the regular file name in d for reading. It does not wait
// for a named pipe's writer, and a symbolic link is errSymlink.
func (d *dirFD) openFile(name string) (*fileFD, error) {
	fd, err := openat(d.fd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC)
	if err != nil {
		return nil, d.why(name, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, errNotRegular
	}
	return &fileFD{fd: fd, n: st.Size, mtime: time.Unix(st.Mtim.Unix())}, nil
}

// lstat describes the name in d itself, not what a link points to.
func (d *dirFD) lstat(name string) (fileStat, error) {
	var st syscall.Stat_t
	for {
		err := fstatat(d.fd, name, &st, atSymlinkNoFollow)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.ENOENT {
			return fileStat{}, fs.ErrNotExist
		}
		if err != nil {
			return fileStat{}, err
		}
		break
	}
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		mode |= fs.ModeDir
	case syscall.S_IFLNK:
		mode |= fs.ModeSymlink
	case syscall.S_IFREG:
	case syscall.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		mode |= fs.ModeSocket
	case syscall.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	default:
		mode |= fs.ModeDevice
	}
	return fileStat{mode: mode, size: st.Size, modTime: time.Unix(st.Mtim.Unix())}, nil
}

// readlink returns the target of the symbolic link name in d.
func (d *dirFD) readlink(name string) (string, error) {
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		k, err := readlinkat(d.fd, name, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if k < n {
			return string(buf[:k]), nil
		}
	}
}

// list returns the entries of d, with their type bits.
func (d *dirFD) list() ([]fs.DirEntry, error) {
	if d.f == nil {
		d.f = os.NewFile(uintptr(d.fd), d.name)
	}
	return d.f.ReadDir(-1)
}

// close releases d.
func (d *dirFD) close() {
	if d.f != nil {
		d.f.Close()
		return
	}
	syscall.Close(d.fd)
}

// A fileFD is a regular file open for reading.
type fileFD struct {
	fd    int
	n     int64
	mtime time.Time
}

// size is the file's size when it was opened.
func (f *fileFD) size() int64 { return f.n }

// modTime is the file's modification time when it was opened.
func (f *fileFD) modTime() time.Time { return f.mtime }

// Read reads from the file, as io.Reader.
func (f *fileFD) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		k, err := syscall.Read(f.fd, p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if k == 0 {
			return 0, io.EOF
		}
		return k, nil
	}
}

// close releases f.
func (f *fileFD) close() { syscall.Close(f.fd) }

// readlinkat is readlinkat(2), which the syscall package does not export.
func readlinkat(dir int, name string, buf []byte) (int, error) {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return 0, err
	}
	if len(buf) == 0 {
		return 0, syscall.EINVAL
	}
	n, _, errno := syscall.Syscall6(syscall.SYS_READLINKAT, uintptr(dir), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
