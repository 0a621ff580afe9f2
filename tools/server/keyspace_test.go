package server

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ohbloom/ohbloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// ownRedisServer starts a redis-server of the test's own (its databases are
// flushed and swapped, which a shared one must not see), and returns its
// address; it skips where none is installed (CI installs one).
func ownRedisServer(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must install redis-server (.ci/redis.sh)")
		}
		t.Skip("redis-server is not installed")
	}
	var lastErr error
	for range 5 { // a port found free may be taken before the server binds it
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		addr := "127.0.0.1:" + strconv.Itoa(port)
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		deadline := time.Now().Add(30 * time.Second)
		for lastErr = nil; ; {
			select {
			case err := <-exited:
				lastErr = fmt.Errorf("redis-server on %s exited: %v", addr, err)
			default:
				if rdb.Ping(context.Background()).Err() == nil {
					rdb.Close()
					t.Cleanup(func() { cmd.Process.Kill(); <-exited })
					return addr
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("redis-server on %s did not answer", addr)
				}
				time.Sleep(20 * time.Millisecond) // polling for readiness, not standing in for an event
				continue
			}
			break
		}
		rdb.Close()
	}
	t.Fatal(lastErr)
	return ""
}

// keyspaceScript is a run of the generic keyspace commands; "make" steps
// create a key (a BF key here, a string in redis-server), whose reply is
// not compared. Every reply of the others must be redis-server's, byte for
// byte. Times are far (TTLs of 100 s and more, absolute times in 2100), so
// that the replies do not depend on when they run.
var keyspaceScript = [][]string{
	{"FLUSHALL"},
	{"make", "k"},
	{"SELECT", "16"}, {"SELECT", "-1"}, {"SELECT", "x"}, {"SELECT", "99999999999"}, {"SELECT", "01"},
	{"SELECT", "0"}, {"SELECT"},
	{"EXPIRE", "k", "100"}, {"TTL", "k"},
	{"EXPIRE", "k", "100", "NX"}, {"EXPIRE", "k", "200", "XX"}, {"TTL", "k"},
	{"EXPIRE", "k", "100", "GT"}, {"EXPIRE", "k", "300", "gt"}, {"TTL", "k"},
	{"EXPIRE", "k", "400", "LT"}, {"EXPIRE", "k", "150", "lt"}, {"TTL", "k"},
	{"EXPIRE", "k", "10", "NX", "XX"}, {"EXPIRE", "k", "10", "GT", "LT"}, {"EXPIRE", "k", "10", "NX", "GT"},
	{"EXPIRE", "k", "10", "FOO"}, {"EXPIRE", "k", "10", "XX", "XX"}, {"EXPIRE", "k", "abc"}, {"EXPIRE", "k", "1.5"},
	{"EXPIRE", "k", "9223372036854775807"}, {"PEXPIRE", "k", "9223372036854775807"},
	{"EXPIREAT", "k", "-9223372036854775808"}, {"EXPIRE", "k"}, {"TTL"},
	{"EXPIREAT", "k", "4102444800"}, {"EXPIRETIME", "k"}, {"PEXPIRETIME", "k"}, {"TTL", "missing"},
	{"PEXPIREAT", "k", "4102444800123"}, {"PEXPIRETIME", "k"}, {"EXPIRETIME", "k"},
	{"PEXPIREAT", "k", "4102444800123", "XX", "GT"},
	{"TTL", "missing"}, {"PTTL", "missing"}, {"EXPIRETIME", "missing"}, {"PEXPIRETIME", "missing"},
	{"PERSIST", "k"}, {"PERSIST", "k"}, {"TTL", "k"}, {"PTTL", "k"}, {"EXPIRETIME", "k"},
	{"EXPIRE", "k", "100", "XX"}, {"EXPIRE", "k", "100", "LT"}, {"TTL", "k"}, {"PERSIST", "k"},
	{"EXPIRE", "k", "100", "GT"}, {"TTL", "k"},
	{"EXPIRE", "missing", "10"}, {"PERSIST", "missing"}, {"PEXPIREAT", "missing", "1"},
	// A time past removes the key.
	{"make", "k2"}, {"EXPIRE", "k2", "0"}, {"EXISTS", "k2"}, {"TYPE", "k2"},
	{"make", "k3"}, {"PEXPIREAT", "k3", "1"}, {"EXISTS", "k3"},
	{"make", "k4"}, {"EXPIRE", "k4", "-5"}, {"TTL", "k4"},
	{"make", "k5"}, {"EXPIREAT", "k5", "100", "NX"}, {"EXISTS", "k5"},
	{"DBSIZE"},
	// RENAME and RENAMENX.
	{"RENAME", "missing", "x"}, {"RENAME", "k", "k"}, {"RENAMENX", "k", "k"}, {"RENAMENX", "missing", "k"},
	{"RENAMENX", "missing", "missing"}, {"RENAME", "k"},
	{"EXPIRE", "k", "1000"}, {"RENAME", "k", "r"}, {"EXISTS", "k"}, {"EXISTS", "r"}, {"TTL", "r"}, {"TTL", "k"},
	{"make", "s"}, {"RENAMENX", "r", "s"}, {"RENAMENX", "r", "t"}, {"TTL", "t"}, {"RENAME", "t", "s"},
	{"TTL", "s"}, {"EXISTS", "t"}, {"DBSIZE"},
	// COPY.
	{"COPY", "s", "s"}, {"COPY", "s", "c1"}, {"TTL", "c1"}, {"COPY", "s", "c1"}, {"COPY", "s", "c1", "REPLACE"},
	{"COPY", "missing", "c2"}, {"COPY", "s", "c2", "DB", "16"}, {"COPY", "s", "c2", "DB", "x"},
	{"COPY", "s", "c2", "FOO"}, {"COPY", "s", "c2", "DB"}, {"COPY", "s", "c2", "db", "-1"},
	{"COPY", "s", "s", "DB", "0"}, {"COPY", "missing", "missing"}, {"COPY", "s"},
	{"COPY", "s", "s", "DB", "1"}, {"COPY", "s", "s", "DB", "1"}, {"COPY", "s", "s", "DB", "1", "REPLACE"},
	{"PERSIST", "c1"}, {"COPY", "c1", "c3", "replace", "db", "2"},
	{"SELECT", "1"}, {"EXISTS", "s"}, {"TTL", "s"}, {"DBSIZE"}, {"EXISTS", "c1"},
	{"SELECT", "2"}, {"TTL", "c3"}, {"DBSIZE"},
	// MOVE.
	{"SELECT", "0"}, {"MOVE", "s", "0"}, {"MOVE", "s", "1"}, {"MOVE", "c1", "1"}, {"MOVE", "c1", "1"},
	{"MOVE", "missing", "1"}, {"MOVE", "s", "16"}, {"MOVE", "s", "x"}, {"MOVE", "s", "-1"}, {"MOVE", "s"},
	{"EXISTS", "c1"}, {"SELECT", "1"}, {"TTL", "c1"}, {"KEYS", "c*"}, {"DBSIZE"},
	// FLUSHDB empties one database, FLUSHALL all.
	{"FLUSHDB"}, {"DBSIZE"}, {"KEYS", "*"}, {"SELECT", "2"}, {"DBSIZE"}, {"SELECT", "0"}, {"DBSIZE"},
	{"FLUSHDB", "ASYNC"}, {"FLUSHDB", "FOO"}, {"SELECT", "2"}, {"DBSIZE"}, {"FLUSHALL"}, {"DBSIZE"},
	// SWAPDB: each connection stays on its index.
	{"SWAPDB", "0", "16"}, {"SWAPDB", "x", "1"}, {"SWAPDB", "1", "x"}, {"SWAPDB", "-1", "0"},
	{"SWAPDB", "99999999999", "0"}, {"SWAPDB", "1", "1"}, {"SWAPDB", "1"},
	{"make", "sw"}, {"EXPIRE", "sw", "500"}, {"SWAPDB", "0", "4"}, {"EXISTS", "sw"}, {"SELECT", "4"},
	{"EXISTS", "sw"}, {"TTL", "sw"}, {"SWAPDB", "4", "0"}, {"EXISTS", "sw"}, {"SELECT", "0"}, {"EXISTS", "sw"},
	{"SWAPDB", "0", "5"}, {"DBSIZE"}, {"SELECT", "5"}, {"DBSIZE"}, {"FLUSHALL"}, {"SELECT", "0"},
	// Inside MULTI: SELECT and the commands after it.
	{"make", "m"}, {"MULTI"}, {"SELECT", "3"}, {"EXISTS", "m"}, {"SELECT", "0"}, {"RENAME", "m", "m2"},
	{"MOVE", "m2", "3"}, {"EXPIRE", "nope", "5"}, {"EXEC"}, {"EXISTS", "m2"}, {"SELECT", "3"}, {"EXISTS", "m2"},
	{"SELECT", "0"}, {"DBSIZE"},
}

