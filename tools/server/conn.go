package server

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

// One connection: a goroutine reads requests into the connection's
// buffer, runs every complete command in it and writes all their replies
// with one write.
//
// Memory a client can make the server hold is bounded three ways:
//   - the buffer of one request is at most MaxRequestBytes (plus one
//     header line), and the parser's per-argument slices at most as much
//     again; a client that sends more is told and disconnected;
//   - all clients' buffers together take from one budget,
//     MaxBufferedBytes; a client that would exceed it is told and
//     disconnected, so a crowd cannot add up what no single one may hold;
//   - before AUTH, Redis's own limits: 10 arguments of 16 KiB.
//
// Buffers grow by doubling only when bytes arrive to fill them, never to
// a length a client announced.

const (
	// readBufferBytes is a connection's first buffer: enough for a batch
	// of pipelined commands. It doubles when a read fills it.
	readBufferBytes = 4 << 10
	// flushBytes is how much reply may wait in the buffer while commands
	// of one batch run; past it the replies are written first, so that a
	// pipeline of large replies cannot pile up in memory.
	flushBytes = 64 << 10
)

// connection is one client's state, owned by its goroutine.
type connection struct {
	s    *Server
	conn net.Conn
	sess session
	p    requestParser
	w    replyWriter
	in   []byte // bytes read; the current command starts at in[r]
	r    int
	held int64 // bytes of MaxBufferedBytes this client has reserved
	// lock is the client's shard of the server's exec lock, held while
	// the client's commands run (see execLock).
	lock *paddedMutex
}

// session is what a connection's commands know of it.
type session struct {
	id     int64
	authed bool
	name   string
	quit   bool
	proto  int // 2 or 3
	// multi is the transaction being queued, nil outside MULTI.
	multi *multiState
	// authFailures counts wrong passwords on this connection.
	authFailures int
	// client is the connection; nil when a command runs outside one (the
	// tests of exec).
	client *connection
	// inExec is set while EXEC runs the queue, which holds every shard.
	inExec bool
}

func (s *Server) newClient(conn net.Conn) *connection {
	c := &connection{s: s, conn: conn}
	c.sess = session{id: s.nextID.Add(1), authed: s.cfg.Password == "", proto: 2, client: c}
	c.w.proto = 2
	c.lock = s.execLock.shard(c.sess.id)
	return c
}

// serve runs the connection until the client leaves, breaks the
// protocol or the server shuts down. A panic anywhere in it is logged
// and closes this connection only.
func (c *connection) serve() {
	defer func() {
		if r := recover(); r != nil {
			c.s.logPanic.log(c.s.cfg.Logger, "connection panicked; closed it", "remote", c.remote(), "panic", r, "stack", string(debug.Stack()))
		}
		c.release()
		c.conn.Close()
	}()
	for {
		if err := c.fill(); err != nil {
			if pe, ok := err.(protocolError); ok {
				c.w.WriteError(string(pe))
				c.flush()
			} else if !isClosedConn(err) {
				c.s.cfg.Logger.Debug("connection closed", "remote", c.remote(), "err", err)
			}
			return
		}
		keep := c.run()
		if !c.flush() || !keep {
			return
		}
	}
}

