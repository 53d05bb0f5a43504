//go:build !toolsearch_osroot

package files

import (
	"syscall"
	"unsafe"
)

// fstatat is fstatat(2), which the syscall package exports on linux/amd64
// only under the name of its system call, newfstatat.
func fstatat(dir int, name string, st *syscall.Stat_t, flags int) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	_, _, errno := syscall.Syscall6(syscall.SYS_NEWFSTATAT, uintptr(dir), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(st)), uintptr(flags), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
