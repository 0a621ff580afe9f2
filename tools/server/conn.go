package server

import (
	"errors"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"
)

// One connection: its commands, its replies and what it may hold. The
// transport that feeds it bytes and takes its replies is an event loop
// (loop_linux.go) or, elsewhere, a goroutine (conn_goroutine.go); this
// file is the part they share.
//
// A connection runs the commands of what it read at once, in order, and
// appends their replies to one buffer, handed to the socket after the
// batch. Four things stop it running commands, and it then stops reading
// (the client's further bytes wait in the kernel, which pushes back on
// the client), until another goroutine, or its socket, wakes it:
//   - its replies wait for the append-only log (under appendfsync always,
//     until their changes are fsynced; under everysec, while the disk
//     stalls): the log's flusher wakes it. Replies leave only after, in
//     order; if the log fails, the connection closes without them;
//   - a command that may take long runs on a goroutine of its own, so
//     that the loop serves the other clients meanwhile: a slow one (a
//     save, a scan of the whole keyspace, a dump of a whole filter:
//     command.slow), a heavy one (more than maxLoopArgs arguments or
//     maxLoopBytes bytes), EXEC, and one that would wait for a lock:
//     a key a transaction holds (isolation.go), or a CF or RedisBloom
//     key's lock held by a save or a dump (session.holdOnLoop). A heavy
//     command is even read off the loop once its header says it is one
//     (readOffLoop): the buffers of a 60 MB request, and the slices of a
//     million arguments, are grown and copied there, not on the loop
//     (on a loaded VM, first touching 64 MB of memory took 0.8 s);
//   - an AUTH waits its turn at the password gate (auth.go);
//   - more than flushBytes of its replies wait for a socket that takes
//     no more (outputFull): a client that does not read is pushed back,
//     as Redis pushes back on one, rather than buffered for.
//
// Memory a client can make the server hold is bounded three ways:
//   - the buffer of one request is at most MaxRequestBytes (plus one
//     header line), and the parser's per-argument slices at most as much
//     again; a client that sends more is told and disconnected; replies it
//     leaves unread are flushBytes and the last command's reply, which
//     is bounded by MaxRequestBytes too;
//   - all clients' buffers together, requests and replies, take from one
//     budget, MaxBufferedBytes; a client whose request would exceed it is
//     told and disconnected, one whose replies would is disconnected, so
//     that a crowd cannot add up what no single one may hold;
//   - before AUTH, Redis's own limits: 10 arguments of 16 KiB, at most
//     unauthPendingBytes of commands waiting and of replies unread; and
//     all unauthenticated clients together hold at most
//     MaxUnauthBufferedBytes of the budget, so that a crowd that knows no
//     password cannot take the budget from the clients that do.
//
// Buffers grow by doubling only when bytes arrive to fill them, never to
// a length a client announced. An emptied buffer is kept for the next
// batch only while it is small and the budget has room (keep).

const (
	// readBufferBytes is the least a connection's buffer holds once it
	// needs one.
	readBufferBytes = 4 << 10
	// loopReadBytes is what one read takes from a socket at most, into
	// the loop's buffer, and loopWriteBytes what one write gives it.
	loopReadBytes  = 64 << 10
	loopWriteBytes = 256 << 10
	// flushBytes is how much reply may wait in the buffer while commands
	// of one batch run; past it the replies are handed to the socket
	// first.
	flushBytes = 64 << 10
	// keepBufferBytes is the largest request or reply buffer a
	// connection keeps between batches (see keep).
	keepBufferBytes = 256 << 10
	// lingerBytes is the most a goroutine transport reads and discards
	// while a connection lingers (see connection.shouldLinger).
	lingerBytes = 64 << 10
	// unauthPendingBytes bounds the commands a client that has not
	// authenticated may have waiting while its AUTH is held at the gate.
	unauthPendingBytes = 256 << 10
	// maxLoopArgs and maxLoopBytes bound the commands a loop runs itself:
	// a larger one (a BF.MADD of a million items takes a second) runs off
	// the loop, so that a batch of commands holds the loop, and an EXEC's
	// barrier, for a few milliseconds at most. A BF.MADD of 4,096 items
	// takes about 1 ms.
	maxLoopArgs  = 4096
	maxLoopBytes = 1 << 20
)

