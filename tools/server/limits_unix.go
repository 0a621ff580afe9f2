//go:build unix

package server

import "syscall"

// maxClientsForFiles is the most clients the open-file limit leaves room
// for. (Go raises the soft limit to the hard one at start.)
func maxClientsForFiles() (int, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<30 {
		return 0, false
	}
	return max(int(lim.Cur)-fileReserve, 1), true
}
