//go:build !linux

package server

// fdNum is the connection's file descriptor, as CLIENT LIST shows it:
// unknown (-1) where each connection is served by a goroutine of its own.
func (c *connection) fdNum() int { return -1 }
