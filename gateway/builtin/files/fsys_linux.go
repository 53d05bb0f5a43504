//go:build linux && !toolsearch_osroot

package files

import (
	"io"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
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
	fd, err := openat(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &dirFD{fd: fd, name: path}, nil
}

// openat opens name relative to dir, retrying when a signal interrupts it.
func openat(dir int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openDir opens the folder name in d. A symbolic link is errSymlink and any
// other kind of file errNotFolder.
func (d *dirFD) openDir(name string) (*dirFD, error) {
	fd, err := openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return nil, d.why(name, err)
	}
	return &dirFD{fd: fd, name: d.name + "/" + name}, nil
}

// why explains a failed open of name: a symbolic link, something that is
// not a folder, or the error itself.
func (d *dirFD) why(name string, err error) error {
	if err == unix.ELOOP || err == unix.ENOTDIR {
		if st, lerr := d.lstat(name); lerr == nil {
			switch {
			case st.mode&fs.ModeSymlink != 0:
				return errSymlink
			case !st.mode.IsDir():
				return errNotFolder
			}
		}
	}
	if err == unix.ENOENT {
		return fs.ErrNotExist
	}
	return err
}

// openFile opens the regular file name in d for reading. It does not wait
// for a named pipe's writer, and a symbolic link is errSymlink.
func (d *dirFD) openFile(name string) (*fileFD, error) {
	fd, err := openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		return nil, d.why(name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, errNotRegular
	}
	return &fileFD{fd: fd, n: st.Size, mtime: time.Unix(st.Mtim.Unix())}, nil
}

// lstat describes the name in d itself, not what a link points to.
func (d *dirFD) lstat(name string) (fileStat, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err == unix.ENOENT {
			return fileStat{}, fs.ErrNotExist
		}
		if err != nil {
			return fileStat{}, err
		}
		break
	}
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFREG:
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
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
		k, err := unix.Readlinkat(d.fd, name, buf)
		if err == unix.EINTR {
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
	unix.Close(d.fd)
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
		k, err := unix.Read(f.fd, p)
		if err == unix.EINTR {
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
func (f *fileFD) close() { unix.Close(f.fd) }
