//go:build linux

package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The event loops, on epoll, written here rather than taken from
// github.com/panjf2000/gnet/v2, because they cost less CPU per command
// where each command is a read and a write of its own, and as little
// pipelined (docs/benchmarks.md, "The event loop against gnet"). This
// loop parses straight from its read buffer and copies only the tail of
// an unfinished command; it reads and writes with raw system calls.
//
// Group commit under appendfsync always does not hold the loop: a
// connection whose replies wait for an fsync is no longer served
// (blockLog) while the loop serves every other client, and the log's
// flusher wakes it through the loop's queue (TestAlwaysGroupCommit).
//
// Each loop is one goroutine waiting in epoll_wait for any of its
// connections, as Redis's one loop does. A socket is registered once,
// edge-triggered, for input and output, so that no epoll_ctl is needed
// while it lives: the loop remembers what the edges said (readable,
// writable) and reads until a read comes back short (a stream socket then
// holds nothing more) or a connection stops running commands. A read
// that fills the buffer puts the connection on the loop's ready list, to
// be read again after the others, so that one client cannot hold the
// loop. Replies go out with one write after each read's commands; what
// the socket does not take waits for its next writable edge.
//
// Other goroutines (the log's flusher, a slow command, a timer, the
// accept loop, Shutdown) hand the loop work through a queue and wake it
// with an eventfd.

// transport is the part of a connection its event loop keeps.
type transport struct {
	fd   int
	loop *eventLoop
	// canRead and canWrite are what the edges said: the socket may hold
	// bytes to read, or room to write.
	canRead, canWrite bool
	// hup: the peer closed or the socket failed; read until EOF or the
	// error, whatever the length of the reads.
	hup bool
	// ready: on the loop's ready list.
	ready bool
	// lingering: the server has sent its last reply and shut the
	// socket's writing side (eventLoop.linger).
	lingering bool
	discarded int // bytes read and dropped while lingering
	// goroutine is the transport of a connection served by a goroutine of
	// its own (conn_goroutine.go), for tests of that path.
	goroutine *goroutineTransport
}

// task is work handed to a loop by another goroutine.
type task struct {
	c    *connection
	kind wakeKind
	err  error
}

type eventLoop struct {
	s      *Server
	epfd   int
	efd    int // eventfd: other goroutines' wake-ups
	buf    []byte
	conns  []*connection // by file descriptor
	ready  []*connection // to read again, after the others
	spareR []*connection
	events []unix.EpollEvent
	spare  []task

	mu        sync.Mutex
	tasks     []task
	stopped   bool
	signalled atomic.Bool
	done      chan struct{}
}

func newEventLoop(s *Server) (*eventLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}); err != nil {
		unix.Close(efd)
		unix.Close(epfd)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	return &eventLoop{s: s, epfd: epfd, efd: efd, buf: make([]byte, loopReadBytes),
		events: make([]unix.EpollEvent, 256), done: make(chan struct{})}, nil
}

// post hands t to the loop and wakes it. It reports false if the loop has
// stopped.
func (l *eventLoop) post(t task) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	l.tasks = append(l.tasks, t)
	// The write is under the lock, so that the loop cannot have closed
	// the eventfd (and the number gone to another file) meanwhile.
	if l.signalled.CompareAndSwap(false, true) {
		one := [8]byte{1}
		unix.Write(l.efd, one[:])
	}
	return true
}

// yieldEvery is how often a loop yields to the Go scheduler. A goroutine
// that the scheduler has not switched for 10 ms is taken for a runaway by
// the runtime's monitor (sysmon), which then preempts it with a signal,
// takes its P away while it waits in epoll_wait (handing it to another
// thread, and back), and polls every 20 µs for a while: measured, ~0.04
// extra system calls and context switches per command. A loop spends its
// life in system calls and never gives the scheduler that chance, so it
// yields on its own, at a cost of some microseconds 250 times a second.
const yieldEvery = 4 * time.Millisecond

// run serves the loop's connections until a wakeStop task.
func (l *eventLoop) run() {
	defer close(l.done)
	lastYield := time.Now()
	for {
		if now := time.Now(); now.Sub(lastYield) >= yieldEvery {
			runtime.Gosched()
			lastYield = now
		}
		timeout := -1
		if len(l.ready) > 0 {
			timeout = 0
		}
		n, err := unix.EpollWait(l.epfd, l.events, timeout)
		if err != nil && err != unix.EINTR {
			l.s.cfg.Logger.Error("event loop: epoll_wait failed; stopping", "err", err)
			l.stop()
			return
		}
		for i := 0; i < n; i++ {
			ev := &l.events[i]
			fd := int(ev.Fd)
			if fd == l.efd {
				if l.chores() {
					return
				}
				continue
			}
			if fd >= len(l.conns) || l.conns[fd] == nil || ev.Pad != int32(l.conns[fd].sess.id) {
				continue // closed since
			}
			c := l.conns[fd]
			if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.canRead = true
			}
			if ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.hup = true
			}
			if ev.Events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.canWrite = true
			}
			l.serve(c, 0, nil)
		}
		if n == len(l.events) && len(l.events) < 4096 {
			l.events = make([]unix.EpollEvent, 2*len(l.events))
		}
		if len(l.ready) > 0 {
			ready := l.ready
			l.ready = l.spareR[:0]
			for _, c := range ready {
				c.ready = false
				l.serve(c, 0, nil)
			}
			clear(ready)
			l.spareR = ready[:0]
		}
	}
}

