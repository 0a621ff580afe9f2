package server

import (
	"runtime/debug"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// One connection. Connections are served by a few event loops
// (github.com/panjf2000/gnet/v2), as Redis serves them from its one: a
// loop waits in epoll for any of its connections, reads what arrived,
// runs every complete command in it and sends all their replies with one
// write. A request is parsed where gnet read it, without a copy; only the
// unfinished tail of one is copied, to the connection's own buffer.
//
// Why an event loop rather than a goroutine per connection: measured
// side by side with redis-server 7.0 (SADD/SISMEMBER) and the redcon
// server this layer replaced, in the same run (bench/serve_bench.sh 3
// 1000000: medians of 3 alternating rounds, 50 clients, -r 1000000, on a
// shared 2-core machine), server CPU per command and its ratio to
// Redis's:
//
//	                    redcon      goroutine  gnet,    gnet,
//	                                per conn   2 loops  1 loop (default here)
//	BF.ADD    -P 16     1.65 µs .97 1.23 .75   1.38 .85 1.00 .60
//	BF.EXISTS -P 16     1.65 µs 1.0 1.20 .81   1.34 .84 0.92 .58
//	BF.ADD    -P 1      14.7 µs 1.4 14.5 1.32  10.9 1.07 11.1 .99
//	BF.EXISTS -P 1      15.1 µs 1.4 15.6 1.41  13.1 1.25 11.4 1.09
//
// Unpipelined, the kernel's work per system call dominates;
// bench/serve_syscalls.sh counts them per command: redis-server 2.1
// (read, write, a share of epoll_wait); a goroutine per connection 3.4 (a
// second read that finds nothing and parks the goroutine, and the Go
// scheduler's futex and nanosleep wake-ups); gnet 2.8 (read, write, and
// 0.6 epoll_wait: it polls once more without blocking before it
// blocks). One loop batches more events per wake-up than two, and on two
// cores the clients and the kernel's loopback work need the other core:
// so the default is one loop per two cores.
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
// a length a client announced. An idle connection holds no buffer.

const (
	// readBufferBytes is the least a connection's buffer holds once it
	// needs one.
	readBufferBytes = 4 << 10
	// flushBytes is how much reply may wait in the buffer while commands
	// of one batch run; past it the replies are handed to the socket
	// first.
	flushBytes = 64 << 10
	// unauthPendingBytes bounds the commands a client that has not
	// authenticated may have waiting while its AUTH is held at the gate.
	unauthPendingBytes = 256 << 10
)

// connection is one client's state, used by its event loop only.
type connection struct {
	s    *Server
	gc   gnet.Conn
	addr string
	sess session
	p    requestParser
	w    replyWriter
	in   []byte // bytes of commands not yet run, from in[r] on
	r    int
	held int64 // bytes of MaxBufferedBytes this client has reserved
	// lock is the client's shard of the server's exec lock, held while
	// the client's commands run (see execLock).
	lock *paddedMutex
	// pausedUntil holds the commands back while an AUTH waits its turn at
	// the gate (see auth.go); a timer wakes the connection then.
	pausedUntil time.Time
	// waiting is the command held back (a copy), run first on waking.
	waiting [][]byte
	closing bool
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
	// log is the append-only log position this connection's unsent
	// replies depend on (see Server.syncLog).
	log logWait
}

func (s *Server) newClient(addr string) *connection {
	c := &connection{s: s, addr: addr}
	c.sess = session{id: s.nextID.Add(1), authed: s.cfg.Password == "", proto: 2, client: c,
		log: logWait{deferred: true}}
	c.w.proto = 2
	c.lock = s.execLock.shard(c.sess.id)
	return c
}

// loops is the gnet event handler: it hands each connection's bytes to
// its connection.
type loops struct {
	gnet.BuiltinEventEngine
	s *Server
}

func (l *loops) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	c, _ := gc.Context().(*connection)
	if c == nil {
		return nil, gnet.Close
	}
	c.gc = gc
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, gnet.Close // Shutdown has closed the others already
	}
	s.conns[c] = gc
	return nil, gnet.None
}

func (l *loops) OnTraffic(gc gnet.Conn) (action gnet.Action) {
	c, _ := gc.Context().(*connection)
	if c == nil {
		return gnet.Close
	}
	defer func() {
		if r := recover(); r != nil {
			l.s.logPanic.log(l.s.cfg.Logger, "connection panicked; closed it", "remote", c.addr, "panic", r, "stack", string(debug.Stack()))
			action = gnet.Close
		}
	}()
	data, _ := gc.Next(-1)
	if !c.feed(data) {
		return gnet.Close
	}
	return gnet.None
}

func (l *loops) OnClose(gc gnet.Conn, _ error) gnet.Action {
	if c, _ := gc.Context().(*connection); c != nil {
		c.release()
		l.s.closed1(c)
	}
	return gnet.None
}

// feed takes the bytes just read, runs every complete command, sends the
// replies, and reports whether the connection stays open.
func (c *connection) feed(data []byte) bool {
	if c.closing {
		return false
	}
	var err error
	keep := true
	if c.r == len(c.in) && c.pausedUntil.IsZero() {
		// Nothing waiting: parse in gnet's buffer, copy only a tail.
		c.in, c.r = c.in[:0], 0
		if cap(c.in) > readBufferBytes*4 {
			c.reserve(-int64(cap(c.in)))
			c.in = nil
		}
		var n int
		n, keep = c.run(data)
		if rest := data[n:]; keep && len(rest) > 0 {
			err = c.buffer(rest)
		}
	} else {
		if err = c.buffer(data); err == nil && !c.paused() {
			var n int
			n, keep = c.run(c.in[c.r:])
			c.r += n
		}
	}
	if err == nil && keep {
		err = c.checkPending()
	}
	if err != nil {
		c.p.reset()
		c.w.WriteError(err.Error())
		keep = false
	}
	// The changes among the batch's commands wait for the log together
	// (under appendfsync always: written and synced); if it failed, no
	// reply goes out, since their changes may not be durable.
	if c.s.syncLog(&c.sess) != nil {
		c.w.b = c.w.b[:0]
		c.closing = true
		return false
	}
	if !c.flush() {
		keep = false
	}
	if !keep {
		c.closing = true
	}
	return keep
}