// lingerTime is how long a connection the server ends stays open after
// its last reply and its FIN, unless the client closes first (see
// connection.shouldLinger); a variable for tests.
var lingerTime = time.Second

// Why a connection runs no command now (connection.block).
const (
	blockLog    uint8 = 1 << iota // its replies wait for the append-only log
	blockBusy                     // a slow command of it runs off the loop
	blockPause                    // its AUTH waits its turn at the gate
	blockOutput                   // its replies wait for room in the socket
)

// wakeKind says what woke a connection, or what its loop must do.
type wakeKind uint8

const (
	wakeLog   wakeKind = iota + 1 // the log acknowledged its replies' changes, or failed
	wakeBusy                      // its slow command finished (err: errCloseAfterReplies, or the connection failed)
	wakePause                     // its AUTH's turn at the gate came
	wakeOpen                      // loop: serve this new connection
	wakeClose                     // loop: close this connection (Shutdown)
	wakeStop                      // loop: stop
)

// connection is one client's state. Its transport's goroutine (its event
// loop) uses it, but for a slow command's goroutine while block has
// blockBusy, which then has the session and the replies to itself.
type connection struct {
	transport
	s    *Server
	addr string
	sess session
	p    requestParser
	// w holds the replies; w.b[sent:] are not yet taken by the socket.
	w    replyWriter
	sent int
	in   []byte // bytes of commands not yet run, from in[r] on
	r    int
	held int64 // bytes of MaxBufferedBytes this client has reserved
	// unauthHeld is the part of held also counted in the server's
	// unauthenticated total (MaxUnauthBufferedBytes): all of it until the
	// client authenticates, then none.
	unauthHeld int64
	// lock is the client's shard of the server's exec lock, held while
	// the client's commands run on its loop (see execLock).
	lock  *paddedMutex
	block uint8
	// waiting is the command held back at the AUTH gate (a copy), run
	// first on waking.
	waiting      [][]byte
	waitingBytes int // the bytes of waiting, counted in held
	// closing: close once the replies are sent (QUIT, a protocol error);
	// dead: close now, without them (the peer left, the log failed).
	closing, dead bool
	closed        bool
	// readOff: the command being read is heavy; the rest of it is read
	// off the loop (readOffLoop) once the batch ends.
	readOff bool
}

// session is what a connection's commands know of it.
type session struct {
	id     int64
	authed bool
	quit   bool
	proto  int // 2 or 3
	// db is the database SELECT chose, 0 until then.
	db int
	// user is the user the session runs as: the default user until an
	// AUTH names another (acl.go); nil runs anything (tests of exec).
	user *aclUser
	// info is what other goroutines may read of the connection (CLIENT
	// LIST): its name, flags, last command; nil outside a connection.
	info *clientInfo
	// prevErrs is the count of error replies when the last command ended,
	// to tell a command that failed (INFO commandstats).
	prevErrs int
	// lookup caches the last key looked up for the statistics.
	lookup lookupCache
	// counts are the statistics of the batch's commands not yet added to
	// the shared counters (flushCounts).
	counts pendingCounts
	// lastEnd is when the last command of the batch running ended
	// (nanotime), 0 outside a batch: the next one's start (stats.go).
	lastEnd int64
	// multi is the transaction being queued, nil outside MULTI.
	multi *multiState
	// authFailures counts wrong passwords on this connection.
	authFailures int
	// client is the connection; nil when a command runs outside one (the
	// tests of exec).
	client *connection
	// holdsShard is set while the connection's commands run holding its
	// shard of the exec lock: on its loop, not on a goroutine of their own.
	holdsShard bool
	// inExec is set while EXEC runs the queue, holding its claim.
	inExec bool
	// held is the key whose lock the command running on the loop holds
	// to its end; wouldBlock, that the command found the lock taken and
	// must run again off the loop (holdOnLoop).
	held       *entry
	wouldBlock bool
	// log is the append-only log position this connection's unsent
	// replies depend on (see Server.syncLog).
	log logWait
}

