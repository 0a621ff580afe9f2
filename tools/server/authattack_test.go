package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/trace"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ohbloom/ohbloom"
)

// The attacks of an authenticated client (issue 30): every command that
// takes a pattern, a count or a blob, with the worst input for it, while
// other clients measure their round trips. Each attack must leave another
// client's PING, and a BF.EXISTS on a key the attack does not name,
// answered within maxStall: no command may hold the event loop, or a lock
// those need, for longer than a short slice. (Before the fixes a MULTI with
// a KEYS over 40 keys of 64 KiB held every client 3.9 s, and a CONFIG GET
// of a 60 MB pattern 4.1 s.)
//
// The bound is a real-time one on purpose: it is the requirement.
// It is kept far from what the server needs (a PING answers in well under
// a millisecond; the work a loop does between two reads is bounded at a
// few milliseconds by maxLoopArgs, maxLoopBytes and loopWriteBytes; and
// no goroutine holds a processor long, see appendChunked and RaiseProcs),
// so that a busy machine cannot reach it (under the race detector the
// stalls are only logged); the sizes shrink under -short. Where the test
// may (as root), the server and the probes run at nice -10, so that CPU
// hogs beside the suite are not counted as the server's stalls
// (raisePriority). The server runs in a process of its own, so that the
// test's own work (building and sending 60 MB requests, its garbage
// collections) does not take its processors, and the probes are paced,
// so that they do not become the load themselves.
const maxStall = 250 * time.Millisecond

// attackedEnv makes this test binary, re-executed, the server under
// attack (init below): EventLoops 1, so that the attacker and the probes
// share one loop, password pw, and the value as MaxFilterBytes.
const attackedEnv = "OHBLOOM_TEST_ATTACKED_SERVER"

// traceEnv, if set, names a file for a runtime trace of the server under
// attack (go tool trace): where a stall shows which goroutine held the
// processors. The stalls fixed in conn.go and procs.go were found so.
const traceEnv = "OHBLOOM_TEST_TRACE"

// traceStop ends the server's trace, if it runs one.
var traceStop = func() {}

func init() {
	v, ok := os.LookupEnv(attackedEnv)
	if !ok {
		return
	}
	raisePriority()
	RaiseProcs() // as ohbloom serve does
	if path := os.Getenv(traceEnv); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		traceStop = func() { trace.Stop(); f.Close() }
	}
	maxFilter, _ := strconv.ParseUint(v, 10, 64)
	s, err := New(Config{Password: "pw", EventLoops: 1, MaxFilterBytes: maxFilter,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(ln.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin) // until the test ends, however it ends
		traceStop()
		os.Exit(0)
	}()
	s.Serve(ln)
	os.Exit(0)
}

// startAttacked starts the server under attack in a process of its own
// and returns its address.
func startAttacked(t *testing.T, maxFilterBytes int) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), attackedEnv+"="+strconv.Itoa(maxFilterBytes))
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the server under attack did not start: %v", err)
	}
	return strings.TrimSpace(line)
}

// prober sends one command on a connection of its own every probeEvery
// (or at once after a slow answer), and keeps the slowest round trip,
// until stopped.
type prober struct {
	name  string
	worst time.Duration
	n     int
	err   error
	stop  chan struct{}
	done  chan struct{}
}

const probeEvery = 2 * time.Millisecond