// serve does what a connection's edges and state allow: sends waiting
// replies if the socket has room, reads and runs commands if it has bytes
// and the connection may run them, and closes it when it is finished.
// A wake-up (kind, err), if kind is not 0, is taken first.
func (l *eventLoop) serve(c *connection, kind wakeKind, err error) {
	if c.closed {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			l.s.logPanic.log(l.s.cfg.Logger, "connection panicked; closed it", "remote", c.addr, "panic", r, "stack", string(debug.Stack()))
			l.close(c)
		}
	}()
	if c.lingering {
		l.discard(c)
		return
	}
	if kind != 0 {
		c.woken(kind, err)
	}
	if c.canWrite && c.block&blockBusy == 0 && c.sent < len(c.w.b) {
		c.send()
	}
	c.drained()
	if c.canRead && c.runnable() {
		n, err := rawRead(c.fd, l.buf)
		switch {
		case n > 0:
			if n < len(l.buf) && !c.hup {
				c.canRead = false // a short read emptied the socket
			} else {
				l.again(c)
			}
			c.input(l.buf[:n])
		case n == 0 && err == nil:
			c.dead = true // the peer closed
		case err == unix.EAGAIN:
			c.canRead = false
		case err == unix.EINTR:
			l.again(c)
		default:
			c.dead = true
		}
	}
	if c.finished() {
		if c.shouldLinger() && !c.hup {
			l.linger(c)
		} else {
			l.close(c)
		}
	}
}

// linger shuts the writing side of a connection the server ends, and
// closes it once the client closes its own, or after lingerTime (see
// connection.shouldLinger). Its buffers go back to the budget at once.
func (l *eventLoop) linger(c *connection) {
	c.lingering = true
	c.discarded = 0
	c.release()
	if unix.Shutdown(c.fd, unix.SHUT_WR) != nil {
		l.close(c)
		return
	}
	time.AfterFunc(lingerTime, func() { l.post(task{c: c, kind: wakeClose}) })
	l.discard(c)
}

// discard reads and drops what a lingering connection's client sends, up
// to lingerBytes, so that its end of file can arrive: a client that
// closes with bytes the server never read cannot send its FIN past them.
// It closes the connection at the end of file; past lingerBytes it reads
// no more, and the timer closes it.
func (l *eventLoop) discard(c *connection) {
	for c.canRead && c.discarded < lingerBytes {
		n, err := rawRead(c.fd, l.buf[:min(len(l.buf), lingerBytes-c.discarded)])
		switch {
		case n > 0:
			c.discarded += n
		case err == unix.EAGAIN:
			c.canRead = false
		case err == unix.EINTR:
		default: // the end of file, or the socket failed
			l.close(c)
			return
		}
	}
}

// again puts c on the ready list, to be served after the others.
func (l *eventLoop) again(c *connection) {
	if !c.ready {
		c.ready = true
		l.ready = append(l.ready, c)
	}
}

// write is the connection's write to its socket: it returns how much the
// socket took, which is less than len(b) when it is full, or when b is
// more than loopWriteBytes: one write(2) to a loopback socket whose
// reader keeps up took 52 MB in 93 ms, while every other client of the
// loop waited. The rest then goes after the other clients are served
// (the ready list), as a read that fills the buffer does.
func (c *connection) write(b []byte) (int, error) {
	if c.goroutine != nil {
		return c.goroutine.write(b)
	}
	if !c.canWrite {
		return 0, nil
	}
	capped := len(b) > loopWriteBytes
	if capped {
		b = b[:loopWriteBytes]
	}
	n, err := rawWrite(c.fd, b)
	switch {
	case err == unix.EAGAIN:
		c.canWrite = false
		return 0, nil
	case err == unix.EINTR:
		return 0, nil
	case err != nil:
		return 0, err
	}
	if n < len(b) {
		c.canWrite = false
	} else if capped {
		c.loop.again(c) // the rest after the other clients
	}
	return n, nil
}

// wake hands a wake-up to the connection's loop, from another goroutine.
func (c *connection) wake(kind wakeKind, err error) {
	if c.goroutine != nil {
		c.goroutine.wake(task{c, kind, err})
		return
	}
	c.loop.post(task{c, kind, err})
}

// chores takes the tasks other goroutines posted; it reports true when
// the loop must stop.
func (l *eventLoop) chores() bool {
	var counter [8]byte
	unix.Read(l.efd, counter[:])
	l.signalled.Store(false)
	l.mu.Lock()
	tasks := l.tasks
	l.tasks = l.spare[:0]
	l.mu.Unlock()
	stop := false
	for _, t := range tasks {
		c := t.c
		switch t.kind {
		case wakeOpen:
			l.open(c)
		case wakeClose:
			if c == nil {
				l.closeAll()
			} else if !c.closed {
				c.dead = true
				l.close(c)
			}
		case wakeStop:
			stop = true
		default:
			if c.closed {
				continue
			}
			l.serve(c, t.kind, t.err)
		}
	}
	clear(tasks)
	l.spare = tasks[:0]
	if stop {
		l.stop()
	}
	return stop
}

