package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// expect sends raw and reads exactly the bytes of want.
func expect(t *testing.T, c *rawConn, raw, want string) {
	t.Helper()
	if raw != "" {
		if _, err := c.Write([]byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c.r, got); err != nil || string(got) != want {
		t.Fatalf("sent %q: got %q (%v), want %q", raw, got, err, want)
	}
}

func hello(proto, id int) string {
	kv := []string{"server", "ohbloom", "version", Version}
	var b strings.Builder
	if proto == 3 {
		b.WriteString("%7\r\n")
	} else {
		b.WriteString("*14\r\n")
	}
	for _, s := range kv {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(s), s)
	}
	fmt.Fprintf(&b, "$5\r\nproto\r\n:%d\r\n$2\r\nid\r\n:%d\r\n", proto, id)
	b.WriteString("$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n")
	// RedisBloom, as Redis 7.4 lists a loaded module.
	if proto == 3 {
		b.WriteString("*1\r\n%4\r\n")
	} else {
		b.WriteString("*1\r\n*8\r\n")
	}
	fmt.Fprintf(&b, "$4\r\nname\r\n$2\r\nbf\r\n$3\r\nver\r\n:20820\r\n$4\r\npath\r\n$%d\r\n%s\r\n$4\r\nargs\r\n*0\r\n", len(modulePath), modulePath)
	return b.String()
}

func TestHelloAndRESP3(t *testing.T) {
	_, addr := start(t, Config{Password: "pw"})
	c := dial(t, addr)
	expect(t, c, "CLIENT ID\r\n", "-NOAUTH Authentication required.\r\n")
	expect(t, c, "HELLO 3\r\n", "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n")
	expect(t, c, "HELLO 4 AUTH default pw\r\n", "-NOPROTO unsupported protocol version\r\n")
	expect(t, c, "HELLO x\r\n", "-ERR Protocol version is not an integer or out of range\r\n")
	expect(t, c, "HELLO 3 AUTH default wrong\r\n", "-WRONGPASS invalid username-password pair or user is disabled.\r\n")
	expect(t, c, "HELLO 3 SETNAME a b\r\n", "-ERR Syntax error in HELLO option 'b'\r\n")
	expect(t, c, "CLIENT ID\r\n", "-NOAUTH Authentication required.\r\n")
	// CLIENT ID is the connection's, in HELLO too.
	expect(t, c, "HELLO 3 AUTH default pw SETNAME me\r\nCLIENT ID\r\n", hello(3, 1)+":1\r\n")
	expect(t, c, "CLIENT GETNAME\r\n", "$2\r\nme\r\n")
	expect(t, c, "HELLO\r\n", hello(3, 1)) // no version: the current one
	expect(t, c, "BF.INFO nope\r\n", "-ERR not found\r\n")
	expect(t, c, "CLIENT GETNAME x\r\n", "-ERR wrong number of arguments for 'client|getname' command\r\n")
	expect(t, c, "CONFIG GET maxclients\r\n", "%1\r\n$10\r\nmaxclients\r\n")
	c.line(t) // the number
	c.line(t)
	other := dial(t, addr)
	expect(t, other, "AUTH pw\r\nCLIENT ID\r\nHELLO\r\n", "+OK\r\n:2\r\n"+hello(2, 2))
	expect(t, c, "HELLO 2\r\n", hello(2, 1))
	expect(t, c, "QUIT\r\nPING\r\n", "+OK\r\n")
	if _, err := c.r.ReadByte(); err == nil {
		t.Fatal("the connection stayed open after QUIT")
	}
}