// runKeyspaceScript runs the script on addr in protocol proto, making keys
// with make, and returns the replies (make's left out).
func runKeyspaceScript(t *testing.T, addr string, proto int, make []string) []string {
	t.Helper()
	c := dialProto(t, addr, proto)
	var out []string
	for _, args := range keyspaceScript {
		if args[0] == "make" {
			if got := c.run(t, append(make, args[1], "a")...); strings.HasPrefix(got, "-") {
				t.Fatalf("making %s: %q", args[1], got)
			}
			continue
		}
		out = append(out, c.run(t, args...))
	}
	return out
}

// The generic keyspace commands answer as redis-server does, byte for
// byte, in both protocols: replies, errors, integer kinds.
func TestKeyspaceRepliesMatchRedisServer(t *testing.T) {
	raddr := ownRedisServer(t)
	_, addr := start(t, Config{})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			want := runKeyspaceScript(t, raddr, proto, []string{"SET"})
			got := runKeyspaceScript(t, addr, proto, []string{"BF.ADD"})
			i := 0
			for _, args := range keyspaceScript {
				if args[0] == "make" {
					continue
				}
				if got[i] != want[i] {
					t.Errorf("%q: %q, redis-server %q", args, got[i], want[i])
				}
				i++
			}
		})
	}
}