// open starts serving a connection the accept loop handed over.
func (l *eventLoop) open(c *connection) {
	if l.s.closing.Load() {
		// Shutdown began after the hand-over: it closes no connection it
		// does not know of.
		c.closed = true
		unix.Close(c.fd)
		l.s.closed1(c)
		return
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(c.fd), Pad: int32(c.sess.id)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
		l.s.logAccept.log(l.s.cfg.Logger, "accept failed: registering the connection with epoll", "err", err)
		c.closed = true
		unix.Close(c.fd)
		l.s.closed1(c)
		return
	}
	for c.fd >= len(l.conns) {
		l.conns = append(l.conns, make([]*connection, max(64, len(l.conns)))...)
	}
	l.conns[c.fd] = c
}

// close closes a connection, unless a slow command of it still runs: then
// when it ends. A goroutine reading a heavy command (readOffLoop) is
// woken by the shutdown of the socket's reading side, and ends.
func (l *eventLoop) close(c *connection) {
	if c.closed {
		return
	}
	c.dead = true
	if c.block&blockBusy != 0 {
		unix.Shutdown(c.fd, unix.SHUT_RD)
		return
	}
	c.closed = true
	l.conns[c.fd] = nil
	unix.Close(c.fd) // which also takes it out of the epoll set
	c.release()
	l.s.closed1(c)
}

func (l *eventLoop) closeAll() {
	for _, c := range l.conns {
		if c != nil {
			l.close(c)
		}
	}
}

// stop closes the loop's files; posts after it are dropped.
func (l *eventLoop) stop() {
	l.closeAll()
	l.mu.Lock()
	l.stopped = true
	unix.Close(l.efd)
	unix.Close(l.epfd)
	l.mu.Unlock()
}

// loops is the set of event loops serving the connections.
type loops struct {
	s    *Server
	all  []*eventLoop
	next atomic.Uint64
	// perConn serves each connection on a goroutine instead (tests).
	perConn bool
	conns   goroutineConns
}

func startLoops(s *Server, n int, perConn bool) (*loops, error) {
	ls := &loops{s: s, perConn: perConn}
	if perConn {
		return ls, nil
	}
	for range n {
		l, err := newEventLoop(s)
		if err != nil {
			for _, l := range ls.all {
				l.post(task{kind: wakeStop})
			}
			return nil, err
		}
		ls.all = append(ls.all, l)
		go l.run()
	}
	return ls, nil
}

// enroll hands an accepted connection to a loop. The loop takes a
// duplicate of the socket, and conn is closed.
func (ls *loops) enroll(conn net.Conn, c *connection) error {
	if ls.perConn {
		ls.conns.serve(ls.s, conn, c)
		return nil
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		conn.Close()
		return errors.New("not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		conn.Close()
		return err
	}
	fd := -1
	cerr := raw.Control(func(s uintptr) {
		fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	})
	conn.Close()
	if cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	c.fd = fd
	l := ls.all[ls.next.Add(1)%uint64(len(ls.all))]
	c.loop = l
	c.canWrite = true
	if !l.post(task{c: c, kind: wakeOpen}) {
		unix.Close(fd)
		return errors.New("the event loop has stopped")
	}
	return nil
}

// closeAll closes every connection (Shutdown): the loops', and those
// served by goroutines (TLS, tests).
func (ls *loops) closeAll() {
	ls.conns.closeAll()
	for _, l := range ls.all {
		l.post(task{kind: wakeClose})
	}
}

// stop stops the loops and waits for them.
func (ls *loops) stop() {
	for _, l := range ls.all {
		if l.post(task{kind: wakeStop}) {
			<-l.done
		}
	}
}

// readOffLoop reads the rest of a heavy command on a goroutine of its own,
// and runs it there (connection.readRestHere); the loop serves the other
// clients meanwhile and leaves the socket to the goroutine. The goroutine
// waits for bytes in poll(2); Shutdown wakes it by shutting the socket's
// reading side (eventLoop.close).
func (c *connection) readOffLoop() {
	c.block |= blockBusy
	c.sess.holdsShard = false
	go func() {
		c.wake(wakeBusy, c.readRest())
	}()
}

func (c *connection) readRest() error {
	buf := make([]byte, loopReadBytes)
	for {
		n, err := rawRead(c.fd, buf)
		switch {
		case n > 0:
			if done, err := c.readRestHere(buf[:n]); done {
				return err
			}
		case n == 0 && err == nil:
			return io.EOF // the peer closed
		case err == unix.EAGAIN:
			fds := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN | unix.POLLRDHUP}}
			if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
				return err
			}
		case err == unix.EINTR:
		default:
			return err
		}
	}
}
