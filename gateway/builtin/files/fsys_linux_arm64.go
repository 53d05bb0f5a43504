//go:build !toolsearch_osroot

package files

import "syscall"

// fstatat is fstatat(2).
func fstatat(dir int, name string, st *syscall.Stat_t, flags int) error {
	return syscall.Fstatat(dir, name, st, flags)
}
