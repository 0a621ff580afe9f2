package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// waitFor polls cond, which watches the server's state, until it holds:
// the event a test synchronises on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}

func waitingOnLog(l *appendLog) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiters)
}

// holdLogWrites makes the log's writes wait until release is closed (then
// they return err); held gets a token when a write is held.
func holdLogWrites(t *testing.T, err error) (held <-chan struct{}, release chan struct{}) {
	h, r := make(chan struct{}, 1), make(chan struct{})
	hold := func() error {
		select {
		case h <- struct{}{}:
		default:
		}
		<-r
		return err
	}
	logFault.Store(&hold)
	t.Cleanup(func() { logFault.Store(nil) })
	return h, r
}

// noReplyYet fails if c has a byte to read: a reply left early. (A correct
// server never sends one, so the short wait can only miss a bug, never
// fail a correct server.)
func noReplyYet(t *testing.T, c *rawConn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if b, err := c.r.ReadByte(); err == nil {
		t.Fatalf("%s: a reply (%q...) left before its change was fsynced", what, b)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
}

// Under appendfsync always, the connections whose changes wait for the
// log share its fsyncs (group commit) and the event loop serves the other
// clients meanwhile; each connection's replies leave only once its
// changes are fsynced, all of them in order.
func TestAlwaysGroupCommit(t *testing.T) {
	s, addr := start(t, Config{DataDir: t.TempDir(), AppendFsync: "always", SaveInterval: -1, EventLoops: 1})
	l := s.store.log
	held, release := holdLogWrites(t, nil)
	first := dial(t, addr)
	first.Write([]byte("BF.ADD k first\r\n"))
	<-held // the flusher is writing the first record
	const n = 8
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dial(t, addr)
		fmt.Fprintf(conns[i], "BF.ADD k a%d\r\nBF.EXISTS k a%d\r\nPING\r\nBF.ADD k b%d\r\n", i, i, i)
	}
	waitFor(t, "every connection to wait for the log", func() bool { return waitingOnLog(l) == n+1 })
	syncs := l.syncs.Load()
	expect(t, dial(t, addr), "BF.EXISTS other x\r\nPING\r\n", ":0\r\n+PONG\r\n")
	noReplyYet(t, first, "first")
	for i, c := range conns {
		noReplyYet(t, c, fmt.Sprint("connection ", i))
	}
	close(release)
	expect(t, first, "", ":1\r\n")
	for _, c := range conns {
		expect(t, c, "", ":1\r\n:1\r\n+PONG\r\n:1\r\n")
	}
	// The held write's fsync, then one for the 16 records appended
	// meanwhile (and perhaps the flusher's tick): not one per connection.
	if got := l.syncs.Load() - syncs; got > 3 {
		t.Fatalf("%d fsyncs for %d connections waiting together", got, n)
	}
}

// A log failure closes the connections waiting for it without their
// replies, and the others go on.
func TestAlwaysLogFailureClosesTheWaiters(t *testing.T) {
	s, addr := start(t, Config{DataDir: t.TempDir(), AppendFsync: "always", SaveInterval: -1, EventLoops: 1})
	held, release := holdLogWrites(t, syscall.ENOSPC)
	conns := make([]*rawConn, 4)
	for i := range conns {
		conns[i] = dial(t, addr)
		fmt.Fprintf(conns[i], "PING\r\nBF.ADD k a%d\r\n", i)
	}
	<-held
	waitFor(t, "the connections to wait for the log", func() bool { return waitingOnLog(s.store.log) == len(conns) })
	expect(t, dial(t, addr), "PING\r\n", "+PONG\r\n")
	close(release)
	for i, c := range conns {
		if got, err := io.ReadAll(c.r); err != nil || len(got) != 0 {
			t.Fatalf("connection %d: read %q (%v) after the log failed, want nothing and EOF", i, got, err)
		}
	}
	other := dial(t, addr)
	expect(t, other, "PING\r\n", "+PONG\r\n")
	expect(t, other, "BF.ADD k more\r\n", "-MISCONF")
}

// Replies a client leaves unread take from the budget that requests take
// from: a client whose replies would exceed it is disconnected, well
// before its own limit, and the others go on.
func TestRepliesCountInTheBudget(t *testing.T) {
	const request = 1 << 20
	const budget = request + 256<<10
	var logged syncBuffer // collects the test server's log
	s, addr := start(t, Config{MaxRequestBytes: request, MaxBufferedBytes: budget, EventLoops: 1,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	// A holds most of the budget with an unfinished request.
	sent := request * 7 / 8
	a := dial(t, addr)
	fmt.Fprintf(a, "*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$%d\r\n%s", request-100, strings.Repeat("x", sent))
	waitFor(t, "a's request to be buffered", func() bool { return s.buffered.Load() >= int64(sent) })
	// B sends ECHOs of 300 KB without reading their replies: one request
	// and its reply are more than the budget has left.
	b := dial(t, addr)
	echo := []byte(resp("ECHO", strings.Repeat("e", 300<<10)))
	var err error
	for i := 0; i < 3_000 && err == nil; i++ { // up to 900 MB of replies
		_, err = b.Write(echo)
		if got := s.buffered.Load(); got > budget {
			t.Fatalf("%d bytes buffered, budget %d", got, budget)
		}
	}
	if err == nil {
		t.Fatal("the server kept a client whose buffers exceed the budget")
	}
	// Which of B's buffers meets the budget first depends on how much of
	// its requests one read takes; either way it is the budget, not the
	// unread-replies limit (MaxRequestBytes, far above what was left).
	waitFor(t, "the log line", func() bool { return strings.Contains(logged.String(), "would exceed max-buffered-bytes") })
	if log := logged.String(); strings.Contains(log, "does not read its replies") {
		t.Fatalf("b was closed by the unread-replies limit, not the budget:\n%s", log)
	}
	expect(t, a, strings.Repeat("x", request-100-sent)+"\r\n", ":1\r\n")
	expect(t, dial(t, addr), "PING\r\n", "+PONG\r\n")
}

// A client that pipelines without reading its replies is pushed back:
// once more than flushBytes of its replies wait for the socket, its loop
// runs none of its commands, and reads none of its bytes, until the
// socket takes them (blockOutput). It holds little meanwhile, where the
// loop used to run on and hold its replies up to the unread-replies
// limit; other clients are served; and once it reads, every reply comes,
// in order. (The loop must not append to a large waiting reply: that
// copies it whole, in one call the scheduler cannot stop.)
func TestUnreadRepliesPushBack(t *testing.T) {
	restoreAfterShutdown(t, &outputBlockedHook)
	blocked := make(chan struct{}, 1)
	outputBlockedHook = func() {
		select {
		case blocked <- struct{}{}:
		default:
		}
	}
	s, addr := start(t, Config{EventLoops: 1})
	b := dial(t, addr)
	const n = 2_000 // 20 MB of replies, far more than the sockets hold
	wrote := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < n && err == nil; i++ {
			_, err = b.Write([]byte(resp("ECHO", fmt.Sprintf("%05d", i)+strings.Repeat("e", 10<<10))))
		}
		wrote <- err
	}()
	select {
	case <-blocked:
	case err := <-wrote:
		t.Fatalf("the loop never waited for the socket: the client wrote all its commands (%v)", err)
	}
	// Its replies waiting, a request read and the loop's spare buffers:
	// never the megabytes of replies that wait in no buffer.
	if held := s.buffered.Load(); held > 1<<20 {
		t.Fatalf("the server holds %d bytes for a client that does not read", held)
	}
	expect(t, dial(t, addr), "PING\r\n", "+PONG\r\n")
	for i := range n {
		if got, want := readBulk(t, b), fmt.Sprintf("%05d", i)+strings.Repeat("e", 10<<10); got != want {
			t.Fatalf("reply %d: %.10q..., want %.10q...", i, got, want)
		}
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}

// A client refused while it is still sending reads the error and then
// an end of file, not a reset: the server shuts its writing side and
// keeps the socket until the client closes (shouldLinger). Closed at
// once, with the client's bytes unread, the socket answered them with a
// reset, and the client's kernel could drop the error before it was
// read. The server reads and drops up to lingerBytes meanwhile, so that
// a client that closes after a few more bytes is closed at once; past
// that, lingerTime closes it (raised here, so that a slow reader cannot
// make the test pass or fail by timing).
func TestRefusedClientReadsItsError(t *testing.T) {
	restoreAfterShutdown(t, &lingerTime)
	lingerTime = time.Minute
	s, addr := start(t, Config{Password: "pw", EventLoops: 1})
	const refused = "-ERR Protocol error: unauthenticated bulk length\r\n"
	for _, c := range []struct {
		req, reply string
		closes     bool // when the client does: the server has read all it sent
	}{
		{"*2\r\n$4\r\nPING\r\n$1099511627776\r\n" + strings.Repeat("x", 10<<10), refused, true},
		{"QUIT\r\n" + strings.Repeat("PING\r\n", 1000), "+OK\r\n", true},
		{"*2\r\n$4\r\nPING\r\n$1099511627776\r\n" + strings.Repeat("x", 4<<20), refused, false},
		{"QUIT\r\n" + strings.Repeat("PING\r\n", 500_000), "+OK\r\n", false},
	} {
		before := s.clients.Load()
		conn := dial(t, addr)
		go conn.Write([]byte(c.req)) // refused before the server has read it all
		got, err := io.ReadAll(conn.r)
		if err != nil || string(got) != c.reply {
			t.Fatalf("after %.20q... of %d bytes: read %q, then %v; want %q and an end of file", c.req, len(c.req), got, err, c.reply)
		}
		conn.Close()
		if c.closes {
			waitFor(t, "the server to close a connection its client closed", func() bool { return s.clients.Load() == before })
		}
	}
}

// A save runs off the event loop: other clients are served while it
// writes, and its own client gets its reply when it is done.
func TestSaveRunsOffTheLoop(t *testing.T) {
	restoreAfterShutdown(t, &saveHook)
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	saveHook = func(step string) {
		if step == "rotated" {
			once.Do(func() { close(reached) })
			<-release
		}
	}
	_, addr := start(t, Config{DataDir: t.TempDir(), SaveInterval: -1, EventLoops: 1})
	saver := dial(t, addr)
	saver.Write([]byte("BF.ADD k x\r\nSAVE\r\nBF.EXISTS k x\r\n"))
	<-reached
	other := dial(t, addr)
	expect(t, other, "BF.ADD k y\r\nPING\r\nBF.EXISTS k x\r\n", ":1\r\n+PONG\r\n:1\r\n")
	noReplyYet(t, saver, "the saving client")
	close(release)
	expect(t, saver, "", ":1\r\n+OK\r\n:1\r\n")
}

// EXEC excludes the slow commands that run off the loops: a KEYS never
// sees a key that lives only inside transactions.
func TestExecExcludesSlowCommands(t *testing.T) {
	_, addr := start(t, Config{EventLoops: 2})
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dialNet(addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			tx := "MULTI\r\nBF.ADD t x\r\nDEL t\r\nEXEC\r\n"
			want := "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:1\r\n:1\r\n"
			if i%2 == 1 {
				tx, want = "KEYS *\r\nSCAN 0\r\n", "*0\r\n*2\r\n$1\r\n0\r\n*0\r\n"
			}
			for range rounds {
				c.Write([]byte(tx))
				got := make([]byte, len(want))
				if _, err := io.ReadFull(c.r, got); err != nil || string(got) != want {
					errs <- fmt.Errorf("%q answered %q (%v), want %q", tx, got, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// The protocol over a goroutine per connection, the transport where there
// is no epoll: a selection of the tests above and elsewhere, run over it.
func TestGoroutinePerConnection(t *testing.T) {
	defer func(old bool) { servePerConnection = old }(servePerConnection)
	servePerConnection = true
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"BloomCommands", TestBloomCommandsWithGoRedis},
		{"GenericCommands", TestGenericCommands},
		{"Auth", TestAuth},
		{"AuthGate", TestAuthGate},
		{"MultiExecTexts", TestMultiExecTexts},
		{"ExecIsNotInterleaved", TestExecIsNotInterleaved},
		{"ExecExcludesSlowCommands", TestExecExcludesSlowCommands},
		{"BufferBudget", TestBufferBudget},
		{"AlwaysGroupCommit", TestAlwaysGroupCommit},
		{"AlwaysLogFailure", TestAlwaysLogFailureClosesTheWaiters},
		{"SaveRunsOffTheLoop", TestSaveRunsOffTheLoop},
		{"LogWriteFailure", TestLogWriteFailure},
		{"EverysecStall", TestEverysecWritersWaitForAStalledDisk},
		{"Garbage", TestGarbageOverSockets},
		{"RefusedClientReadsItsError", TestRefusedClientReadsItsError},
	} {
		t.Run(tc.name, tc.f)
	}
}

// dialNet is dial for goroutines other than the test's.
func dialNet(addr string) (*rawConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(60 * time.Second))
	return &rawConn{c, bufio.NewReader(c)}, nil
}

// A client pipelining large commands makes no garbage on the server once
// its buffers have grown: the connection keeps its request buffer and its
// parser's slices between batches (connection.keep). Garbage per batch
// is what let the heap grow to twice the filters before a collection.
func TestPipelinedBatchesMakeNoGarbage(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const perBatch, items = 16, 1000
	_, addr := start(t, Config{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var req []byte
	req = fmt.Appendf(req, "*4\r\n$10\r\nBF.RESERVE\r\n$1\r\nm\r\n$4\r\n0.01\r\n$7\r\n1000000\r\n")
	reserved := len(req)
	for q := range perBatch {
		req = fmt.Appendf(req, "*%d\r\n$7\r\nBF.MADD\r\n$1\r\nm\r\n", items+2)
		for i := range items {
			item := fmt.Sprintf("item:%d:%d", q, i)
			req = fmt.Appendf(req, "$%d\r\n%s\r\n", len(item), item)
		}
	}
	reply := make([]byte, perBatch*(len("*1000\r\n")+items*len(":1\r\n")))
	batch := func() {
		if _, err := c.Write(req[reserved:]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, reply); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Write(req[:reserved]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, reply[:len("+OK\r\n")]); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		batch() // warm: buffers grown once
	}
	const batches = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range batches {
		batch()
	}
	runtime.ReadMemStats(&after)
	// The server's timers and the runtime allocate a little on their own;
	// dropping the buffers made several allocations per command.
	if n := after.Mallocs - before.Mallocs; n >= batches {
		t.Fatalf("%d allocations in %d batches of %d BF.MADDs of %d items", n, batches, perBatch, items)
	}
	if !bytes.HasPrefix(reply, []byte("*1000\r\n:")) {
		t.Fatalf("reply %.40q", reply)
	}
}
