//go:build !linux

package server

// raisePriority is a no-op where threads cannot be reniced one by one.
func raisePriority() {}