// go-redis with DB set selects it on connect; the keys it makes are in
// that database and no other, and expiries, renames and moves behave as
// on redis-server.
func TestGoRedisDatabases(t *testing.T) {
	_, addr := start(t, Config{})
	ctx := context.Background()
	db1 := redis.NewClient(&redis.Options{Addr: addr, DB: 1})
	db0 := redis.NewClient(&redis.Options{Addr: addr})
	defer db1.Close()
	defer db0.Close()
	if err := db1.BFAdd(ctx, "f", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if n := db0.Exists(ctx, "f").Val(); n != 0 {
		t.Fatalf("database 0 sees database 1's key: EXISTS %d", n)
	}
	if ok, err := db1.BFExists(ctx, "f", "x").Result(); err != nil || !ok {
		t.Fatalf("BF.EXISTS in database 1: %v %v", ok, err)
	}
	if ok, err := db1.Expire(ctx, "f", time.Hour).Result(); err != nil || !ok {
		t.Fatalf("EXPIRE: %v %v", ok, err)
	}
	if ttl := db1.TTL(ctx, "f").Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("TTL %v after EXPIRE of an hour", ttl)
	}
	if err := db1.Rename(ctx, "f", "g").Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := db1.Move(ctx, "g", 0).Result(); err != nil || !ok {
		t.Fatalf("MOVE: %v %v", ok, err)
	}
	if ok, err := db0.BFExists(ctx, "g", "x").Result(); err != nil || !ok {
		t.Fatalf("BF.EXISTS of the moved key in database 0: %v %v", ok, err)
	}
	if ttl := db0.TTL(ctx, "g").Val(); ttl <= 59*time.Minute {
		t.Fatalf("the moved key's TTL %v: the expiry did not move with it", ttl)
	}
	if n := db1.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("DBSIZE of database 1 after the move: %d", n)
	}
	if n := db0.DBSize(ctx).Val(); n != 1 {
		t.Fatalf("DBSIZE of database 0 after the move: %d", n)
	}
	bad := redis.NewClient(&redis.Options{Addr: addr, DB: 16, MaxRetries: -1})
	defer bad.Close()
	if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "DB index is out of range") {
		t.Fatalf("a client of database 16 of 16: %v", err)
	}
}

