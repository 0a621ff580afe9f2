//go:build unix

package server

import (
	"fmt"
	"syscall"
)

// cpuTimes is the CPU the process and its children used, in seconds, as
// INFO cpu prints them.
func cpuTimes() (sys, user, childSys, childUser string) {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) string { return fmt.Sprintf("%d.%06d", t.Sec, t.Usec) }
	return tv(self.Stime), tv(self.Utime), tv(children.Stime), tv(children.Utime)
}
