package server

import (
	"net"
	"runtime/debug"
	"sync"
	"time"
)

// goroutineTransport serves one connection from a goroutine of its own,
// with blocking reads and writes: the transport of TLS connections
// (tls.go), the one where there is no epoll (loop_other.go), and on Linux
// a second path that tests run the protocol over. Its writes block until
// the socket takes the replies, so a client that does not read holds up
// only its own goroutine, and the server no more than one batch of its
// replies.
type goroutineTransport struct {
	// conn is what the connection reads and writes (a *tls.Conn over
	// raw, or raw itself); raw is the socket, which another goroutine
	// closes to end a read or write in progress (Shutdown).
	conn, raw net.Conn
	// readBytes is the size of the buffer reads go into.
	readBytes int
	// fixed is counted in the connection's share of max-buffered-bytes
	// for what the transport holds beyond the connection's own buffers
	// (tlsConnBytes).
	fixed  int64
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

// transportBytes is what the connection's transport holds beyond its
// request and reply buffers, counted with them in the budget (account).
func (c *connection) transportBytes() int64 {
	if c.goroutine == nil {
		return 0
	}
	return c.goroutine.fixed
}

// goroutineConns are the connections served by goroutines.
type goroutineConns struct {
	mu    sync.Mutex
	conns map[*connection]*goroutineTransport
}

func (gs *goroutineConns) serve(s *Server, conn net.Conn, c *connection) {
	g, ok := gs.register(s, conn, c, loopReadBytes)
	if ok {
		go gs.run(s, g, c, conn)
	}
}

// register makes conn the transport of c, where Shutdown finds it. It
// reports false, having closed the connection, if Shutdown has begun.
func (gs *goroutineConns) register(s *Server, conn net.Conn, c *connection, readBytes int) (*goroutineTransport, bool) {
	g := &goroutineTransport{conn: conn, raw: conn, readBytes: readBytes, signal: make(chan struct{}, 1)}
	c.goroutine = g
	gs.mu.Lock()
	if gs.conns == nil {
		gs.conns = map[*connection]*goroutineTransport{}
	}
	gs.conns[c] = g
	gs.mu.Unlock()
	if s.closing.Load() {
		// Shutdown began after the hand-over; its closeAll may have
		// passed this connection by.
		gs.end(s, g, c)
		return nil, false
	}
	return g, true
}

// run serves c over conn (raw, or a *tls.Conn over it) on this goroutine
// until it closes.
func (gs *goroutineConns) run(s *Server, g *goroutineTransport, c *connection, conn net.Conn) {
	defer gs.end(s, g, c)
	gs.mu.Lock()
	g.conn = conn
	gs.mu.Unlock()
	if s.closing.Load() {
		return // Shutdown began after the hand-over
	}
	g.run(s, c)
}

// end closes a connection served by a goroutine and forgets it.
func (gs *goroutineConns) end(s *Server, g *goroutineTransport, c *connection) {
	if c.shouldLinger() {
		g.linger(c)
	}
	gs.mu.Lock()
	delete(gs.conns, c)
	gs.mu.Unlock()
	// The socket, not a *tls.Conn: its Close would first send a
	// close_notify, waiting up to 5 s for a client that does not read.
	g.raw.Close()
	c.release()
	s.closed1(c)
}

func (g *goroutineTransport) run(s *Server, c *connection) {
	defer func() {
		if r := recover(); r != nil {
			s.logPanic.log(s.cfg.Logger, "connection panicked; closed it", "remote", c.addr, "panic", r, "stack", string(debug.Stack()))
			c.dead = true
			g.raw.Close()
			// A slow command of it may still run, with its state.
			for c.block&blockBusy != 0 {
				g.takeTasks(c)
			}
		}
	}()
	buf := make([]byte, g.readBytes)
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
		g.raw.Close() // ends a read or write in progress
		g.wake(task{c: c, kind: wakeClose})
	}
}

// linger shuts the writing side of a connection the server ends, and
// waits for the client to close its own, for at most lingerTime (see
// connection.shouldLinger). Reading is the only way to see the client's
// end of file here: it discards at most lingerBytes, then waits without
// reading. Shutdown ends the wait (closeAll).
func (g *goroutineTransport) linger(c *connection) {
	c.release()
	cw, ok := g.raw.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	deadline := time.Now().Add(lingerTime)
	g.raw.SetReadDeadline(deadline)
	buf := make([]byte, 4<<10)
	for discarded := 0; discarded < lingerBytes; {
		n, err := g.raw.Read(buf)
		if err != nil {
			return
		}
		discarded += n
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-t.C:
	case <-g.signal:
	}
}