// go-redis speaks RESP3 (HELLO 3) when the server does, and its
// transactions are MULTI/EXEC.
func TestGoRedisRESP3AndTransactions(t *testing.T) {
	_, addr := start(t, Config{})
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		rdb := client(t, addr, func(o *redis.Options) { o.Protocol = proto })
		key := fmt.Sprint("tx", proto)
		cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.BFAdd(ctx, key, "a")
			p.BFAdd(ctx, key, "a")
			p.BFExists(ctx, key, "a")
			return nil
		})
		if err != nil || len(cmds) != 3 {
			t.Fatalf("RESP%d transaction: %v %v", proto, cmds, err)
		}
		if a, _ := cmds[0].(*redis.BoolCmd).Result(); !a {
			t.Fatalf("RESP%d: first add in a transaction not new", proto)
		}
		if a, _ := cmds[1].(*redis.BoolCmd).Result(); a {
			t.Fatalf("RESP%d: second add in a transaction new", proto)
		}
		info, err := rdb.Do(ctx, "HELLO").Result()
		if err != nil {
			t.Fatal(err)
		}
		if proto == 3 {
			if m, ok := info.(map[any]any); !ok || m["proto"] != int64(3) {
				t.Fatalf("HELLO under RESP3: %#v", info)
			}
		} else if a, ok := info.([]any); !ok || len(a) != 14 {
			t.Fatalf("HELLO under RESP2: %#v", info)
		}
	}
}

func TestMultiExecTexts(t *testing.T) {
	_, addr := start(t, Config{})
	c := dial(t, addr)
	expect(t, c, "EXEC\r\nDISCARD\r\n", "-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n")
	expect(t, c, "WATCH k\r\nUNWATCH\r\n", "-"+errWatchMissing+"\r\n-"+errWatchMissing+"\r\n")
	// Nested MULTI and WATCH inside MULTI are refused without aborting.
	expect(t, c, "MULTI\r\nMULTI\r\nWATCH k\r\nBF.ADD k a\r\nBF.ADD k a\r\nBF.CARD k\r\nEXEC\r\n",
		"+OK\r\n-ERR MULTI calls can not be nested\r\n-ERR WATCH inside MULTI is not allowed\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n:1\r\n:0\r\n:1\r\n")
	// Errors at queue time abort EXEC; nothing queued ran.
	expect(t, c, "MULTI\r\nBF.ADD k b\r\nFOO x\r\nEXEC\r\nBF.EXISTS k b\r\n",
		"+OK\r\n+QUEUED\r\n-ERR unknown command 'FOO', with args beginning with: 'x' \r\n-"+errExecAbort+"\r\n:0\r\n")
	expect(t, c, "MULTI\r\nBF.ADD k\r\nEXEC\r\n",
		"+OK\r\n-ERR wrong number of arguments for 'bf.add' command\r\n-"+errExecAbort+"\r\n")
	// Errors at run time are replies in EXEC's array.
	expect(t, c, "MULTI\r\nBF.INFO nope\r\nPING\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n-ERR not found\r\n+PONG\r\n")
	expect(t, c, "MULTI\r\nBF.ADD k c\r\nDISCARD\r\nBF.EXISTS k c\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n+OK\r\n:0\r\n-ERR EXEC without MULTI\r\n")
	expect(t, c, "MULTI\r\nEXEC\r\n", "+OK\r\n*0\r\n")
}