func startProber(t *testing.T, addr, name, command, want string) *prober {
	t.Helper()
	p := &prober{name: name, stop: make(chan struct{}), done: make(chan struct{})}
	c := dial(t, addr)
	expect(t, c, "AUTH pw\r\n", "+OK\r\n")
	expect(t, c, command, want) // the connection is served before the attack begins
	go func() {
		defer close(p.done)
		tick := time.NewTicker(probeEvery)
		defer tick.Stop()
		buf := make([]byte, len(want))
		for {
			start := time.Now()
			if _, err := c.Write([]byte(command)); err != nil {
				p.err = err
				return
			}
			// (FLUSHALL takes the probe's key: BF.EXISTS may say 0.)
			if _, err := io.ReadFull(c.r, buf); err != nil || string(buf) != want && !(want == ":1\r\n" && string(buf) == ":0\r\n") {
				p.err = fmt.Errorf("%s answered %q (%v), want %q", p.name, buf, err, want)
				return
			}
			p.worst = max(p.worst, time.Since(start))
			p.n++
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// end stops the prober after its round trip in flight, which may have
// been held by the end of the attack, and returns its slowest.
func (p *prober) end(t *testing.T) time.Duration {
	t.Helper()
	close(p.stop)
	<-p.done
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.worst
}

// encodeCommand encodes a command of n arguments, arg(i) for i < n.
func encodeCommand(n int, arg func(i int) []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", n)
	for i := range n {
		a := arg(i)
		b.WriteString("$")
		b.WriteString(strconv.Itoa(len(a)))
		b.WriteString("\r\n")
		b.Write(a)
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// commandOf encodes a command of a name, some arguments, and n more of
// more(i).
func commandOf(head []string, n int, more func(i int) []byte) []byte {
	return encodeCommand(len(head)+n, func(i int) []byte {
		if i < len(head) {
			return []byte(head[i])
		}
		return more(i - len(head))
	})
}

// skipReply reads one whole RESP2 reply and returns its first line. It
// allocates only that line, and only for the top reply: the test's own
// garbage collections, in the probes' process, are not to be measured.
func skipReply(r *bufio.Reader) (string, error) {
	first, err := skipReplyIn(r, true)
	return first, err
}

func skipReplyIn(r *bufio.Reader, keep bool) (string, error) {
	b, err := r.ReadSlice('\n')
	if err != nil {
		return string(b), err
	}
	b = bytes.TrimSuffix(b, []byte("\r\n"))
	if len(b) == 0 {
		return "", fmt.Errorf("empty reply line")
	}
	kind, n := b[0], 0
	for _, d := range b[1:] {
		if '0' <= d && d <= '9' {
			n = 10*n + int(d-'0')
		} else {
			n = -1 // "-1", or not a length
			break
		}
	}
	var first string
	if keep {
		first = string(b)
	}
	switch kind {
	case '*':
		for range n {
			if _, err := skipReplyIn(r, false); err != nil {
				return first, err
			}
		}
	case '$':
		if n >= 0 {
			if _, err := r.Discard(n + 2); err != nil {
				return first, err
			}
		}
	}
	return first, nil
}

func TestAuthenticatedAttacks(t *testing.T) {
	raisePriority() // the probes' process, as the server's (init above)
	procs := runtime.GOMAXPROCS(0)
	RaiseProcs()
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	// Sizes: the worst the default limits let one client send, or near
	// it, and a fraction of that under -short and the race detector.
	bigKeys, manyItems, manyKeys, blobBytes, filterBytes := 300, 1_000_000, 100_000, 60<<20, 256<<20
	switch {
	case raceEnabled: // every access instrumented: 5-20 times slower
		bigKeys, manyItems, manyKeys, blobBytes, filterBytes = 10, 50_000, 2_000, 2<<20, 8<<20
	case testing.Short():
		bigKeys, manyItems, manyKeys, blobBytes, filterBytes = 40, 150_000, 10_000, 8<<20, 32<<20
	}
	addr := startAttacked(t, filterBytes)
	attacker := dial(t, addr)
	attacker.SetDeadline(time.Now().Add(10 * time.Minute))
	expect(t, attacker, "AUTH pw\r\n", "+OK\r\n")
	send := func(req []byte) {
		t.Helper()
		if _, err := attacker.Write(req); err != nil {
			t.Fatal(err)
		}
	}
	sendArgs := func(args ...string) { send([]byte(resp(args...))) }

	// The keyspace: keys with 64 KiB names, the longest there may be;
	// many small keys; a large counting filter; a key for the probes.
	t.Logf("setting up %d keys of 64 KiB names, %d small keys, a CF key of %d MB", bigKeys, manyKeys, filterBytes>>20)
	bigName := func(i int) string { return fmt.Sprintf("%05d", i) + strings.Repeat("a", maxKeyBytes-5) }
	var setup bytes.Buffer
	for i := range bigKeys {
		setup.WriteString(resp("BF.ADD", bigName(i), "x"))
	}
	for i := range manyKeys {
		setup.WriteString(resp("BF.ADD", "k:"+strconv.Itoa(i), "x"))
	}
	go attacker.Write(setup.Bytes()) // the replies are read meanwhile
	for range bigKeys + manyKeys {
		if r, err := skipReply(attacker.r); err != nil || r != ":1" {
			t.Fatalf("setting up: %q %v", r, err)
		}
	}
	// A cuckoo filter, and a fixed one to reserve, of nearly
	// filterBytes each.
	cfCapacity, bfCapacity := uint64(4), uint64(1)
	for cuckooBytes(2*cfCapacity) <= uint64(filterBytes) {
		cfCapacity *= 2
	}
	for fixedBytes(2*bfCapacity) <= uint64(filterBytes) {
		bfCapacity *= 2
	}
	expect(t, attacker, resp("CF.RESERVE", "bigcf", strconv.FormatUint(cfCapacity, 10)), "+OK\r\n")
	expect(t, attacker, resp("BF.ADD", "probe", "present"), ":1\r\n")
	// The probes' key and the attacks' keys are on different latches.
	for _, k := range []string{"bigcf", "m", "target", bigName(0)} {
		if latchOf([]byte(k)) == latchOf([]byte("probe")) {
			t.Fatalf("key %.10q shares the probe's latch: pick another name", k)
		}
	}

	worstPattern := "*" + strings.Repeat("a", maxPatternBytes-2) + "b" // every state live: the matcher's most work per byte
	classPattern := "*[" + strings.Repeat("z", maxPatternBytes-4) + "]q"
	item := func(i int) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(i)) }
	blob := func() []byte { return bytes.Repeat([]byte("x"), blobBytes) }
	// Commands pipelined after a large reply run on the loop, while the
	// reply is still being sent: their replies must not make the loop
	// copy it.
	const pipelinedAfter = 10_000

	attacks := []struct {
		name  string
		build func() []byte    // the attack's request, built before the probes start
		run   func(req []byte) // sends it (and what follows) and reads the whole reply
	}{
		{"KEYS, the worst pattern over keys of 64 KiB", nil, func([]byte) {
			sendArgs("KEYS", worstPattern)
			expectLine(t, attacker, "*0")
		}},
		{"KEYS, a 1 KiB class over keys of 64 KiB", nil, func([]byte) {
			sendArgs("KEYS", classPattern)
			expectLine(t, attacker, "*0")
		}},
		{"MULTI KEYS EXEC", nil, func([]byte) {
			send([]byte(resp("MULTI") + resp("KEYS", worstPattern) + resp("KEYS", classPattern) + resp("INFO") + resp("EXEC")))
			expectLine(t, attacker, "+OK")
			for range 3 {
				expectLine(t, attacker, "+QUEUED")
			}
			expectLine(t, attacker, "*3")
			expectLine(t, attacker, "*0")
			expectLine(t, attacker, "*0")
			skipReply(attacker.r)
		}},
		{"SCAN MATCH, the worst pattern, COUNT of every key", nil, func([]byte) {
			for cursor := "0"; ; {
				sendArgs("SCAN", cursor, "MATCH", worstPattern, "COUNT", "1000000000")
				expectLine(t, attacker, "*2")
				cursor = readBulk(t, attacker)
				expectLine(t, attacker, "*0")
				if cursor == "0" {
					break
				}
			}
		}},
		{"MULTI SCAN EXEC", nil, func([]byte) {
			send([]byte(resp("MULTI") + resp("SCAN", "0", "MATCH", worstPattern, "COUNT", "1000000000") + resp("EXEC")))
			expectLine(t, attacker, "+OK")
			expectLine(t, attacker, "+QUEUED")
			expectLine(t, attacker, "*1")
			skipReply(attacker.r)
		}},
		{"CONFIG GET, a class pattern of the whole request", func() []byte {
			p := blob()
			p[0], p[1], p[len(p)-2], p[len(p)-1] = '*', '[', ']', 'q'
			return commandOf([]string{"CONFIG", "GET"}, 1, func(int) []byte { return p })
		}, func(req []byte) {
			send(req)
			expectLine(t, attacker, "-"+errPatternTooLong)
		}},
		{"CONFIG GET, a 1 KiB class", nil, func([]byte) {
			sendArgs("CONFIG", "GET", classPattern)
			expectLine(t, attacker, "*0")
		}},
		{"BF.MADD of many items", func() []byte {
			return commandOf([]string{"BF.MADD", "m"}, manyItems, item)
		}, func(req []byte) {
			send(req)
			if n := readArray(t, attacker); n != manyItems {
				t.Fatalf("BF.MADD answered %d replies", n)
			}
		}},
		{"BF.MEXISTS of many items", func() []byte {
			return commandOf([]string{"BF.MEXISTS", "m"}, manyItems, item)
		}, func(req []byte) {
			send(req)
			readArray(t, attacker)
		}},
		{"CF.INSERT of many items into a large filter", func() []byte {
			return commandOf([]string{"CF.INSERT", "bigcf", "ITEMS"}, manyItems, item)
		}, func(req []byte) {
			send(req)
			readArray(t, attacker)
		}},
		{"EXISTS of many keys", func() []byte {
			return commandOf([]string{"EXISTS"}, manyItems, item)
		}, func(req []byte) {
			send(req)
			expectLine(t, attacker, ":0")
		}},
		{"DEL of many keys", func() []byte {
			return commandOf([]string{"DEL"}, manyItems, item)
		}, func(req []byte) {
			send(req)
			expectLine(t, attacker, ":0")
		}},
		{"MULTI BF.MADD EXEC", func() []byte {
			return append(append([]byte(resp("MULTI")), commandOf([]string{"BF.MADD", "target"}, manyItems/4, item)...), resp("EXEC")...)
		}, func(req []byte) {
			send(req)
			expectLine(t, attacker, "+OK")
			expectLine(t, attacker, "+QUEUED")
			expectLine(t, attacker, "*1")
			readArray(t, attacker)
		}},
		{"CF.SCANDUMP of a large filter, while another client adds to it", nil, func([]byte) {
			adder := dial(t, addr)
			expect(t, adder, "AUTH pw\r\n", "+OK\r\n")
			sendArgs("CF.SCANDUMP", "bigcf", "0")
			// The dump holds the key's lock while it copies the filter;
			// an add to that key that meets it waits, off the loop.
			adder.Write([]byte(resp("CF.ADD", "bigcf", "during")))
			for {
				expectLine(t, attacker, "*2")
				iter := strings.TrimPrefix(readLine(t, attacker), ":")
				skipBulk(t, attacker)
				if iter == "0" {
					break
				}
				sendArgs("CF.SCANDUMP", "bigcf", iter)
			}
			expectLine(t, adder, ":1")
		}},
		{"BF.LOADCHUNK of a large chunk", func() []byte {
			// The first chunk of an ohbloom dump: an 8-byte length, then
			// the record, here garbage, checked once it is whole.
			chunk := make([]byte, blobBytes)
			binary.LittleEndian.PutUint64(chunk, uint64(len(chunk)-8))
			iter := int64(ohbloomIterators) | int64(len(chunk)+1)
			return commandOf([]string{"BF.LOADCHUNK", "loaded", strconv.FormatInt(iter, 10)}, 1, func(int) []byte { return chunk })
		}, func(req []byte) {
			send(req)
			if r := readLine(t, attacker); !strings.HasPrefix(r, "-ERR invalid dump") {
				t.Fatalf("a garbage dump was answered %q", r)
			}
		}},
		{"BF.RESERVE of the largest filter", nil, func([]byte) {
			sendArgs("BF.RESERVE", "huge", "0.0001", strconv.FormatUint(bfCapacity, 10), "NONSCALING")
			expectLine(t, attacker, "+OK")
			sendArgs("DEL", "huge")
			expectLine(t, attacker, ":1")
		}},
		{"ECHO of a large argument", func() []byte {
			return commandOf([]string{"ECHO"}, 1, func(int) []byte { return blob() })
		}, func(req []byte) {
			send(req)
			if n := skipBulk(t, attacker); n != blobBytes {
				t.Fatalf("ECHO answered %d bytes", n)
			}
		}},
		{"ECHO of a large argument, and commands pipelined after it", func() []byte {
			req := commandOf([]string{"ECHO"}, 1, func(int) []byte { return blob() })
			return append(req, bytes.Repeat([]byte(resp("ECHO", "after")), pipelinedAfter)...)
		}, func(req []byte) {
			send(req)
			if n := skipBulk(t, attacker); n != blobBytes {
				t.Fatalf("ECHO answered %d bytes", n)
			}
			for range pipelinedAfter {
				if r := readBulk(t, attacker); r != "after" {
					t.Fatalf("a pipelined ECHO answered %q", r)
				}
			}
		}},
		{"CLIENT SETNAME of a large name", func() []byte {
			return commandOf([]string{"CLIENT", "SETNAME"}, 1, func(int) []byte { return blob() })
		}, func(req []byte) {
			send(req)
			if r := readLine(t, attacker); !strings.HasPrefix(r, "-ERR") {
				t.Fatalf("a name of %d bytes was answered %q", blobBytes, r)
			}
		}},
		{"COMMAND with many arguments", func() []byte {
			return commandOf(nil, manyItems, func(int) []byte { return []byte("COMMAND") })
		}, func(req []byte) {
			send(req)
			expectLine(t, attacker, "-ERR unknown subcommand 'COMMAND'. Try COMMAND HELP.")
		}},
		{"INFO over many keys", nil, func([]byte) {
			sendArgs("INFO")
			skipReply(attacker.r)
		}},
		{"FLUSHALL of many keys", nil, func([]byte) {
			sendArgs("FLUSHALL")
			expectLine(t, attacker, "+OK")
			expect(t, attacker, resp("BF.ADD", "probe", "present"), ":1\r\n")
		}},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			var req []byte
			if a.build != nil {
				req = a.build()
			}
			ping := startProber(t, addr, "PING", "PING\r\n", "+PONG\r\n")
			exists := startProber(t, addr, "BF.EXISTS", resp("BF.EXISTS", "probe", "present"), ":1\r\n")
			begun := time.Now()
			a.run(req)
			took := time.Since(begun)
			worstPing, worstExists := ping.end(t), exists.end(t)
			t.Logf("attack took %v; worst PING %v (%d sent), worst BF.EXISTS on another key %v (%d sent)",
				took.Round(time.Millisecond), worstPing.Round(time.Microsecond), ping.n, worstExists.Round(time.Microsecond), exists.n)
			// Under the race detector every access of the server is
			// instrumented 5-20 times over: that run is for races, and
			// the run without it holds the bound.
			stalled := t.Errorf
			if raceEnabled {
				stalled = t.Logf
			}
			if worstPing > maxStall {
				stalled("another client's PING waited %v (bound %v)", worstPing, maxStall)
			}
			if worstExists > maxStall {
				stalled("a BF.EXISTS on another key waited %v (bound %v)", worstExists, maxStall)
			}
		})
	}
}

func readLine(t *testing.T, c *rawConn) string {
	t.Helper()
	line, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading a reply: %v (%q)", err, line)
	}
	return strings.TrimSuffix(line, "\r\n")
}