// fill reads more bytes after the ones held, making room first: it drops
// what the commands run so far consumed, and grows the buffer only when a
// request already fills it.
func (c *connection) fill() error {
	switch {
	case c.r == len(c.in):
		c.in, c.r = c.in[:0], 0
		if cap(c.in) > readBufferBytes*4 {
			// A large request is done: give its buffer back.
			c.reserve(-int64(cap(c.in)))
			c.in = nil
		}
	case c.r > 0:
		n := copy(c.in, c.in[c.r:])
		c.in, c.r = c.in[:n], 0
	}
	if cap(c.in)-len(c.in) < readBufferBytes/2 {
		size := max(2*cap(c.in), readBufferBytes)
		if err := c.resize(size); err != nil {
			return err
		}
	}
	n, err := c.conn.Read(c.in[len(c.in):cap(c.in)])
	c.in = c.in[:len(c.in)+n]
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// resize gives the query buffer a new capacity, taking the difference
// from the server's budget.
func (c *connection) resize(size int) error {
	if limit := c.s.cfg.MaxRequestBytes + maxInlineBytes; size > limit {
		size = limit
	}
	if size <= cap(c.in) {
		return errRequestTooLarge
	}
	if !c.reserve(int64(size - cap(c.in))) {
		return errBuffersFull
	}
	in := make([]byte, len(c.in), size)
	copy(in, c.in)
	c.in = in
	return nil
}

// reserve takes n bytes from the server's budget for this client; n < 0
// gives them back. It fails, taking nothing, when the budget is spent.
func (c *connection) reserve(n int64) bool {
	if n > 0 && c.s.buffered.Add(n) > c.s.cfg.MaxBufferedBytes {
		c.s.buffered.Add(-n)
		return false
	}
	if n < 0 {
		c.s.buffered.Add(n)
	}
	c.held += n
	return true
}

// account brings the client's reservation in line with what it holds
// now: its buffer, its parser's slices and its MULTI queue.
func (c *connection) account() error {
	parser := int64(c.p.memBytes())
	if parser > int64(c.s.cfg.MaxRequestBytes) {
		return errRequestTooLarge
	}
	want := int64(cap(c.in)) + parser + c.sess.multiBytes()
	if !c.reserve(want - c.held) {
		return errBuffersFull
	}
	return nil
}

func (c *connection) release() {
	c.s.buffered.Add(-c.held)
	c.held = 0
	c.in = nil
	c.sess.multi = nil
}

// run runs every complete command in the buffer. It returns false when
// the connection must close once the replies are written: after QUIT or
// a protocol error.
func (c *connection) run() bool {
	s := c.s
	c.lock.Lock()
	defer func() { c.lock.Unlock() }()
	for c.r < len(c.in) {
		lim := parseLimits{authed: c.sess.authed, maxRequest: s.cfg.MaxRequestBytes}
		args, n, err := c.p.next(c.in[c.r:], lim)
		if err == nil && n == 0 && len(c.in)-c.r > s.cfg.MaxRequestBytes+maxInlineBytes {
			err = errRequestTooLarge
		}
		if err == nil {
			err = c.account()
		}
		if err != nil {
			c.p.reset()
			c.w.WriteError(err.Error())
			return false
		}
		if n == 0 {
			return true // the rest of the command is still to come
		}
		c.r += n
		if args == nil {
			continue
		}
		s.exec(&c.sess, &c.w, args)
		c.p.shrink()
		if c.sess.quit {
			return false
		}
		if len(c.w.b) > flushBytes {
			c.lock.Unlock()
			ok := c.flush()
			c.lock.Lock()
			if !ok {
				return false
			}
		}
	}
	return true
}

// flush writes the replies waiting in the buffer. It reports whether the
// connection is still usable.
func (c *connection) flush() bool {
	if len(c.w.b) == 0 {
		return true
	}
	_, err := c.conn.Write(c.w.b)
	if cap(c.w.b) > flushBytes*2 {
		c.w.b = nil // a large reply is gone: do not keep its buffer
	} else {
		c.w.b = c.w.b[:0]
	}
	return err == nil
}

func (c *connection) remote() string {
	if a := c.conn.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}

func isClosedConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, os.ErrDeadlineExceeded)
}

// execLock keeps EXEC's commands together. Every client holds its shard
// while its commands run; EXEC takes every shard, so no other client's
// command runs between the queued ones. A plain command pays for one
// uncontended lock per batch it arrives in, on a shard it seldom shares.
type execLock struct {
	shards [64]paddedMutex
}

// paddedMutex sits alone on its cache lines, so that clients on two cores
// do not slow each other by locking neighbours.
type paddedMutex struct {
	sync.Mutex
	_ [128 - 8]byte
}

func (l *execLock) shard(id int64) *paddedMutex { return &l.shards[uint64(id)%uint64(len(l.shards))] }

func (l *execLock) lockAll() {
	for i := range l.shards {
		l.shards[i].Lock()
	}
}

func (l *execLock) unlockAll() {
	for i := range l.shards {
		l.shards[i].Unlock()
	}
}

// withoutShard runs f with the session's shard released, for a command
// that waits (EXEC for the other shards, a throttled AUTH), so that the
// wait does not stall anybody's EXEC.
func (sess *session) withoutShard(f func()) {
	if sess.client == nil {
		f()
		return
	}
	sess.client.lock.Unlock()
	defer sess.client.lock.Lock()
	f()
}

// logLimiter logs at most one line a second of one kind, saying how many
// were left out, so that an attacker cannot fill the disk with the log.
type logLimiter struct {
	mu      sync.Mutex
	last    time.Time
	dropped int
}

// log logs msg unless a line of this kind went out less than a second
// ago.
func (l *logLimiter) log(logger interface {
	Warn(msg string, args ...any)
}, msg string, args ...any) {
	l.mu.Lock()
	now := time.Now()
	if now.Sub(l.last) < time.Second {
		l.dropped++
		l.mu.Unlock()
		return
	}
	dropped := l.dropped
	l.last, l.dropped = now, 0
	l.mu.Unlock()
	if dropped > 0 {
		args = append(args, "similar_lines_left_out", dropped)
	}
	logger.Warn(msg, args...)
}
