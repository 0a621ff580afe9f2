//go:build unix

package server

import "syscall"

// mkfifo makes a FIFO: a file whose open blocks until a writer comes.
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }
