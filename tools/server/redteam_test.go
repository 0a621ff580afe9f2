package server

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ohbloom/ohbloom"
)

// Attacks found by trying the server as a hostile client would; each test
// failed before its fix.

// A MULTI queue is counted whole against MaxRequestBytes: the slices that
// say where each queued argument lies take 16 bytes an argument, while an
// empty argument takes 6 on the wire, so a queue of commands with many
// empty arguments must hit the limit by what it holds, not only by its
// bytes. (Uncounted, one client queued 40 commands of 500,000 empty
// arguments and held 570 MB under the default 64 MiB limit.)
func TestMultiQueueCountsEveryArgument(t *testing.T) {
	const limit = 64 << 10
	_, addr := start(t, Config{MaxRequestBytes: limit})
	c := dial(t, addr)
	expect(t, c, "MULTI\r\n", "+OK\r\n")
	// Each command: 1000 empty arguments, 6 KB on the wire, 16 KB of
	// spans queued; well within the limit alone.
	const n = 1000
	cmd := "*" + itoa(n+2) + "\r\n$7\r\nBF.MADD\r\n$1\r\nk\r\n" + strings.Repeat("$0\r\n\r\n", n)
	queued := 0
	for range 2 * limit / (16 * n) {
		if _, err := c.Write([]byte(cmd)); err != nil {
			t.Fatal(err)
		}
		line, err := c.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "+QUEUED\r\n" {
			queued++
			continue
		}
		if line != "-"+string(errQueuedTooLarge)+"\r\n" {
			t.Fatalf("queued command %d: got %q", queued+1, line)
		}
		if held := int64(queued) * 16 * n; held > limit {
			t.Fatalf("the queue was refused only after holding %d bytes of argument slices, over the limit of %d", held, limit)
		}
		expect(t, c, "EXEC\r\n", "-"+errExecAbort+"\r\n")
		return
	}
	t.Fatalf("%d commands of %d empty arguments each (%d bytes of slices) queued under a limit of %d", queued, n, queued*16*n, limit)
}

// SCAN returns every key present for the whole scan, whatever is deleted
// meanwhile, as Redis promises: a cursor that was a position in the sorted
// keys skipped one key for each key before it deleted during the scan.
func TestScanReturnsKeysPresentThroughout(t *testing.T) {
	_, addr := start(t, Config{})
	c := client(t, addr)
	ctx := context.Background()
	const n = 200
	for i := range n {
		if err := c.Do(ctx, "BF.ADD", fmt.Sprintf("k%03d", i), "x").Err(); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	deleted := map[string]bool{}
	cursor := uint64(0)
	for calls := 0; ; calls++ {
		if calls > 10*n {
			t.Fatal("SCAN does not end")
		}
		keys, next, err := c.Scan(ctx, cursor, "*", 10).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k] = true
		}
		// Delete what this call returned, and as many keys never seen
		// yet (which the scan then need not return).
		del := slices.Clone(keys)
		for i := range n {
			if k := fmt.Sprintf("k%03d", i); !seen[k] && !deleted[k] && len(del) < 2*len(keys) {
				del = append(del, k)
			}
		}
		for _, k := range del {
			deleted[k] = true
		}
		if len(del) > 0 {
			if err := c.Del(ctx, del...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	for i := range n {
		if k := fmt.Sprintf("k%03d", i); !seen[k] && !deleted[k] {
			t.Errorf("key %s, present throughout, was not returned", k)
		}
	}
}

// A SCAN call costs its COUNT, not the keyspace: it allocated a sorted copy
// of every name (300,000 keys: 280 ms a call, so a whole scan took hours),
// and INFO did the same. Measured in bytes allocated, not time.
func TestScanAndInfoDoNotCopyTheKeyspace(t *testing.T) {
	s, _ := start(t, Config{})
	const n = 20000
	for i := range n {
		if _, _, err := s.store.getOrCreate(0, fmt.Sprintf("key:%d", i), func() (*entry, error) {
			return &entry{kind: kindFixed, fixed: ohbloom.NewAtomic(1, 0.5)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	sess := &session{authed: true, proto: 2}
	w := &replyWriter{proto: 2}
	for _, cmd := range [][]string{{"SCAN", "0", "COUNT", "10"}, {"INFO"}} {
		args := make([][]byte, len(cmd))
		for i, a := range cmd {
			args[i] = []byte(a)
		}
		const calls = 20
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range calls {
			w.b = w.b[:0]
			s.exec(sess, w, args)
		}
		runtime.ReadMemStats(&after)
		per := (after.TotalAlloc - before.TotalAlloc) / calls
		// A copy of the names alone is 16 bytes a key.
		if per >= 16*n/4 {
			t.Errorf("%s allocates %d bytes a call over %d keys", cmd[0], per, n)
		}
	}
}

// Keys read back at start, from data files and the log, are in SCAN's
// index.
func TestScanAfterRestart(t *testing.T) {
	dir := t.TempDir()
	s, c := startOn(t, dir, Config{})
	ctx := context.Background()
	c.Do(ctx, "BF.ADD", "saved", "x")
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	c.Do(ctx, "BF.ADD", "logged", "x")
	s.Shutdown(ctx)
	_, c = startOn(t, crashCopy(t, dir), Config{})
	keys, next, err := c.Scan(ctx, 0, "*", 100).Result()
	slices.Sort(keys)
	if err != nil || next != 0 || strings.Join(keys, ",") != "logged,saved" {
		t.Fatalf("SCAN after a restart: %v, %d, %v", keys, next, err)
	}
}

// TestUnauthenticatedUnreadRepliesAreBounded: a client that never
// authenticates pipelines PINGs for 20 MB of NOAUTH replies and reads them
// slowly. What the server holds for it (its share of MaxBufferedBytes:
// requests, replies, parser) stays within the bound of an unauthenticated
// client at every read, whether the server stops reading while replies
// wait (what it does) or closes the client: never the 20 MB.
func TestUnauthenticatedUnreadRepliesAreBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 3.6 MB and reads up to 20 MB")
	}
	s, addr := start(t, Config{Password: "pw"})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(256 << 10)
	const pings = 600000
	reply := "-NOAUTH Authentication required.\r\n"
	payload := []byte(strings.Repeat("PING\r\n", 10000))
	go func() {
		for sent := 0; sent < pings; sent += 10000 {
			if _, err := conn.Write(payload); err != nil {
				return // closed by the server, or by the test's end
			}
		}
	}()
	// Bound: one unauthenticated client's pending requests, the replies to
	// one read of them (36 bytes of reply per 6 of PING), kept buffers.
	bound := int64(unauthPendingBytes + 6*unauthPendingBytes + 3*keepBufferBytes)
	buf := make([]byte, 4096)
	var got, peak int64
	for got < pings*int64(len(reply)) {
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, err := conn.Read(buf)
		got += int64(n)
		peak = max(peak, s.buffered.Load())
		if err != nil {
			break // closed by the server: also within the bound
		}
	}
	t.Logf("read %d bytes; the server held at most %d bytes for the client (bound %d)", got, peak, bound)
	if peak > bound {
		t.Fatalf("the server held %d bytes for an unauthenticated client that does not read, bound %d", peak, bound)
	}
}

// Clients that know no password, however many, hold at most
// MaxUnauthBufferedBytes together: the one that goes past it is refused,
// and the rest of the budget stays for a client that authenticates.
// Without that total, the same crowd fills the whole budget and the
// authenticated request below is refused.
func TestUnauthenticatedClientsShareASmallerBudget(t *testing.T) {
	const request = 1 << 20
	const unauthTotal = minUnauthBufferedBytes
	var logged syncBuffer
	s, addr := start(t, Config{Password: "pw", MaxRequestBytes: request, MaxBufferedBytes: 4 * request,
		MaxUnauthBufferedBytes: unauthTotal, EventLoops: 1, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	// Each holds an unfinished PING of 12 KB, within the 16 KiB an
	// unauthenticated argument may have.
	partial := "*2\r\n$4\r\nPING\r\n$16000\r\n" + strings.Repeat("x", 12000)
	refused := false
	for i := 0; i < 200 && !refused; i++ {
		before := s.unauthBuffered.Load()
		c := dial(t, addr)
		if _, err := c.Write([]byte(partial)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("client %d to be buffered or refused", i), func() bool {
			refused = strings.Contains(logged.String(), "would exceed max-buffered-bytes")
			return refused || s.unauthBuffered.Load() > before
		})
		if got := s.unauthBuffered.Load(); got > unauthTotal {
			t.Fatalf("unauthenticated clients hold %d bytes, limit %d", got, unauthTotal)
		}
		if refused {
			expect(t, c, "", "-ERR Protocol error: the server's request buffers are full")
		}
	}
	if !refused {
		t.Fatalf("200 unauthenticated clients were all buffered (%d bytes) under a total of %d", s.unauthBuffered.Load(), unauthTotal)
	}
	if got := s.unauthBuffered.Load(); got < unauthTotal/2 {
		t.Fatalf("a client was refused with %d bytes held by unauthenticated clients, limit %d", got, unauthTotal)
	}
	authed := dial(t, addr)
	expect(t, authed, "AUTH pw\r\n", "+OK\r\n")
	value := strings.Repeat("v", request-1000)
	// A request larger than the whole unauthenticated total: its bytes
	// count in the budget alone.
	expect(t, authed, fmt.Sprintf("*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$%d\r\n%s\r\n", len(value), value), ":1\r\n")
}

// The index SCAN walks holds exactly the keys, through any mix of adds
// and removes, and a scan in calls of any COUNT visits each once.
func TestKeyIndexMatchesTheKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var x keyIndex
	keys := map[string]bool{}
	for step := range 20000 {
		name := fmt.Sprintf("k%d", rng.IntN(3000))
		if rng.IntN(3) == 0 {
			x.remove(name)
			delete(keys, name)
		} else {
			x.add(name)
			keys[name] = true
		}
		if step%5000 != 4999 {
			continue
		}
		if x.n != len(keys) {
			t.Fatalf("index counts %d keys, the map holds %d", x.n, len(keys))
		}
		seen := map[string]int{}
		cursor, calls := uint64(0), 0
		for {
			cursor = x.scan(cursor, int64(1+rng.IntN(50)), func(name string) { seen[name]++ })
			if calls++; cursor == 0 || calls > len(keys)+1 {
				break
			}
		}
		for name := range keys {
			if seen[name] != 1 {
				t.Fatalf("key %s visited %d times", name, seen[name])
			}
		}
		if len(seen) != len(keys) {
			t.Fatalf("visited %d names, %d keys", len(seen), len(keys))
		}
	}
}

// SCAN while other clients create, delete and flush keys: under -race,
// the index is only touched under the store's lock; every scan ends.
func TestScanDuringChanges(t *testing.T) {
	_, addr := start(t, Config{})
	ctx := context.Background()
	n := 2000
	if testing.Short() {
		n = 200
	}
	done := make(chan error, 2)
	go func() {
		c := client(t, addr)
		for i := range n {
			k := fmt.Sprintf("k%d", i%97)
			var err error
			switch i % 5 {
			case 0, 1, 2:
				err = c.Do(ctx, "BF.ADD", k, "x").Err()
			case 3:
				err = c.Del(ctx, k).Err()
			case 4:
				if i%100 == 4 {
					err = c.FlushAll(ctx).Err()
				}
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	go func() {
		c := client(t, addr)
		for range n / 20 {
			cursor, calls := uint64(0), 0
			for {
				_, next, err := c.Scan(ctx, cursor, "k*", 7).Result()
				if err != nil {
					done <- err
					return
				}
				if cursor = next; cursor == 0 {
					break
				}
				if calls++; calls > 1000 {
					done <- fmt.Errorf("a scan of at most 97 keys took %d calls", calls)
					return
				}
			}
		}
		done <- nil
	}()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// Room for a SCANDUMP's copy is reserved, and counted, before the copy is
// made: clients starting dumps at once on several event loops each passed
// the check before any copy was counted, and each made a copy (16 of a 50
// MB filter's on 8 loops: 743 MB resident under a 134 MB max-dump-bytes;
// 221-247 MB once reserved first). Reservations still being copied are
// never dropped to make room: a start that finds no room is refused.
func TestDumpRoomIsReservedBeforeTheCopy(t *testing.T) {
	var d dumps
	st := &store{now: time.Now}
	d.init(1000, st)
	a, msg := d.reserve("a", 600)
	if msg != "" {
		t.Fatal(msg)
	}
	if _, msg := d.reserve("b", 600); msg == "" {
		t.Fatal("a second dump was given room that a copy being made holds")
	}
	if _, bytes := d.usage(); bytes != 600 {
		t.Fatalf("%d bytes counted with one dump being copied", bytes)
	}
	if !d.fill(a, make([]byte, 500, 600)) {
		t.Fatal("the reserved dump was dropped")
	}
	if got := d.get(a, "a"); len(got) != 500 {
		t.Fatalf("the dump holds %d bytes", len(got))
	}
	// A whole dump makes room for a new one, which drops it.
	b, msg := d.reserve("b", 600)
	if msg != "" {
		t.Fatal(msg)
	}
	if d.get(a, "a") != nil {
		t.Fatal("the older whole dump was kept past the bound")
	}
	if d.get(b, "b") != nil {
		t.Fatal("a dump still being copied was served")
	}
	if n, bytes := d.usage(); n != 1 || bytes != 600 {
		t.Fatalf("%d dumps, %d bytes", n, bytes)
	}
}

// KEYS answers at most what a client may leave unread (max-request-bytes:
// past it the connection used to be closed with its reply half sent); past
// it, an error that points to SCAN, which lists the same keys.
func TestKeysReplyIsBounded(t *testing.T) {
	_, addr := start(t, Config{MaxRequestBytes: 4 << 10})
	c := dial(t, addr)
	const n = 100 // 100 names of 40 bytes: over 4 KiB of reply
	for i := range n {
		expect(t, c, resp("BF.ADD", fmt.Sprintf("%040d", i), "x"), ":1\r\n")
	}
	if r := c.do(t, "KEYS", "*"); r != "-ERR KEYS reply longer than max-request-bytes (4096): use SCAN" {
		t.Fatalf("KEYS over the bound: %q", r)
	}
	if r := c.do(t, "KEYS", "000000000000000000000000000000000000000*"); r != "*10" {
		t.Fatalf("KEYS within the bound: %q", r)
	}
	seen := 0
	for cursor := "0"; ; {
		expect(t, c, resp("SCAN", cursor, "COUNT", "7"), "*2\r\n")
		cursor = readBulk(t, c)
		seen += readArray(t, c)
		if cursor == "0" {
			break
		}
	}
	if seen != n {
		t.Fatalf("SCAN listed %d keys of %d", seen, n)
	}
}

// One SCAN call answers at most about scanReplyBytes of names, whatever
// its COUNT (a hint, in Redis too), and a cursor that goes on.
func TestScanReplyIsBounded(t *testing.T) {
	_, addr := start(t, Config{})
	c := dial(t, addr)
	const n = 40 // of 64 KiB: 2.5 MiB of names
	for i := range n {
		expect(t, c, resp("BF.ADD", fmt.Sprintf("%05d", i)+strings.Repeat("k", maxKeyBytes-5), "x"), ":1\r\n")
	}
	expect(t, c, resp("SCAN", "0", "COUNT", "1000000"), "*2\r\n")
	cursor := readBulk(t, c)
	first := readArray(t, c)
	if cursor == "0" || first >= n || first > scanReplyBytes/maxKeyBytes+1 {
		t.Fatalf("one SCAN of COUNT 1000000 over %d keys of 64 KiB answered %d, cursor %s", n, first, cursor)
	}
	seen := first
	for cursor != "0" {
		expect(t, c, resp("SCAN", cursor, "COUNT", "1000000"), "*2\r\n")
		cursor = readBulk(t, c)
		seen += readArray(t, c)
	}
	if seen != n {
		t.Fatalf("the scan listed %d keys of %d", seen, n)
	}
}

// A client name is at most maxClientNameBytes, by CLIENT SETNAME and by
// HELLO: it is held for the connection's life, outside every budget.
func TestClientNameIsBounded(t *testing.T) {
	_, addr := start(t, Config{})
	c := dial(t, addr)
	ok, long := strings.Repeat("n", maxClientNameBytes), strings.Repeat("n", maxClientNameBytes+1)
	expect(t, c, resp("CLIENT", "SETNAME", long), "-"+errClientNameTooLong+"\r\n")
	expect(t, c, resp("HELLO", "2", "SETNAME", long), "-"+errClientNameTooLong+"\r\n")
	expect(t, c, resp("CLIENT", "SETNAME", ok)+resp("CLIENT", "GETNAME"), "+OK\r\n$"+itoa(len(ok))+"\r\n"+ok+"\r\n")
}

// A command of more than maxLoopArgs arguments or maxLoopBytes bytes runs
// off its event loop; one at the bounds runs on it.
func TestHeavyCommandsRunOffTheLoop(t *testing.T) {
	started := offLoop(t)
	_, addr := start(t, Config{EventLoops: 1})
	c := dial(t, addr)
	items := func(n int) []string {
		out := []string{"BF.MADD", "k"}
		for i := range n {
			out = append(out, strconv.Itoa(i))
		}
		return out
	}
	// At the bound: on the loop.
	expect(t, c, resp(items(maxLoopArgs-2)...), "*"+itoa(maxLoopArgs-2)+"\r\n")
	readLines(t, c, maxLoopArgs-2)
	select {
	case name := <-started:
		t.Fatalf("%s of %d arguments ran off the loop", name, maxLoopArgs)
	default:
	}
	expect(t, c, resp(items(maxLoopArgs-1)...), "*"+itoa(maxLoopArgs-1)+"\r\n")
	readLines(t, c, maxLoopArgs-1)
	awaitOffLoop(t, started, "bf.madd")
	big := strings.Repeat("e", maxLoopBytes)
	expect(t, c, resp("ECHO", big), "$"+itoa(len(big))+"\r\n"+big+"\r\n")
	awaitOffLoop(t, started, "echo")
}

// readLines reads n one-line replies.
func readLines(t *testing.T, c *rawConn, n int) {
	t.Helper()
	for range n {
		readLine(t, c)
	}
}
