package server

import (
	"errors"
	"fmt"
	"net"
)

var errRequestTooLarge = errors.New("server: request too large")

// limitListener bounds the size of one request on every connection it
// accepts. The RESP reader buffers a command until it is complete, however
// large its client says it is; counting the bytes read since the server
// last replied bounds that buffer: a request never completes without a
// reply, so bytes read past the limit without one are one request too
// large (or a client that never reads, which is no better).
type limitListener struct {
	net.Listener
	maxRequest int64
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &limitConn{Conn: c, max: l.maxRequest}, nil
}

// limitConn is read and written by one goroutine, the connection's handler.
type limitConn struct {
	net.Conn
	max     int64
	pending int64 // bytes read since the last write
}

func (c *limitConn) Read(p []byte) (int, error) {
	if c.pending >= c.max {
		fmt.Fprintf(c.Conn, "-ERR Protocol error: request exceeds max-request-bytes (%d)\r\n", c.max)
		return 0, errRequestTooLarge
	}
	if room := c.max - c.pending + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.Conn.Read(p)
	c.pending += int64(n)
	return n, err
}

func (c *limitConn) Write(p []byte) (int, error) {
	c.pending = 0
	return c.Conn.Write(p)
}
