//go:build linux

package server

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// uname is "sysname release machine", as INFO's os field.
func uname() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	str := func(b []int8) string {
		var s strings.Builder
		for _, c := range b {
			if c == 0 {
				break
			}
			s.WriteByte(byte(c))
		}
		return s.String()
	}
	return str(u.Sysname[:]) + " " + str(u.Release[:]) + " " + str(u.Machine[:])
}

// totalSystemMemory is the machine's memory.
func totalSystemMemory() int64 {
	var info syscall.Sysinfo_t
	if syscall.Sysinfo(&info) != nil {
		return 0
	}
	return int64(info.Totalram) * int64(info.Unit)
}

// processRSS is the process's resident memory, from /proc/self/statm, as
// Redis's zmalloc_get_rss reads it.
func processRSS(m *memSample) int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return m.total - m.released
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return m.total - m.released
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return m.total - m.released
	}
	return pages * int64(os.Getpagesize())
}