// EXEC runs its queue with no other client's command in between: each
// transaction adds an item to a counting filter, counts it and deletes
// it, so inside a transaction the count is always what it added, however
// many clients do the same at once.
func TestExecIsNotInterleaved(t *testing.T) {
	// Several loops, so that clients' commands run at once.
	_, addr := start(t, Config{EventLoops: 4})
	const clients, rounds = 8, 150
	var wg sync.WaitGroup
	errs := make(chan string, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err.Error()
				return
			}
			defer c.Close()
			r := bufio.NewReader(c)
			// Ten adds, the count, ten deletes: the count is 10 unless
			// another client's adds or deletes came in between.
			const n = 10
			tx := "MULTI\r\n" + strings.Repeat("CF.ADD c x\r\n", n) + "CF.COUNT c x\r\n" + strings.Repeat("CF.DEL c x\r\n", n) + "EXEC\r\n"
			want := "+OK\r\n" + strings.Repeat("+QUEUED\r\n", 2*n+1) + fmt.Sprintf("*%d\r\n", 2*n+1) +
				strings.Repeat(":1\r\n", n) + fmt.Sprintf(":%d\r\n", n) + strings.Repeat(":1\r\n", n)
			for range rounds {
				c.Write([]byte(tx))
				got := make([]byte, len(want))
				if _, err := io.ReadFull(r, got); err != nil || string(got) != want {
					errs <- fmt.Sprintf("transaction answered %q (%v)", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// A queue is bounded like a request, and an over-full one aborts EXEC.
func TestMultiQueueLimit(t *testing.T) {
	_, addr := start(t, Config{MaxRequestBytes: 4096})
	c := dial(t, addr)
	expect(t, c, "MULTI\r\n", "+OK\r\n")
	item := strings.Repeat("i", 1000)
	for range 3 {
		expect(t, c, "BF.ADD k "+item+"\r\n", "+QUEUED\r\n")
	}
	expect(t, c, "BF.ADD k "+item+"\r\n", "-"+string(errQueuedTooLarge)+"\r\n")
	expect(t, c, "EXEC\r\nBF.EXISTS k "+item+"\r\n", "-"+errExecAbort+"\r\n:0\r\n")
}

// Wrong passwords: a connection is closed after authMaxFailures of them.
func TestWrongPasswordsCloseTheConnection(t *testing.T) {
	_, addr := start(t, Config{Password: "pw"})
	c := dial(t, addr)
	for range authMaxFailures {
		expect(t, c, "AUTH guess\r\n", "-"+errWrongPass+"\r\n")
	}
	if _, err := c.r.ReadByte(); err == nil {
		t.Fatal("the connection stayed open after many wrong passwords")
	}
	expect(t, dial(t, addr), "AUTH pw\r\nPING\r\n", "+OK\r\n+PONG\r\n")
}

func TestAuthGate(t *testing.T) {
	var g authGate
	g.init()
	now := time.Unix(1000, 0)
	g.now = func() time.Time { return now }
	g.last = now
	for range authFailureBurst {
		if d := g.delay(); d != 0 {
			t.Fatalf("waiting %v within the burst", d)
		}
		g.failed()
	}
	d := g.delay()
	if d <= 0 || d > time.Second/authFailuresPerSecond+time.Millisecond {
		t.Fatalf("delay %v once the burst is spent", d)
	}
	now = now.Add(time.Second / authFailuresPerSecond)
	if d := g.delay(); d != 0 {
		t.Fatalf("delay %v after a token's refill", d)
	}
	// A right password goes through when its turn comes, with the gate
	// shut by others' failures.
	s, addr := start(t, Config{Password: "pw"})
	for range authFailureBurst + 5 {
		s.auth.failed()
	}
	expect(t, dial(t, addr), "AUTH pw\r\nPING\r\n", "+OK\r\n+PONG\r\n")
}

// Many clients' unfinished requests together stay within
// MaxBufferedBytes: the one that would pass it is told and disconnected,
// and the others go on.
func TestBufferBudget(t *testing.T) {
	const request = 64 << 10
	const budget = request * 3 / 2
	s, addr := start(t, Config{MaxRequestBytes: request, MaxBufferedBytes: budget})
	sent := request * 7 / 8
	part := fmt.Sprintf("*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$%d\r\n%s", request-100, strings.Repeat("x", sent))
	a := dial(t, addr)
	a.Write([]byte(part))
	// Wait for the event: a's partial request is buffered.
	waitFor(t, "a's partial request to be buffered", func() bool { return s.buffered.Load() >= int64(sent) })
	b := dial(t, addr)
	b.Write([]byte(part))
	expect(t, b, "", "-"+string(errBuffersFull)+"\r\n")
	if s.buffered.Load() > budget {
		t.Fatalf("%d bytes buffered, budget %d", s.buffered.Load(), budget)
	}
	expect(t, a, strings.Repeat("x", request-100-sent)+"\r\n", ":1\r\n")
	expect(t, dial(t, addr), "PING\r\n", "+PONG\r\n")
}

// A client that sends without reading its replies is disconnected once
// MaxRequestBytes of them wait, and the server goes on.
func TestUnreadRepliesAreBounded(t *testing.T) {
	_, addr := start(t, Config{MaxRequestBytes: 1 << 20})
	c := dial(t, addr)
	req := []byte("ECHO " + strings.Repeat("e", 1000) + "\r\n")
	var err error
	for i := 0; i < 1_000_000 && err == nil; i++ { // up to 1 GB of replies
		_, err = c.Write(req)
	}
	if err == nil {
		t.Fatal("the server kept a client that never reads")
	}
	expect(t, dial(t, addr), "PING\r\n", "+PONG\r\n")
}
