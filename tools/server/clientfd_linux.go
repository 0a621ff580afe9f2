//go:build linux

package server

// fdNum is the connection's file descriptor, as CLIENT LIST shows it; -1
// for one served by a goroutine of its own.
func (c *connection) fdNum() int {
	if c.goroutine != nil {
		return -1
	}
	return c.fd
}
