//go:build unix

package loader

import (
	"os"
	"runtime"
	"syscall"
)

// maxRSS is a finished child's peak resident memory in bytes, as
// getrusage gives it: in bytes on macOS, in KiB elsewhere.
func maxRSS(ps *os.ProcessState) int64 {
	m := ps.SysUsage().(*syscall.Rusage).Maxrss
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return m
	}
	return m << 10
}