func (s *Server) newClient(addr string) *connection {
	c := &connection{s: s, addr: addr}
	info := &clientInfo{created: time.Now()}
	info.multi.Store(-1)
	info.resp.Store(2)
	info.lastIO.Store(info.created.Unix())
	info.user.Store(s.x.acl.def)
	c.sess = session{id: s.nextID.Add(1), authed: !s.authRequired(), proto: 2, client: c,
		log: logWait{deferred: true}, user: s.x.acl.def, info: info}
	c.w.proto = 2
	c.w.onError = s.x.countError
	c.lock = s.execLock.shard(c.sess.id)
	s.x.connectionsReceived.Add(1)
	s.x.registry.add(c)
	return c
}

// authRequired reports whether a new connection must authenticate: the
// default user has a password or is off (Redis's authRequired).
func (s *Server) authRequired() bool { return s.x.acl.authRequired.Load() }

// unauth reports whether the connection is held to the limits of one
// that has not authenticated.
func (c *connection) unauth() bool { return !c.sess.authed && c.s.authRequired() }

// forget takes a closed connection out of the registry, its traffic into
// the totals.
func (s *Server) forget(c *connection) {
	s.x.registry.remove(c)
	if info := c.sess.info; info != nil {
		s.x.netIn.Add(info.netIn.Load())
		s.x.netOut.Add(info.netOut.Load())
	}
}

// kill closes the connection from another goroutine (CLIENT KILL, ACL
// DELUSER): its loop closes it at its next turn, without its pending
// replies.
func (c *connection) kill() {
	if g := c.goroutine; g != nil {
		// The socket: a *tls.Conn's Close would first send a
		// close_notify, waiting on a client that does not read.
		g.raw.Close() // ends a read or write in progress
	}
	c.wake(wakeClose, nil)
}

// input takes bytes just read, runs the commands they complete and sends
// the replies it may. The transport then closes the connection if
// finished says so.
func (c *connection) input(data []byte) {
	if c.closing || c.dead {
		return
	}
	c.sess.info.netIn.Add(int64(len(data)))
	c.sess.info.lastIO.Store(c.s.x.unix())
	var err error
	keep := true
	if c.r == len(c.in) && c.block == 0 {
		// Nothing waiting: parse in the loop's buffer, copy only a tail.
		c.in, c.r = c.in[:0], 0
		if !c.keep(cap(c.in)) {
			c.reserve(-int64(cap(c.in)))
			c.in = nil
		}
		var n int
		n, keep = c.run(data, false)
		if rest := data[n:]; keep && !c.dead && len(rest) > 0 {
			err = c.buffer(rest)
		}
	} else if err = c.buffer(data); err == nil && c.block == 0 {
		var n int
		n, keep = c.run(c.in[c.r:], true)
		c.r += n
	}
	c.finish(err, keep)
}

// finish ends a batch of commands: it refuses a client that holds too
// much, marks the connection for closing after its replies if it must,
// and sends them.
func (c *connection) finish(err error, keep bool) {
	if err == nil && keep && !c.dead {
		err = c.checkPending()
	}
	if err != nil {
		c.refuse(err)
		keep = false
	}
	if !keep {
		c.closing = true
	}
	c.send()
	if c.readOff {
		c.readOff = false
		if c.block == 0 && !c.closing && !c.dead && c.goroutine == nil {
			c.readOffLoop()
		}
	}
}

// refuse replies with the protocol error that ends the connection. A
// client dropped because the clients together hold max-buffered-bytes is
// logged: the operator sees the budget bite, as for replies in send.
func (c *connection) refuse(err error) {
	if err == errBuffersFull {
		c.s.logOutput.log(c.s.cfg.Logger, "requests would exceed max-buffered-bytes; closed the client", "remote", c.addr,
			"authenticated", !c.unauth())
	}
	c.p.reset()
	c.w.WriteError(err.Error())
}

// woken takes a wake-up another goroutine sent: the wait it ends is over,
// and the connection goes on where it stopped.
func (c *connection) woken(kind wakeKind, err error) {
	switch kind {
	case wakeLog:
		c.block &^= blockLog
		if err != nil {
			// The changes of the waiting replies may not be durable: the
			// client must not see them acknowledged.
			c.dropReplies()
			c.dead = true
			return
		}
	case wakeBusy:
		c.block &^= blockBusy
		switch {
		case err == errCloseAfterReplies:
			c.closing = true
		case err != nil:
			c.dead = true
			return
		}
	case wakePause:
		c.block &^= blockPause
	}
	c.resume()
}

