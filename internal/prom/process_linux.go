package prom

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processStats reads the process's memory, CPU time and open files from
// /proc and getrusage; what cannot be read is left out.
func processStats() []processStat {
	var out []processStat
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		f := strings.Fields(string(b))
		page := float64(os.Getpagesize())
		if len(f) >= 2 {
			if vm, err := strconv.ParseFloat(f[0], 64); err == nil {
				out = append(out, processStat{"process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", vm * page})
			}
			if rss, err := strconv.ParseFloat(f[1], 64); err == nil {
				out = append(out, processStat{"process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", rss * page})
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
		out = append(out, processStat{"process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpu})
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		out = append(out, processStat{"process_open_fds", "gauge", "Number of open file descriptors.", float64(len(fds))})
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		out = append(out, processStat{"process_max_fds", "gauge", "Maximum number of open file descriptors.", float64(lim.Cur)})
	}
	return out
}
