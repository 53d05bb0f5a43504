package files

import (
	"errors"
	"io"
	"io/fs"
	"time"
)

// This file describes how the tools touch the file system. Nothing is ever
// opened by its full path: a root folder is opened once, and everything in
// it is reached from there one name at a time, each name opened relative to
// the folder before it without following a symbolic link (a dirFD). A link
// met on the way is read and its target resolved by the same steps, so
// swapping a folder for a link while a tool runs can make an open fail but
// never lead it out of the root.
//
// The folder handle comes in two forms: on Linux (amd64 and arm64), raw
// file descriptors and openat(2) with O_NOFOLLOW (fsys_linux.go);
// elsewhere, and with the build tag toolsearch_osroot, os.Root
// (fsys_root.go).

// errSymlink is returned by dirFD.openDir and dirFD.openFile for a name
// that is a symbolic link, which they never follow.
var errSymlink = errors.New("is a symbolic link")

// errNotFolder is returned by dirFD.openDir for a name that exists but is
// not a folder.
var errNotFolder = errors.New("not a folder")

// errNotRegular is returned by dirFD.openFile for a name that is not a
// regular file (a folder, a device, a named pipe, a socket).
var errNotRegular = errors.New("not a regular file")

// fileStat is what the tools need to know of a name in a folder.
type fileStat struct {
	mode    fs.FileMode // type bits and permissions
	size    int64
	modTime time.Time
}

// maxSmallFile bounds what readSmall reads (.gitignore files).
const maxSmallFile = 1 << 20

// readSmall reads the regular file name in d, up to maxSmallFile bytes (the
// rest is left unread). It returns nil when there is no such file.
func (d *dirFD) readSmall(name string) []byte {
	f, err := d.openFile(name)
	if err != nil {
		return nil
	}
	defer f.close()
	data, err := io.ReadAll(io.LimitReader(f, min(f.size(), maxSmallFile)))
	if err != nil {
		return nil
	}
	return data
}
