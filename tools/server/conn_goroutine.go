package server

import (
	"net"
	"runtime/debug"
	"sync"
)

// goroutineTransport serves one connection from a goroutine of its own,
// with blocking reads and writes: the transport where there is no epoll
// (loop_other.go), and on Linux a second path that tests run the protocol
// over. Its writes block until the socket takes the replies, so a client
// that does not read holds up only its own goroutine, and the server no
// more than one batch of its replies.
type goroutineTransport struct {
	conn   net.Conn
	mu     sync.Mutex
	tasks  []task
	signal chan struct{} // one waiting token: tasks were posted
}

func (g *goroutineTransport) write(b []byte) (int, error) {
	return g.conn.Write(b)
}

func (g *goroutineTransport) wake(t task) {
	g.mu.Lock()
	g.tasks = append(g.tasks, t)
	g.mu.Unlock()
	select {
	case g.signal <- struct{}{}:
	default:
	}
}

// goroutineConns are the connections served by goroutines.
type goroutineConns struct {
	mu    sync.Mutex
	conns map[*connection]*goroutineTransport
}

func (gs *goroutineConns) serve(s *Server, conn net.Conn, c *connection) {
	g := &goroutineTransport{conn: conn, signal: make(chan struct{}, 1)}
	c.goroutine = g
	gs.mu.Lock()
	if gs.conns == nil {
		gs.conns = map[*connection]*goroutineTransport{}
	}
	gs.conns[c] = g
	gs.mu.Unlock()
	go func() {
		defer func() {
			gs.mu.Lock()
			delete(gs.conns, c)
			gs.mu.Unlock()
			conn.Close()
			c.release()
			s.closed1(c)
		}()
		if s.closing.Load() {
			return // Shutdown began after the hand-over
		}
		g.run(s, c)
	}()
}

func (g *goroutineTransport) run(s *Server, c *connection) {
	defer func() {
		if r := recover(); r != nil {
			s.logPanic.log(s.cfg.Logger, "connection panicked; closed it", "remote", c.addr, "panic", r, "stack", string(debug.Stack()))
			c.dead = true
			g.conn.Close()
			// A slow command of it may still run, with its state.
			for c.block&blockBusy != 0 {
				g.takeTasks(c)
			}
		}
	}()
	buf := make([]byte, loopReadBytes)
	for !c.finished() || c.block&blockBusy != 0 {
		if !c.runnable() {
			g.takeTasks(c)
			continue
		}
		n, err := g.conn.Read(buf)
		if n > 0 {
			c.input(buf[:n])
		}
		if err != nil {
			c.dead = true
		}
	}
}

// takeTasks waits for wake-ups and takes them.
func (g *goroutineTransport) takeTasks(c *connection) {
	<-g.signal
	g.mu.Lock()
	tasks := g.tasks
	g.tasks = nil
	g.mu.Unlock()
	for _, t := range tasks {
		if t.kind == wakeClose {
			c.dead = true
			continue
		}
		c.woken(t.kind, t.err)
	}
}

func (gs *goroutineConns) closeAll() {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	for c, g := range gs.conns {
		g.conn.Close() // ends a read in progress
		g.wake(task{c: c, kind: wakeClose})
	}
}