// resume runs the commands left waiting while the connection was blocked.
func (c *connection) resume() {
	if c.block != 0 || c.dead {
		return
	}
	if !c.closing && (c.r < len(c.in) || c.waiting != nil) {
		n, keep := c.run(c.in[c.r:], true)
		c.r += n
		c.finish(nil, keep)
		return
	}
	c.send()
}

// runnable reports whether the transport should read for the connection:
// bytes read now could be run.
func (c *connection) runnable() bool { return c.block == 0 && !c.closing && !c.dead }

// finished reports whether the transport should close the connection now.
func (c *connection) finished() bool {
	return c.dead || (c.closing && c.block == 0 && c.sent == len(c.w.b))
}

// shouldLinger reports whether a finished connection is one the server
// ends (a refused request, QUIT) while the client may still be sending.
// Closed at once with bytes unread, its socket would answer them with a
// reset, and the client's kernel then drops what it had not yet read:
// the error reply that says why (an attacker of TestUnauthenticatedAttacks
// read nothing, in 1 run of 12 under the race detector beside CPU hogs).
// The transport first shuts its writing side, so that the client reads
// the replies and an end of file, and closes the socket once the client
// closes its side, or after lingerTime.
func (c *connection) shouldLinger() bool { return c.closing && !c.dead }

// send hands the replies to the socket, once the log allows: if their
// changes must wait (appendfsync always, or a stalled disk), the
// connection waits for the log's flusher to wake it, and runs nothing
// meanwhile, so that no later reply overtakes them.
func (c *connection) send() {
	if c.block&blockBusy == 0 {
		// Counted before any reply leaves, as Redis counts a command
		// before its reply is written out.
		c.s.flushCounts(&c.sess)
	}
	if c.block&(blockLog|blockBusy) != 0 || c.dead {
		return
	}
	if c.sess.log.pos != 0 {
		wait, err := c.s.awaitLog(&c.sess, c)
		if err != nil {
			c.dropReplies()
			c.dead = true
			return
		}
		if wait {
			c.block |= blockLog
			return
		}
	}
	if c.sent < len(c.w.b) {
		n, err := c.write(c.w.b[c.sent:])
		if err != nil {
			c.dead = true
			return
		}
		c.sent += n
		c.sess.info.netOut.Add(int64(n))
	}
	if c.sent == len(c.w.b) {
		c.sent = 0
		if !c.keep(cap(c.w.b)) {
			c.w.b = nil
		} else {
			c.w.b = c.w.b[:0]
		}
	} else if unsent := len(c.w.b) - c.sent; unsent > c.unreadLimit() {
		c.s.logOutput.log(c.s.cfg.Logger, "client does not read its replies; closed it", "remote", c.addr, "unread_bytes", unsent)
		c.dead = true
		return
	} else if c.sent > cap(c.w.b)/2 && unsent <= flushBytes {
		// The socket is full: keep the unsent tail at the buffer's start,
		// so that the buffer grows only by what the client leaves unread.
		// Not while more than flushBytes wait: no more is appended then
		// (blockOutput), and a loop must not copy megabytes at once.
		c.w.b = c.w.b[:copy(c.w.b, c.w.b[c.sent:])]
		c.sent = 0
	}
	if err := c.account(); err != nil {
		c.s.logOutput.log(c.s.cfg.Logger, "replies would exceed max-buffered-bytes; closed the client", "remote", c.addr, "reply_bytes", len(c.w.b)-c.sent)
		c.dead = true
	}
}

// unreadLimit is how many bytes of replies the client may leave unread
// before it is disconnected: MaxRequestBytes, as for a request, or
// unauthPendingBytes before it authenticates, so that a client that never
// authenticates and never reads cannot make the server hold more than
// that (it could otherwise pipeline PINGs for 64 MiB of NOAUTH replies).
func (c *connection) unreadLimit() int {
	if c.unauth() {
		return unauthPendingBytes
	}
	return c.s.cfg.MaxRequestBytes
}

// logDone is the log's flusher telling the connection that its replies'
// changes are acknowledged, or that the log failed (err).
func (c *connection) logDone(err error) { c.wake(wakeLog, err) }

func (c *connection) dropReplies() {
	c.w.b, c.sent = c.w.b[:0], 0
}