func expectLine(t *testing.T, c *rawConn, want string) {
	t.Helper()
	if got := readLine(t, c); got != want {
		t.Fatalf("got %.200q, want %.200q", got, want)
	}
}

// readBulk reads a bulk string.
func readBulk(t *testing.T, c *rawConn) string {
	t.Helper()
	line := readLine(t, c)
	if !strings.HasPrefix(line, "$") {
		t.Fatalf("got %.200q, want a bulk string", line)
	}
	n, _ := strconv.Atoi(line[1:])
	if n < 0 {
		return ""
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(c.r, b); err != nil {
		t.Fatal(err)
	}
	return string(b[:n])
}

// skipBulk reads a bulk string without keeping it, and returns its
// length: the test's own allocations must not stall the probes, which run
// in its process.
func skipBulk(t *testing.T, c *rawConn) int {
	t.Helper()
	line := readLine(t, c)
	if !strings.HasPrefix(line, "$") {
		t.Fatalf("got %.200q, want a bulk string", line)
	}
	n, _ := strconv.Atoi(line[1:])
	if n >= 0 {
		if _, err := c.r.Discard(n + 2); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// readArray reads an array of simple replies and returns its length.
func readArray(t *testing.T, c *rawConn) int {
	t.Helper()
	line := readLine(t, c)
	if !strings.HasPrefix(line, "*") {
		t.Fatalf("got %.200q, want an array", line)
	}
	n, _ := strconv.Atoi(line[1:])
	for range n {
		if _, err := skipReply(c.r); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// cuckooBytes is the size of CF.RESERVE's filter of capacity n (a power
// of two): n/2 buckets of 2 slots, and RedisBloom's 56 bytes of structs.
func cuckooBytes(n uint64) uint64 { return n + 56 }

func fixedBytes(n uint64) uint64 {
	blocks, _, err := ohbloom.Geometry(n, 0.0001)
	if err != nil {
		return math.MaxUint64
	}
	return blocks * ohbloom.BlockBytes
}