// redis-py with db=1, and a redis:// URL naming database 1, connect and
// work in database 1.
func TestRedisPyDatabases(t *testing.T) {
	python := redisPy(t)
	_, addr := start(t, Config{})
	host, port, _ := net.SplitHostPort(addr)
	script := `
import sys, redis
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), db=1)
assert r.bf().add("f", "x") == 1
assert r.expire("f", 100)
assert 99 <= r.ttl("f") <= 100, r.ttl("f")
u = redis.Redis.from_url("redis://%s:%s/1" % (sys.argv[1], sys.argv[2]))
assert u.exists("f") == 1
assert u.bf().exists("f", "x") == 1
assert u.rename("f", "g")
assert u.copy("g", "h", destination_db=2)
z = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]))
assert z.exists("f", "g", "h") == 0
assert z.dbsize() == 0
assert redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), db=2).ttl("h") > 90
print("ok")
`
	out, err := exec.Command(python, "-c", script, host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
}

// Commands on a key whose time is up answer as on a missing key, whether
// or not a sweep removed it yet; an add recreates it without an expiry.
func TestExpiredKeyIsMissing(t *testing.T) {
	s, addr := start(t, Config{})
	c := dial(t, addr)
	for _, cmd := range [][]string{{"BF.ADD", "b", "x"}, {"CF.ADD", "c", "x"}, {"EXPIRE", "b", "10"}, {"EXPIRE", "c", "10"}} {
		c.run(t, cmd...)
	}
	s.store.testSkew.Store(11_000) // past both expiries
	for _, x := range []struct {
		args []string
		want string
	}{
		{[]string{"EXISTS", "b", "c"}, ":0\r\n"},
		{[]string{"TYPE", "b"}, "+none\r\n"},
		{[]string{"TTL", "b"}, ":-2\r\n"},
		{[]string{"BF.EXISTS", "b", "x"}, ":0\r\n"},
		{[]string{"BF.CARD", "b"}, ":0\r\n"},
		{[]string{"BF.INFO", "b"}, "-ERR not found\r\n"},
		{[]string{"CF.EXISTS", "c", "x"}, ":0\r\n"},
		{[]string{"CF.COUNT", "c", "x"}, ":0\r\n"},
		{[]string{"CF.INFO", "c"}, "-ERR not found\r\n"},
		{[]string{"KEYS", "*"}, "*0\r\n"},
		{[]string{"SCAN", "0"}, "*2\r\n$1\r\n0\r\n*0\r\n"},
		{[]string{"RENAME", "b", "z"}, "-ERR no such key\r\n"},
		{[]string{"COPY", "b", "z"}, ":0\r\n"},
		{[]string{"BF.ADD", "b", "y"}, ":1\r\n"},
		{[]string{"TTL", "b"}, ":-1\r\n"},
		{[]string{"BF.EXISTS", "b", "x"}, ":0\r\n"},
		{[]string{"BF.CARD", "b"}, ":1\r\n"},
		{[]string{"CF.RESERVE", "c", "100"}, "+OK\r\n"},
		{[]string{"TTL", "c"}, ":-1\r\n"},
	} {
		if got := c.run(t, x.args...); got != x.want {
			t.Errorf("%q: %q, want %q", x.args, got, x.want)
		}
	}
}

// The active expiry removes keys whose time is up without a command
// touching them, in every database, and counts them.
func TestActiveExpiryFreesUntouchedKeys(t *testing.T) {
	s, addr := start(t, Config{})
	c := dial(t, addr)
	const n = 300
	for db := range 3 {
		c.run(t, "SELECT", strconv.Itoa(db))
		for i := range n {
			c.run(t, "BF.ADD", fmt.Sprint("short", i), "x")
			c.run(t, "PEXPIRE", fmt.Sprint("short", i), strconv.Itoa(1+i%20))
		}
		c.run(t, "BF.ADD", "kept", "x")
		c.run(t, "EXPIRE", "kept", "1000")
		c.run(t, "BF.ADD", "forever", "x")
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.store.lenAll() > 6 {
		if time.Now().After(deadline) {
			t.Fatalf("%d keys left 30 s after %d of them expired", s.store.lenAll(), 3*n)
		}
		time.Sleep(10 * time.Millisecond) // polling the sweep's progress with a deadline
	}
	for db := range 3 {
		c.run(t, "SELECT", strconv.Itoa(db))
		if got := c.run(t, "DBSIZE"); got != ":2\r\n" {
			t.Fatalf("database %d: DBSIZE %q", db, got)
		}
		if got := c.run(t, "EXISTS", "kept", "forever"); got != ":2\r\n" {
			t.Fatalf("database %d: EXISTS kept forever %q", db, got)
		}
	}
	if got := s.store.expiry.expired.Load(); got != 3*n {
		t.Fatalf("expired keys counted %d, want %d", got, 3*n)
	}
	info := c.run(t, "INFO")
	if want := fmt.Sprintf("expired_keys:%d\r\n", 3*n); !strings.Contains(info, want) {
		t.Fatalf("INFO lacks %q:\n%s", want, info)
	}
	for db := range 3 {
		if want := fmt.Sprintf("db%d:keys=2,expires=1,avg_ttl=", db); !strings.Contains(info, want) {
			t.Fatalf("INFO keyspace lacks %q:\n%s", want, info)
		}
	}
}

// One sweep's work is bounded by its budget, however many keys are due.
func TestExpiryCycleIsBounded(t *testing.T) {
	s, err := New(Config{Logger: discard()}) // not serving: no sweep of its own
	if err != nil {
		t.Fatal(err)
	}
	st := s.store
	st.mu.Lock()
	past := time.Now().Add(-time.Hour).UnixMilli()
	for i := range 20000 {
		e := &entry{kind: kindFixed}
		e.expireAt.Store(past)
		st.dbs[0].setLocked(fmt.Sprint("k", i), e)
	}
	st.mu.Unlock()
	removed := s.expireCycle(0) // a budget spent by the first sample
	if removed > keysPerSample {
		t.Fatalf("a cycle with no time left removed %d keys, more than one sample of %d", removed, keysPerSample)
	}
	if removed == 0 {
		t.Fatal("a cycle removed nothing of 20000 keys due")
	}
}

// run runs a command on a raw connection and returns its whole reply.
func (c *rawConn) run(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := c.Write([]byte(resp(args...))); err != nil {
		t.Fatal(err)
	}
	return rawReply(t, c.r)
}

// keyspaceOps is a random run of commands over three databases and four
// keys of each type: adds, removals, expiries, renames, copies, moves,
// flushes. Expiries are far, so that none runs out during the test.
func keyspaceOps(seed uint64, n int) [][]string {
	rng := rand.New(rand.NewPCG(seed, 7))
	key := func(cf bool) string {
		if cf {
			return fmt.Sprint("c", rng.IntN(4))
		}
		return fmt.Sprint("b", rng.IntN(4))
	}
	var ops [][]string
	for i := range n {
		cf := rng.IntN(3) == 0
		k := key(cf)
		switch r := rng.IntN(100); {
		case r < 40 && cf:
			ops = append(ops, []string{"CF.ADD", k, fmt.Sprint("i", rng.IntN(50))})
		case r < 40:
			ops = append(ops, []string{"BF.ADD", k, fmt.Sprint("i", i)})
		case r < 45 && cf:
			ops = append(ops, []string{"CF.DEL", k, fmt.Sprint("i", rng.IntN(50))})
		case r < 50:
			ops = append(ops, []string{"SELECT", strconv.Itoa(rng.IntN(3))})
		case r < 58:
			ops = append(ops, []string{"RENAME", k, key(cf)})
		case r < 62:
			ops = append(ops, []string{"RENAMENX", k, key(cf)})
		case r < 68:
			op := []string{"COPY", k, key(cf), "DB", strconv.Itoa(rng.IntN(3))}
			if rng.IntN(2) == 0 {
				op = append(op, "REPLACE")
			}
			ops = append(ops, op)
		case r < 73:
			ops = append(ops, []string{"MOVE", k, strconv.Itoa(rng.IntN(3))})
		case r < 82:
			ops = append(ops, []string{"EXPIRE", k, strconv.Itoa(1000 + rng.IntN(1000))})
		case r < 85:
			ops = append(ops, []string{"PERSIST", k})
		case r < 88:
			ops = append(ops, []string{"PEXPIRE", k, "0"}) // removes it
		case r < 93:
			ops = append(ops, []string{"DEL", k})
		case r < 95:
			ops = append(ops, []string{"SWAPDB", strconv.Itoa(rng.IntN(3)), strconv.Itoa(rng.IntN(3))})
		case r < 97:
			ops = append(ops, []string{"FLUSHDB"})
		case r < 97 && rng.IntN(2) == 0:
			ops = append(ops, []string{"SWAPDB", strconv.Itoa(rng.IntN(3)), strconv.Itoa(rng.IntN(3))})
		case r < 98:
			ops = append(ops, []string{"FLUSHALL"})
		default:
			ops = append(ops, []string{"SAVE"})
		}
	}
	return ops
}

// keyspaceState is what a server holds, as commands read it: for each
// database and key, its type, whether it has an expiry, and its answers.
func keyspaceState(t *testing.T, addr string) string {
	t.Helper()
	c := dialEachReply(t, addr)
	var b strings.Builder
	for db := range 3 {
		c.run(t, "SELECT", strconv.Itoa(db))
		for k := range 4 {
			for _, cf := range []bool{false, true} {
				name := fmt.Sprint("b", k)
				if cf {
					name = fmt.Sprint("c", k)
				}
				typ := c.run(t, "TYPE", name)
				ttl := c.run(t, "TTL", name)
				if ttl != ":-1\r\n" && ttl != ":-2\r\n" {
					ttl = "set"
				}
				fmt.Fprintf(&b, "db%d %s %q ttl %s", db, name, typ, ttl)
				if typ == "+none\r\n" {
					b.WriteString("\n")
					continue
				}
				if cf {
					for i := range 50 {
						fmt.Fprintf(&b, " %s", strings.TrimSpace(c.run(t, "CF.COUNT", name, fmt.Sprint("i", i))))
					}
					b.WriteString(strings.ReplaceAll(c.run(t, "CF.INFO", name), "\r\n", " "))
				} else {
					b.WriteString(strings.ReplaceAll(c.run(t, "BF.INFO", name), "\r\n", " "))
				}
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// TestKeyspaceSurvivesKill: a random run of adds, expiries, renames,
// copies, moves and flushes over three databases, on a server in a process
// of its own under appendfsync always (saving every few milliseconds in
// one round, so that snapshots are taken in the middle of it, never in the
// other), is killed with SIGKILL once every reply has arrived; a server
// started on its directory holds exactly what a server in memory that ran
// the same commands holds.
func TestKeyspaceSurvivesKill(t *testing.T) {
	n := 1500
	if testing.Short() {
		n = 400
	}
	for round, saveEvery := range []time.Duration{-1, 5 * time.Millisecond} {
		t.Run(fmt.Sprint("save every ", saveEvery), func(t *testing.T) {
			dir := t.TempDir()
			cmd, addr := serverProcess(t, dir, "always", saveEvery)
			_, ref := start(t, Config{})
			c, r := dialEachReply(t, addr), dialEachReply(t, ref)
			for _, op := range keyspaceOps(uint64(round), n) {
				got, want := c.run(t, op...), r.run(t, op...)
				if op[0] == "SAVE" {
					continue // the reference has no directory
				}
				if got != want {
					t.Fatalf("%q: %q, the server in memory %q", op, got, want)
				}
			}
			cmd.Process.Kill()
			cmd.Wait()
			_, back := start(t, Config{DataDir: dir, AppendFsync: "always"})
			if got, want := keyspaceState(t, back), keyspaceState(t, ref); got != want {
				t.Fatalf("after kill -9 and a start the keyspace is\n%s\nthe server that did not stop holds\n%s", got, want)
			}
		})
	}
}

// A TTL, a rename and a database survive a save and a start without the
// log, from the data files alone; a key whose time is up by the start is
// dropped.
func TestKeyspaceInSnapshots(t *testing.T) {
	dir := t.TempDir()
	s, addr := start(t, Config{DataDir: dir, DisableAppendLog: true})
	c := dial(t, addr)
	shortAt := time.Now().Add(time.Hour).UnixMilli()
	for _, cmd := range [][]string{
		{"SELECT", "3"}, {"BF.ADD", "a", "x"}, {"EXPIRE", "a", "100000"}, {"RENAME", "a", "b"},
		{"CF.ADD", "c", "y"}, {"MOVE", "c", "15"}, {"BF.ADD", "short", "x"},
		{"PEXPIREAT", "short", strconv.FormatInt(shortAt, 10)}, {"SELECT", "0"}, {"BF.ADD", "a", "z"},
		{"SELECT", "5"}, {"BF.ADD", "swapped", "s"}, {"SWAPDB", "5", "6"},
	} {
		if got := c.run(t, cmd...); strings.HasPrefix(got, "-") {
			t.Fatalf("%q: %q", cmd, got)
		}
	}
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	s2, err := New(Config{DataDir: dir, DisableAppendLog: true, Logger: s.cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	st := s2.store
	if e := st.get(3, "short"); e == nil || e.expireAt.Load() != shortAt {
		t.Fatalf("database 3's key expiring at %d: %+v", shortAt, e)
	}
	if e := st.get(3, "b"); e == nil || !e.bloomTest([]byte("x")) || e.expireAt.Load() == 0 {
		t.Fatalf("database 3's renamed key with its TTL: %+v", e)
	}
	if e := st.get(15, "c"); e == nil || e.kind != kindCuckoo {
		t.Fatalf("database 15's moved key: %+v", e)
	}
	if e := st.get(0, "a"); e == nil || !e.bloomTest([]byte("z")) || e.bloomTest([]byte("x")) || e.expireAt.Load() != 0 {
		t.Fatalf("database 0's key: %+v", e)
	}
	if st.get(3, "a") != nil || st.get(0, "b") != nil {
		t.Fatal("a key is in a database it is not in")
	}
	if e := st.get(6, "swapped"); e == nil || st.get(5, "swapped") != nil || !e.bloomTest([]byte("s")) {
		t.Fatal("the key of database 5 is not in database 6 after SWAPDB 5 6, a save and a start")
	}
	s2.store.shutdown()
	// Once short's time is up, a start drops it: its file says when.
	s3, err := newAt(Config{DataDir: dir, DisableAppendLog: true, Logger: s.cfg.Logger}, time.UnixMilli(shortAt))
	if err != nil {
		t.Fatal(err)
	}
	defer s3.store.shutdown()
	if s3.store.dbs[3].keys["short"] != nil || s3.store.get(3, "b") == nil {
		t.Fatal("a start at the key's expiry kept it, or dropped another")
	}
}

// newAt is New with the store's clock at now.
func newAt(c Config, now time.Time) (*Server, error) {
	prev := testStoreClock
	testStoreClock = func() time.Time { return now }
	defer func() { testStoreClock = prev }()
	return New(c)
}

// A data directory that the ohbloom before databases and expiries wrote
// (version 2 key records, a log of version-1 records: testdata/datadir-v2,
// made by main's "ohbloom serve --appendfsync always": BF.ADD saved x,
// BF.RESERVE ns 0.01 100 NONSCALING, BF.ADD ns a, CF.ADD cf a twice, SAVE,
// then BF.ADD saved y, BF.ADD logged z, CF.DEL cf a, DEL ns, CF.ADD cf2 b,
// and kill -9) loads as database 0, without expiries; saved again, it
// loads the same.
func TestLoadsDataDirectoryOfVersion2(t *testing.T) {
	dir := t.TempDir()
	ents, err := os.ReadDir("testdata/datadir-v2")
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		b, err := os.ReadFile("testdata/datadir-v2/" + ent.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir+"/"+ent.Name(), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check := func(addr string) {
		t.Helper()
		c := dial(t, addr)
		for _, x := range []struct {
			args []string
			want string
		}{
			{[]string{"DBSIZE"}, ":4\r\n"},
			{[]string{"BF.MEXISTS", "saved", "x", "y"}, "*2\r\n:1\r\n:1\r\n"},
			{[]string{"BF.EXISTS", "logged", "z"}, ":1\r\n"},
			{[]string{"EXISTS", "ns"}, ":0\r\n"},
			{[]string{"CF.COUNT", "cf", "a"}, ":1\r\n"},
			{[]string{"CF.COUNT", "cf2", "b"}, ":1\r\n"},
			{[]string{"TTL", "saved"}, ":-1\r\n"},
			{[]string{"TTL", "cf"}, ":-1\r\n"},
			{[]string{"SELECT", "1"}, "+OK\r\n"},
			{[]string{"DBSIZE"}, ":0\r\n"},
		} {
			if got := c.run(t, x.args...); got != x.want {
				t.Errorf("%q: %q, want %q", x.args, got, x.want)
			}
		}
	}
	s, addr := start(t, Config{DataDir: dir, AppendFsync: "always"})
	check(addr)
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	s.Shutdown(context.Background())
	_, addr = start(t, Config{DataDir: dir, AppendFsync: "always"})
	check(addr)
}

// FuzzKeyRecord decodes arbitrary bytes as a key record (a data file's, of
// any version): an error or a key, never a panic, and no more memory than
// the bytes justify; a key decoded writes back, as version 3 with its
// database and expiry, to a record that decodes to the same.
func FuzzKeyRecord(f *testing.F) {
	for _, k := range []kind{kindScalable, kindFixed, kindCuckoo} {
		e := fuzzEntry(f, k)
		e.expireAt.Store(4102444800123)
		for _, db := range []int{-1, 0, 7} {
			var b bytes.Buffer
			if _, err := writeRecordIn(&b, db, "key", e); err != nil {
				f.Fatal(err)
			}
			f.Add(b.Bytes())
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		before := allocated()
		name, db, e, err := readRecord(bytes.NewReader(data))
		if n := allocated() - before; n > 3<<20+8*uint64(len(data)) {
			t.Fatalf("decoding %d bytes allocated %d", len(data), n)
		}
		if err != nil {
			return
		}
		var b bytes.Buffer
		if _, err := writeRecordIn(&b, db, name, e); err != nil {
			t.Fatal(err)
		}
		name2, db2, e2, err := readRecord(&b)
		if err != nil || name2 != name || db2 != db || e2.expireAt.Load() != e.expireAt.Load() || e2.kind != e.kind {
			t.Fatalf("written back and read: %q %d %v, %v; was %q %d %v", name2, db2, e2, err, name, db, e)
		}
	})
}

// fuzzEntry is a small key of kind k with an item in it.
func fuzzEntry(f *testing.F, k kind) *entry {
	s, err := New(Config{Logger: discard()})
	if err != nil {
		f.Fatal(err)
	}
	var e *entry
	switch k {
	case kindScalable:
		e, err = s.newBloom(bloomOptions{capacity: 10, errorRate: 0.01, expansion: 2})
	case kindFixed:
		e, err = s.newBloom(bloomOptions{capacity: 10, errorRate: 0.01, expansion: 2, nonScaling: true})
	default:
		e, err = s.newCuckoo(redisbloom.DefaultCuckooConfig(10))
	}
	if err != nil {
		f.Fatal(err)
	}
	e.initSeed()
	return e
}

// A key the sweep removed stays removed after kill -9, whether its data
// file was saved or not, and the next save removes that file.
func TestExpiredKeyStaysGoneAfterKill(t *testing.T) {
	dir := t.TempDir()
	cmd, addr := serverProcess(t, dir, "always", -1)
	c := dial(t, addr)
	for _, op := range [][]string{
		{"BF.ADD", "saved", "x"}, {"SELECT", "2"}, {"BF.ADD", "logged", "x"}, {"SELECT", "0"}, {"BF.ADD", "keep", "x"},
		{"SAVE"}, {"PEXPIRE", "saved", "30"}, {"SELECT", "2"}, {"PEXPIRE", "logged", "30"},
	} {
		if got := c.run(t, op...); strings.HasPrefix(got, "-") {
			t.Fatalf("%q: %q", op, got)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for !sweptBoth(t, c) {
		if time.Now().After(deadline) {
			t.Fatal("the sweep did not remove the two keys in 30 s")
		}
		time.Sleep(10 * time.Millisecond) // polling the sweep with a deadline
	}
	cmd.Process.Kill()
	cmd.Wait()
	s, addr := start(t, Config{DataDir: dir, AppendFsync: "always"})
	c = dial(t, addr)
	if got := c.run(t, "EXISTS", "saved", "keep"); got != ":1\r\n" {
		t.Fatalf("database 0 after the kill: EXISTS saved keep %q", got)
	}
	c.run(t, "SELECT", "2")
	if got := c.run(t, "DBSIZE"); got != ":0\r\n" {
		t.Fatalf("database 2 after the kill: DBSIZE %q", got)
	}
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.store.path(0, "saved")); !os.IsNotExist(err) {
		t.Fatalf("the expired key's data file after a save: %v", err)
	}
}

// sweptBoth reports whether the keys of TestExpiredKeyStaysGoneAfterKill
// are gone from the map, not only from the commands' view: DBSIZE counts
// expired keys not yet removed, as Redis's does.
func sweptBoth(t *testing.T, c *rawConn) bool {
	c.run(t, "SELECT", "0")
	n0 := c.run(t, "DBSIZE")
	c.run(t, "SELECT", "2")
	n2 := c.run(t, "DBSIZE")
	return n0 == ":1\r\n" && n2 == ":0\r\n"
}
