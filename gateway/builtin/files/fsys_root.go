//go:build !(linux && (amd64 || arm64)) || toolsearch_osroot

package files

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/toolsearch/toolsearch/internal/safefile"
)

// A dirFD is an open folder. Its methods take one name in it, never a path
// with a separator, and never follow a symbolic link that name is.
//
// This form uses os.Root, which never leaves the folder it was opened on.
// It checks that a name is not a link before opening it; when the name is
// swapped for a link in between, os.Root follows that link only within the
// folder.
type dirFD struct {
	r *os.Root
}

// openRootDir opens a root folder by its path. Roots come from the user's
// configuration or the client, so the path itself is trusted.
func openRootDir(path string) (*dirFD, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &dirFD{r: r}, nil
}

// kindOf checks the name in d before it is opened: a link is errSymlink.
func (d *dirFD) kindOf(name string) (fs.FileMode, error) {
	st, err := d.lstat(name)
	if err != nil {
		return 0, err
	}
	if st.mode&fs.ModeSymlink != 0 {
		return 0, errSymlink
	}
	return st.mode, nil
}

// openDir opens the folder name in d. A symbolic link is errSymlink and any
// other kind of file errNotFolder.
func (d *dirFD) openDir(name string) (*dirFD, error) {
	mode, err := d.kindOf(name)
	if err != nil {
		return nil, err
	}
	if !mode.IsDir() {
		return nil, errNotFolder
	}
	r, err := d.r.OpenRoot(name)
	if err != nil {
		return nil, notExist(err)
	}
	return &dirFD{r: r}, nil
}

// openFile opens the regular file name in d for reading. It does not wait
// for a named pipe's writer, and a symbolic link is errSymlink.
func (d *dirFD) openFile(name string) (*fileFD, error) {
	mode, err := d.kindOf(name)
	if err != nil {
		return nil, err
	}
	if !mode.IsRegular() {
		return nil, errNotRegular
	}
	f, err := d.r.OpenFile(name, os.O_RDONLY|safefile.NonblockFlag, 0)
	if err != nil {
		return nil, notExist(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, errNotRegular
	}
	return &fileFD{f: f, n: fi.Size(), mtime: fi.ModTime()}, nil
}

// lstat describes the name in d itself, not what a link points to.
func (d *dirFD) lstat(name string) (fileStat, error) {
	fi, err := d.r.Lstat(name)
	if err != nil {
		return fileStat{}, notExist(err)
	}
	return fileStat{mode: fi.Mode(), size: fi.Size(), modTime: fi.ModTime()}, nil
}

// readlink returns the target of the symbolic link name in d.
func (d *dirFD) readlink(name string) (string, error) {
	return d.r.Readlink(name)
}

// list returns the entries of d, with their type bits.
func (d *dirFD) list() ([]fs.DirEntry, error) {
	f, err := d.r.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// close releases d.
func (d *dirFD) close() { d.r.Close() }

// notExist turns an error for a missing name into fs.ErrNotExist.
func notExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fs.ErrNotExist
	}
	return err
}

// A fileFD is a regular file open for reading.
type fileFD struct {
	f     *os.File
	n     int64
	mtime time.Time
}

// size is the file's size when it was opened.
func (f *fileFD) size() int64 { return f.n }

// modTime is the file's modification time when it was opened.
func (f *fileFD) modTime() time.Time { return f.mtime }

// Read reads from the file, as io.Reader.
func (f *fileFD) Read(p []byte) (int, error) { return f.f.Read(p) }

// close releases f.
func (f *fileFD) close() { f.f.Close() }