// buffer appends bytes not yet run to the connection's buffer, growing it
// (from the budget) only as far as they need.
func (c *connection) buffer(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if c.r > 0 && c.r >= len(c.in)/2 {
		n := copy(c.in, c.in[c.r:])
		c.in, c.r = c.in[:n], 0
	}
	if need := len(c.in) + len(b); need > cap(c.in) {
		// Double, so that a request arriving in many reads is copied a
		// bounded number of times; or, if the budget is short, take just
		// what is needed.
		if err := c.resize(max(need, 2*cap(c.in), readBufferBytes)); err == errBuffersFull {
			err = c.resize(need)
		} else if err != nil {
			return err
		}
		if need > cap(c.in) {
			return errBuffersFull
		}
	}
	c.in = append(c.in, b...)
	return nil
}

// checkPending refuses a client whose unfinished request, or whose
// commands held back at the AUTH gate, exceed what it may send.
func (c *connection) checkPending() error {
	pending := len(c.in) - c.r
	limit := c.s.cfg.MaxRequestBytes + maxInlineBytes
	if !c.sess.authed && c.s.cfg.Password != "" {
		limit = unauthPendingBytes
	}
	if pending > limit {
		return errRequestTooLarge
	}
	return nil
}

// resize gives the buffer a new capacity of at least size, taking the
// difference from the server's budget.
func (c *connection) resize(size int) error {
	limit := c.s.cfg.MaxRequestBytes + 2*maxInlineBytes
	if !c.sess.authed && c.s.cfg.Password != "" {
		limit = unauthPendingBytes + maxInlineBytes
	}
	if size > limit {
		if len(c.in) >= limit {
			return errRequestTooLarge
		}
		size = limit
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

func (c *connection) paused() bool {
	if c.pausedUntil.IsZero() {
		return false
	}
	if time.Now().Before(c.pausedUntil) {
		return true
	}
	c.pausedUntil = time.Time{}
	return false
}

// run runs every complete command at the start of b and returns how many
// bytes they took. keep is false when the connection must close once the
// replies are sent: after QUIT or a protocol error.
func (c *connection) run(b []byte) (used int, keep bool) {
	s := c.s
	c.lock.Lock()
	defer func() { c.lock.Unlock() }()
	if args := c.waiting; args != nil {
		c.waiting = nil
		s.exec(&c.sess, &c.w, args)
		if c.sess.quit {
			return 0, false
		}
	}
	for used < len(b) {
		lim := parseLimits{authed: c.sess.authed, maxRequest: s.cfg.MaxRequestBytes}
		args, n, err := c.p.next(b[used:], lim)
		if err == nil {
			err = c.account()
		}
		if err != nil {
			c.p.reset()
			c.w.WriteError(err.Error())
			return used, false
		}
		if n == 0 {
			return used, true // the rest of the command is still to come
		}
		used += n
		if args != nil && c.mustWaitForAuth(args) {
			// Hold this command and the ones after it back.
			c.waiting = make([][]byte, len(args))
			for i, a := range args {
				c.waiting[i] = append([]byte(nil), a...)
			}
			return used, true
		}
		if args == nil {
			continue
		}
		s.exec(&c.sess, &c.w, args)
		c.p.shrink()
		if c.sess.quit {
			return used, false
		}
		if len(c.w.b) > flushBytes && (c.s.syncLog(&c.sess) != nil || !c.flush()) {
			return used, false
		}
	}
	return used, true
}

// mustWaitForAuth reports whether args check a password while the gate is
// shut; it then pauses the connection until the gate opens.
func (c *connection) mustWaitForAuth(args [][]byte) bool {
	if c.s.cfg.Password == "" || c.sess.multi != nil {
		return false
	}
	if !eq(args[0], "auth") && !(eq(args[0], "hello") && len(args) > 2) {
		return false
	}
	wait := c.s.auth.delay()
	if wait <= 0 {
		return false
	}
	c.pausedUntil = time.Now().Add(wait)
	gc := c.gc
	time.AfterFunc(wait, func() { gc.Wake(nil) })
	return true
}

// flush hands the waiting replies to the socket: gnet writes them at
// once, or keeps them until the socket takes more. It reports false when
// the client has left more than MaxRequestBytes of replies unread: it
// sends faster than it reads, and is disconnected rather than let its
// replies pile up.
func (c *connection) flush() bool {
	if len(c.w.b) == 0 {
		return true
	}
	c.gc.Write(c.w.b)
	if cap(c.w.b) > flushBytes*2 {
		c.w.b = nil // a large reply is gone: do not keep its buffer
	} else {
		c.w.b = c.w.b[:0]
	}
	if c.gc.OutboundBuffered() > c.s.cfg.MaxRequestBytes {
		c.s.logOutput.log(c.s.cfg.Logger, "client does not read its replies; closed it", "remote", c.addr, "unread_bytes", c.gc.OutboundBuffered())
		return false
	}
	return true
}

func (c *connection) remote() string { return c.addr }

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

// withoutShard runs f with the session's shard released, for EXEC,
// which waits for the other shards.
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