// keep reports whether a buffer of n bytes (requests, replies, or the
// parser's slices), emptied, stays with the connection for its next
// batch or command. A pipelining client's buffers are
// needed again at once: dropping them made each batch garbage, and the
// garbage collector lets garbage grow to the size of the live heap, the
// filters, before it collects: at 30 MB of filters, 15 MB more of peak
// RSS. A buffer is kept while it is at most keepBufferBytes (still
// counted in the budget) and the clients together hold under half of
// MaxBufferedBytes, so that kept buffers never crowd out a request.
func (c *connection) keep(n int) bool {
	return n <= keepBufferBytes && c.s.buffered.Load() < c.s.x.live.maxBufferedBytes.Load()/2
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
// commands held back while it waits, exceed what it may send.
func (c *connection) checkPending() error {
	pending := len(c.in) - c.r
	limit := c.s.cfg.MaxRequestBytes + maxInlineBytes
	if c.unauth() {
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
	if c.unauth() {
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
	in := make([]byte, 0, size)
	c.in = appendChunked(in, c.in)
	return nil
}

// reserve takes n bytes from the server's budget for this client; n < 0
// gives them back. It fails, taking nothing, when the budget is spent.
func (c *connection) reserve(n int64) bool {
	s := c.s
	unauth := c.unauth()
	if !unauth && c.unauthHeld > 0 { // authenticated since its last reservation
		s.unauthBuffered.Add(-c.unauthHeld)
		c.unauthHeld = 0
	}
	if n > 0 {
		if s.buffered.Add(n) > s.x.live.maxBufferedBytes.Load() {
			s.buffered.Add(-n)
			return false
		}
		if unauth {
			if s.unauthBuffered.Add(n) > s.x.live.maxUnauthBufferedBytes.Load() {
				s.unauthBuffered.Add(-n)
				s.buffered.Add(-n)
				return false
			}
			c.unauthHeld += n
		}
	}
	if n < 0 {
		s.buffered.Add(n)
		if back := min(-n, c.unauthHeld); back > 0 {
			s.unauthBuffered.Add(-back)
			c.unauthHeld -= back
		}
	}
	c.held += n
	c.sess.info.held.Store(c.held)
	return true
}

// account brings the client's reservation in line with what it holds
// now: its request buffer, its parser's slices, its MULTI queue and its
// reply buffer.
func (c *connection) account() error {
	parser := int64(c.p.memBytes())
	if parser > int64(c.s.cfg.MaxRequestBytes) {
		return errRequestTooLarge
	}
	want := int64(cap(c.in)+cap(c.w.b)+c.waitingBytes) + parser + c.sess.multiBytes() + c.transportBytes()
	// (A client that has authenticated since gives its share of the
	// unauthenticated total back even if it holds the same.)
	if (want != c.held || c.unauthHeld > 0 && c.sess.authed) && !c.reserve(want-c.held) {
		return errBuffersFull
	}
	return nil
}

func (c *connection) release() {
	c.s.buffered.Add(-c.held)
	c.s.unauthBuffered.Add(-c.unauthHeld)
	c.held, c.unauthHeld = 0, 0
	c.waiting, c.waitingBytes = nil, 0
	c.in, c.w.b = nil, nil
	c.sess.multi = nil
}

// run runs the complete commands at the start of b, until one makes the
// connection wait, and returns how many bytes they took. keep is false
// when the connection must close once the replies are sent: after QUIT
// or a protocol error. own says b is the connection's buffer (c.in),
// which stays as it is while a command runs off the loop, rather than
// the loop's, which the loop reads the next socket into.
func (c *connection) run(b []byte, own bool) (used int, keep bool) {
	s := c.s
	c.lock.Lock()
	c.sess.holdsShard = true
	c.sess.lastEnd = nanotime()
	defer func() {
		if c.block&blockBusy == 0 { // else a goroutine has the session
			c.sess.holdsShard = false
			c.sess.lastEnd = 0
			c.sess.lookup.endBatch()
		}
		c.lock.Unlock()
	}()
	if args := c.waiting; args != nil {
		c.waiting, c.waitingBytes = nil, 0
		c.dispatch(args, true, 0)
		if c.sess.quit {
			return 0, false
		}
		if c.block != 0 {
			return 0, true
		}
	}
	for used < len(b) {
		if len(c.w.b)-c.sent > flushBytes && c.outputFull() {
			return used, true
		}
		lim := parseLimits{authed: c.sess.authed, maxRequest: s.cfg.MaxRequestBytes}
		args, n, err := c.p.next(b[used:], lim)
		if err == nil {
			err = c.account()
		}
		if err != nil {
			c.refuse(err)
			return used, false
		}
		if n == 0 {
			// The rest of the command is still to come; if it is a
			// heavy one, it is read off the loop once this batch ends.
			c.readOff = c.heavyPending()
			return used, true
		}
		used += n
		if args == nil {
			continue
		}
		if c.mustWaitForAuth(args) {
			// Hold this command and the ones after it back.
			c.waiting, c.waitingBytes = copyArgs(args)
			return used, true
		}
		c.dispatch(args, own, n)
		if c.block&blockBusy == 0 && !c.keep(c.p.memBytes()) {
			c.p.shrink() // not while a goroutine reads the args
		}
		if c.sess.quit {
			return used, false
		}
		if c.block != 0 || c.dead {
			return used, true
		}
	}
	return used, true
}

// outputFull, called once more than flushBytes of replies wait, sends
// them and reports whether the connection must stop running commands: the log
// holds the replies back, or the socket did not take them, and the
// connection then waits for its writable edge (blockOutput). A loop
// never appends to a large reply that waits: the append would copy it
// whole, in one call the scheduler cannot stop (see appendChunked), and
// 60 MB of an ECHO left in the buffer took 270 ms to copy while every
// other client waited. The client's further commands wait in the buffer
// and then in the kernel, as Redis leaves them while its output buffer
// is full.
func (c *connection) outputFull() bool {
	c.send()
	if c.block == 0 && !c.dead && len(c.w.b)-c.sent > flushBytes {
		c.block |= blockOutput
		if outputBlockedHook != nil {
			outputBlockedHook()
		}
	}
	return c.block != 0 || c.dead
}

// drained ends a wait for the socket (blockOutput) once at most flushBytes
// of replies are left, and runs the commands that waited.
func (c *connection) drained() {
	if c.block&blockOutput != 0 && len(c.w.b)-c.sent <= flushBytes {
		c.block &^= blockOutput
		c.resume()
	}
}

// dispatch runs one command: here, or on a goroutine of its own while the
// connection waits (see the top of this file). owned says args stay valid
// while the connection waits: they are its own buffer's, not the loop's;
// size is the command's bytes on the wire (0: count them).
func (c *connection) dispatch(args [][]byte, owned bool, size int) {
	s, sess := c.s, &c.sess
	cmd, ok := lookup(args[0])
	switch {
	case !ok || !sess.authed || !cmd.arityOK(len(args)):
	case sess.aclCheckHeavy(cmd, args, size): // (queued or run, a command is checked)
		c.runOffLoop(cmd, args, owned)
		return
	case sess.multi != nil:
		if cmd.name == "exec" && !sess.multi.dirty {
			c.runOffLoop(cmd, args, owned)
			return
		}
	case cmd.isSlow(args) || heavy(args, size):
		c.runOffLoop(cmd, args, owned)
		return
	case s.iso.active.Load() > 0 && !s.loopMayRun(c.sess.db, cmd.name, args):
		c.runOffLoop(cmd, args, owned)
		return
	}
	replied := len(c.w.b)
	s.execCommand(sess, &c.w, args, cmd, ok)
	sess.releaseHeld()
	if sess.wouldBlock {
		sess.wouldBlock = false
		if len(c.w.b) != replied {
			// A command that gives up must do so before it answers.
			panic("server: a command gave up its loop after answering")
		}
		c.runOffLoop(cmd, args, owned)
	}
}

// heavy reports whether a command is too large to run on a loop.
func heavy(args [][]byte, size int) bool {
	if len(args) > maxLoopArgs {
		return true
	}
	if size == 0 {
		for _, a := range args {
			size += len(a)
		}
	}
	return size > maxLoopBytes
}

// runOffLoop runs a command on a goroutine of its own; the connection runs
// nothing more until it is done.
func (c *connection) runOffLoop(cmd command, args [][]byte, owned bool) {
	if !owned {
		args, _ = copyArgs(args) // the loop reuses its read buffer meanwhile
	}
	c.block |= blockBusy
	c.sess.holdsShard = false // the goroutine does not hold it
	c.sess.lastEnd = 0        // its command's time starts when it does
	c.sess.lookup.endBatch()
	go func() {
		c.runHere(cmd, args)
		c.wake(wakeBusy, nil)
	}()
}

// runHere runs a command off the loop, holding its claim (isolation.go)
// meanwhile; EXEC takes its own.
func (c *connection) runHere(cmd command, args [][]byte) {
	s := c.s
	if offLoopHook != nil {
		offLoopHook(cmd.name)
	}
	var cl claim
	if cmd.name != "exec" && !keySpecs[cmd.name].own {
		s.addClaim(&cl, c.sess.db, cmd.name, args)
		spec := keySpecs[cmd.name]
		// A creator claims the change mode even for a key it found:
		// a DEL could remove the key before it runs. (On a loop the
		// barrier covers that.) KEYS and SCAN take the list mode
		// for their reads of the index alone.
		cl.change = cl.change || spec.create
		cl.list = cl.list && cmd.name != "keys" && cmd.name != "scan"
	}
	s.iso.acquire(&cl)
	s.execCommand(&c.sess, &c.w, args, cmd, true)
	s.iso.release(&cl)
	c.sess.lookup.endBatch()
	s.flushCounts(&c.sess)
}

// heavyPending reports whether the command the parser is in the middle of
// is too large for a loop to read: more than maxLoopArgs arguments or
// maxLoopBytes bytes, as its header or its bytes so far say. (Nothing is
// allocated for what the header claims.)
func (c *connection) heavyPending() bool {
	p := &c.p
	return p.kind == '*' && (len(p.spans)+p.left > maxLoopArgs || p.bulk > maxLoopBytes || p.pos > maxLoopBytes)
}

// errCloseAfterReplies is a goroutine's word to the loop that the
// connection must close once its replies are sent.
var errCloseAfterReplies = errors.New("close after the replies")

// readRestHere takes bytes read off the loop for a heavy command: it
// buffers them and, once the command is whole, runs it here. It reports
// whether the goroutine is done, and what the loop must do then (see
// wakeBusy): the command ran, or the connection must close.
func (c *connection) readRestHere(data []byte) (bool, error) {
	err := c.buffer(data)
	if err == nil {
		err = c.checkPending()
	}
	var args [][]byte
	n := 0
	if err == nil {
		c.p.makeRoom()
		args, n, err = c.p.next(c.in[c.r:], parseLimits{authed: c.sess.authed, maxRequest: c.s.cfg.MaxRequestBytes})
	}
	if err == nil {
		err = c.account()
	}
	if err != nil {
		c.refuse(err)
		return true, errCloseAfterReplies
	}
	if n == 0 {
		return false, nil
	}
	c.r += n
	if args != nil {
		cmd, ok := lookup(args[0])
		if ok && c.sess.authed && c.sess.multi == nil && cmd.arityOK(len(args)) && cmd.name != "exec" {
			c.runHere(cmd, args)
		} else {
			c.s.execCommand(&c.sess, &c.w, args, cmd, ok) // queued, or an error
		}
	}
	if !c.keep(c.p.memBytes()) {
		c.p.shrink()
	}
	if c.sess.quit {
		return true, errCloseAfterReplies
	}
	return true, nil
}

// outputBlockedHook, set by tests, is called when a connection stops
// running commands until its socket takes its replies (blockOutput).
var outputBlockedHook func()

// offLoopHook, set by tests, is told the name of each command that
// starts to run off its loop.
var offLoopHook func(name string)

func copyArgs(args [][]byte) ([][]byte, int) {
	size := 0
	for _, a := range args {
		size += len(a)
	}
	buf := make([]byte, 0, size)
	out := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		out[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	return out, size
}

// mustWaitForAuth reports whether args check a password while the gate is
// shut; the connection then waits until the gate opens.
func (c *connection) mustWaitForAuth(args [][]byte) bool {
	if c.sess.multi != nil {
		return false
	}
	if !(len(args[0]) == 4 && eq(args[0], "auth")) && !(len(args) > 2 && len(args[0]) == 5 && eq(args[0], "hello")) {
		return false
	}
	wait := c.s.auth.delay()
	if wait <= 0 {
		return false
	}
	c.block |= blockPause
	time.AfterFunc(wait, func() { c.wake(wakePause, nil) })
	return true
}

func (c *connection) remote() string { return c.addr }

// execLock lets a transaction wait for the commands running on the
// loops: every client holds its shard while a batch of its commands runs
// on its loop, and a transaction, once its claim is registered, locks and
// unlocks each shard in turn (Server.barrier), so that every batch that
// began before has ended. A plain command pays for one uncontended lock
// per batch it arrives in, on a shard it seldom shares.
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

// withoutShard runs f with the session's shard released, for a
// transaction's barrier, which waits for every shard.
func (sess *session) withoutShard(f func()) {
	if sess.client == nil || !sess.holdsShard {
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

// copyChunk is the most appendChunked copies at once.
const copyChunk = 1 << 20

// appendChunked is append(dst, src...), copying at most copyChunk bytes at
// a time and yielding the processor between chunks. A copy is one call
// that the Go scheduler cannot stop, and a loop of copies is no better: a
// preemption signal lands in the copy, where it is ignored. A garbage
// collection cannot end its mark phase until it has stopped every
// goroutine for a moment, and with GOMAXPROCS 2 its dedicated mark
// worker holds one processor meanwhile: a goroutine copying a 60 MB
// LOADCHUNK into fresh memory held the other for 258 ms, and the event
// loop had none (a runtime trace of TestAuthenticatedAttacks beside CPU
// hogs).
func appendChunked[S ~string | ~[]byte](dst []byte, src S) []byte {
	dst = growChunked(dst, len(src))
	for len(src) > copyChunk {
		dst = append(dst, src[:copyChunk]...)
		src = src[copyChunk:]
		runtime.Gosched()
	}
	return append(dst, src...)
}

// growChunked is slices.Grow(dst, n) without a call the scheduler cannot
// stop (see appendChunked): slices.Grow clears the new room in one call,
// and append copies the old bytes in another. make clears in steps the
// scheduler may stop between, or not at all when the memory is fresh from
// the system, and the old bytes are copied copyChunk at a time. A large
// buffer grows by a quarter, as append grows it.
func growChunked(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	need := len(dst) + n
	if need <= copyChunk {
		return slices.Grow(dst, n)
	}
	grown := make([]byte, len(dst), max(need, cap(dst)+cap(dst)/4))
	for i := 0; i < len(dst); i += copyChunk {
		copy(grown[i:], dst[i:min(len(dst), i+copyChunk)])
		runtime.Gosched()
	}
	return grown
}

// chunkedWriter writes to w at most copyChunk bytes at a time (see
// appendChunked): a filter's WriteTo hands its whole bit array to one
// Write.
type chunkedWriter struct{ w io.Writer }

func (c chunkedWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		m, err := c.w.Write(b[:min(len(b), copyChunk)])
		n += m
		if err != nil {
			return n, err
		}
		b = b[m:]
	}
	return n, nil
}

// makeRoom grows the parser's slices, before a read's worth of a heavy
// command is parsed, so that append never has to: append copies a slice
// in one call the scheduler cannot stop (see appendChunked), and the
// slices of a million arguments are 40 MB. They grow by a quarter, as
// append grows large slices, from what was parsed, and never past the
// arguments the command has left: a read of loopReadBytes holds at most
// loopReadBytes/6 of them. (Doubling took the slices of a command of a
// million arguments past max-request-bytes.)
func (p *requestParser) makeRoom() {
	const perRead = loopReadBytes/6 + 1
	need := min(perRead, p.left)
	if p.kind != '*' || cap(p.spans)-len(p.spans) >= need {
		return
	}
	size := min(max(cap(p.spans)+cap(p.spans)/4, len(p.spans)+perRead), len(p.spans)+p.left)
	spans := make([]span, 0, size)
	for rest := p.spans; len(rest) > 0; {
		n := min(len(rest), copyChunk/16)
		spans = append(spans, rest[:n]...)
		rest = rest[n:]
		runtime.Gosched()
	}
	p.spans = spans
	if cap(p.args) < size {
		p.args = make([][]byte, 0, size) // argsOf fills it anew
	}
}
