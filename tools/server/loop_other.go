//go:build !linux

package server

import "net"

// Without epoll, each connection is served by a goroutine of its own
// (conn_goroutine.go).

// transport is the part of a connection its transport keeps.
type transport struct {
	goroutine *goroutineTransport
}

// task is a wake-up handed to a connection by another goroutine.
type task struct {
	c    *connection
	kind wakeKind
	err  error
}

func (c *connection) write(b []byte) (int, error) { return c.goroutine.write(b) }

func (c *connection) wake(kind wakeKind, err error) { c.goroutine.wake(task{c, kind, err}) }

// loops serves the connections, each on a goroutine.
type loops struct {
	s     *Server
	conns goroutineConns
}

func startLoops(s *Server, _ int, _ bool) (*loops, error) { return &loops{s: s}, nil }

func (ls *loops) enroll(conn net.Conn, c *connection) error {
	ls.conns.serve(ls.s, conn, c)
	return nil
}

func (ls *loops) closeAll() { ls.conns.closeAll() }

func (ls *loops) stop() {}

// readOffLoop is never called here: a goroutine of its own reads each
// connection, heavy commands included.
func (c *connection) readOffLoop() {}
