package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ohbloom/ohbloom"
	"github.com/redis/go-redis/v9"
)

// Several clients at once, then kill -9. With one client the log records
// the changes in the order they were made; with several, two commands on
// the same key run at once on different event loops and goroutines, and
// the order in which the log records them must still be the order in
// which they changed the keyspace, or the replay after a crash builds
// another keyspace than the one the clients were answered from (as it
// did: a key removed and made again got the items of adds to its old
// self, TestChangeRacingItsKeysReplacement).

// concurrentLoops is the GOMAXPROCS the server processes of these tests
// run with: four event loops (Config.EventLoops), as on an eight-core
// machine, so that commands of different clients run at once even on the
// two cores of CI.
const concurrentLoops = "8"

// jitterEnv, set for the server processes of these tests ("n,µs"), makes
// the record of one change in n wait up to µs microseconds
// (changeRecordHook), as a thread the kernel deschedules there would:
// the orders of commands that a busy machine makes once in a long while,
// made in every run ("0,0" turns it off). Without it the churn round of
// TestConcurrentClientsSurviveKill did not meet the race it was written
// for (TestChangeRacingItsKeysReplacement) in runs on the server before
// the fix; with it, it met it in every one.
const jitterEnv = "OHBLOOM_TEST_CHANGE_JITTER"

// jitter is jitterEnv's value unless the environment sets another; the
// churn round of TestConcurrentClientsSurviveKill pauses more often.
const jitter, churnJitter = "8,3000", "2,2000"

// recordHook, when set, runs as changeRecordHook does: a test sets it
// while its server runs (TestConcurrentAddsReplayInTheirOrder), which a
// plain write to changeRecordHook, read by the server's goroutines, could
// not do without a race.
var recordHook atomic.Pointer[func()]

func init() {
	var one, most int
	jitter := false
	if _, err := fmt.Sscanf(os.Getenv(jitterEnv), "%d,%d", &one, &most); err == nil && one > 0 && most > 0 {
		jitter = true
	}
	changeRecordHook = func() {
		if f := recordHook.Load(); f != nil {
			(*f)()
		}
		if jitter && rand.IntN(one) == 0 {
			time.Sleep(time.Duration(rand.IntN(most)) * time.Microsecond)
		}
	}
}

// setJitter sets jitterEnv to v for the server processes a test starts,
// unless the environment of the test sets it.
func setJitter(t *testing.T, v string) {
	if _, set := os.LookupEnv(jitterEnv); !set {
		t.Setenv(jitterEnv, v)
	}
}

// parsedReply is one RESP2 reply, parsed.
type parsedReply struct {
	kind  byte // '+', '-', ':', '$' or '*'
	text  string
	n     int64 // an integer; an array's length (-1: nil)
	elems []parsedReply
}

func (r parsedReply) isError() bool { return r.kind == '-' }

// readParsed reads one whole RESP2 reply. It returns an error, never
// fails the test: it runs on the clients' goroutines, and a kill makes it
// fail on purpose.
func readParsed(r *bufio.Reader) (parsedReply, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return parsedReply{}, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return parsedReply{}, fmt.Errorf("a reply line %q", line)
	}
	rep := parsedReply{kind: line[0], text: line[1 : len(line)-2]}
	switch rep.kind {
	case '+', '-':
		return rep, nil
	case ':':
		rep.n, err = strconv.ParseInt(rep.text, 10, 64)
		return rep, err
	case '$':
		n, err := strconv.Atoi(rep.text)
		if err != nil || n < 0 {
			return rep, err // a nil bulk string
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return rep, err
		}
		rep.text = string(b[:n])
		return rep, nil
	case '*':
		if rep.n, err = strconv.ParseInt(rep.text, 10, 64); err != nil {
			return rep, err
		}
		for range rep.n {
			e, err := readParsed(r)
			if err != nil {
				return rep, err
			}
			rep.elems = append(rep.elems, e)
		}
		return rep, nil
	}
	return rep, fmt.Errorf("a reply of type %q", rep.kind)
}

// step is what a client sends at once before it reads the replies: one
// command, or a MULTI block with its EXEC.
type step [][]string

// concurrentClient makes one client's random steps, over a few of the keys
// keyspaceState reads (BF keys b0 and b1, CF keys c0 and c1, databases 0
// and 1) that every client shares, so that they collide all the time. Its
// BF items are its own (bfItems lists them), its CF items i0-i49 are
// everyone's.
type concurrentClient struct {
	rng     *rand.Rand
	id      int
	n       int  // items made
	noFlush bool // no FLUSHALL (see TestConcurrentAcknowledgedSurviveKill)
	// keys and dbs are how many keys of each type and how many databases
	// its commands name.
	keys, dbs int
	bfItems   []string
	// dumps are DUMP payloads of a BF key and of a CF key (dumpsToRestore),
	// for RESTORE ... REPLACE: a key replaced in one command.
	dumps [2]string
}

func (g *concurrentClient) key(cf bool) string {
	if cf {
		return fmt.Sprint("c", g.rng.IntN(g.keys))
	}
	return fmt.Sprint("b", g.rng.IntN(g.keys))
}

func (g *concurrentClient) items(max int) []string {
	var items []string
	for range 1 + g.rng.IntN(max) {
		item := fmt.Sprintf("x%d.%d", g.id, g.n)
		g.n++
		g.bfItems = append(g.bfItems, item)
		items = append(items, item)
	}
	return items
}

func (g *concurrentClient) db() string { return strconv.Itoa(g.rng.IntN(g.dbs)) }

// command is one random command; inTx leaves out what a MULTI block does
// not hold here (SELECT, SAVE, FLUSHALL).
func (g *concurrentClient) command(inTx bool) []string {
	for {
		cf := g.rng.IntN(3) == 0
		k := g.key(cf)
		switch r := g.rng.IntN(100); {
		case r < 12 && cf:
			return []string{"CF.ADD", k, fmt.Sprint("i", g.rng.IntN(50))}
		case r < 18 && cf:
			return []string{"CF.ADDNX", k, fmt.Sprint("i", g.rng.IntN(50))}
		case r < 26 && cf:
			return []string{"CF.DEL", k, fmt.Sprint("i", g.rng.IntN(50))}
		case r < 28 && cf:
			return []string{"CF.RESERVE", k, strconv.Itoa(100 + g.rng.IntN(5000))}
		case r < 26 && r%3 == 0:
			return append([]string{"BF.ADD", k}, g.items(1)...)
		case r < 26 && r%3 == 1:
			return append([]string{"BF.MADD", k}, g.items(4)...)
		case r < 26:
			return append([]string{"BF.INSERT", k, "ITEMS"}, g.items(4)...)
		case r < 28:
			return []string{"BF.RESERVE", k, "0.01", strconv.Itoa(100 + g.rng.IntN(5000))}
		case r < 30:
			return []string{"DUMP", k}
		case r < 33:
			if inTx {
				continue
			}
			return []string{"SELECT", g.db()}
		case r < 40:
			return []string{"RENAME", k, g.key(cf)}
		case r < 43:
			return []string{"RENAMENX", k, g.key(cf)}
		case r < 49:
			op := []string{"COPY", k, g.key(cf), "DB", g.db()}
			if g.rng.IntN(2) == 0 {
				op = append(op, "REPLACE")
			}
			return op
		case r < 54:
			return []string{"MOVE", k, g.db()}
		case r < 61:
			return []string{"EXPIRE", k, strconv.Itoa(1000 + g.rng.IntN(1000))}
		case r < 64:
			return []string{"PERSIST", k}
		case r < 68:
			return []string{"PEXPIRE", k, "0"} // removes it
		case r < 75:
			return []string{"DEL", k, g.key(g.rng.IntN(2) == 0)}
		case r < 77:
			op := []string{"RESTORE", k, "0", g.dumps[b2i(cf)]}
			if g.rng.IntN(4) > 0 {
				op = append(op, "REPLACE")
			}
			return op
		case r < 79:
			return []string{"SWAPDB", g.db(), g.db()}
		case r < 82:
			return []string{"FLUSHDB"}
		case r < 83:
			if inTx || g.noFlush {
				continue
			}
			return []string{"FLUSHALL"}
		case r < 84:
			if inTx {
				continue
			}
			return []string{"SAVE"}
		default:
			// Adds again: most commands of a real load are adds, and
			// adds are what a move or a removal races.
			if cf {
				return []string{"CF.ADD", k, fmt.Sprint("i", g.rng.IntN(50))}
			}
			return append([]string{"BF.MADD", k}, g.items(3)...)
		}
	}
}

// churnSteps is a run of a client of the churn round. Client 0 removes b0
// or c0 (DEL, PEXPIRE 0, FLUSHDB, FLUSHALL, RESTORE REPLACE) and adds to
// it at once, making it again, n/4 times; the others only add to both,
// n times, and so go on adding after client 0's last removals: the adds
// to a key's old self that were on their way to the log then, if they are
// logged after the key was made again, give a replay a key that the live
// server does not hold. Nothing else runs: a RENAME, COPY, MOVE, SWAPDB
// or MULTI on a key waits until every command on it has ended, and no
// other command on it runs meanwhile.
func (g *concurrentClient) churnSteps(n int) []step {
	var steps []step
	add := func(cf bool) []string {
		if cf {
			if g.rng.IntN(6) == 0 {
				return []string{"CF.DEL", "c0", fmt.Sprint("i", g.rng.IntN(50))}
			}
			return []string{"CF.ADD", "c0", fmt.Sprint("i", g.rng.IntN(50))}
		}
		if g.rng.IntN(2) == 0 {
			return append([]string{"BF.ADD", "b0"}, g.items(1)...)
		}
		return append([]string{"BF.MADD", "b0"}, g.items(3)...)
	}
	if g.id > 0 {
		for range n {
			steps = append(steps, step{add(g.rng.IntN(3) == 0)})
		}
		return steps
	}
	for i := range n / 4 {
		cf := i%2 == 1
		k := []string{"b0", "c0"}[i%2]
		removal := [][]string{
			{"DEL", k}, {"PEXPIRE", k, "0"}, {"FLUSHDB"}, {"FLUSHALL"},
			{"RESTORE", k, "0", g.dumps[b2i(cf)], "REPLACE"},
		}[g.rng.IntN(5)]
		steps = append(steps, step{removal}, step{add(cf)})
	}
	return steps
}

// steps is the client's whole run: its commands, one in ten of its steps
// a MULTI block of two to four.
func (g *concurrentClient) steps(n int) []step {
	steps := make([]step, 0, n)
	for range n {
		if g.rng.IntN(10) > 0 {
			steps = append(steps, step{g.command(false)})
			continue
		}
		block := step{{"MULTI"}}
		for range 2 + g.rng.IntN(3) {
			block = append(block, g.command(true))
		}
		steps = append(steps, append(block, []string{"EXEC"}))
	}
	return steps
}

// runSteps sends every step at once, from a goroutine of its own, and
// reads the replies meanwhile: under appendfsync always a connection runs
// nothing after a change until it is fsynced, and its next commands are
// then waiting in the server already, so that every connection the fsync
// releases runs its next command at the same instant as the others. reply
// is told of every command's reply (the commands of a MULTI block with
// their EXEC's elements), in order. It returns once every reply is read,
// or at the first error (the kill's).
func runSteps(conn net.Conn, steps []step, reply func(cmd []string, r parsedReply)) error {
	go func() {
		w := bufio.NewWriter(conn)
		for _, st := range steps {
			for _, cmd := range st {
				w.WriteString(resp(cmd...))
			}
		}
		w.Flush() // an error is the reader's too
	}()
	r := bufio.NewReader(conn)
	for _, st := range steps {
		var replies []parsedReply
		for range st {
			rep, err := readParsed(r)
			if err != nil {
				return err
			}
			replies = append(replies, rep)
		}
		if len(st) == 1 {
			reply(st[0], replies[0])
			continue
		}
		exec := replies[len(replies)-1]
		if exec.kind != '*' || len(exec.elems) != len(st)-2 {
			return fmt.Errorf("%q: EXEC answered %+v", st, exec)
		}
		for i, cmd := range st[1 : len(st)-1] {
			reply(cmd, exec.elems[i])
		}
	}
	return nil
}

// dialConcurrent opens a client's connection, closed when the test ends.
// Its deadline is far: a kill ends it, a hang fails the test.
func dialConcurrent(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(3 * time.Minute))
	return conn
}

// expectedError reports whether an error reply is one the random steps
// meet by design (a key missing, a key onto itself), not a failure.
func expectedError(text string) bool {
	for _, want := range []string{"ERR no such key", "ERR source and destination objects are the same", "ERR not found", "Not found", "ERR item exists", "BUSYKEY Target key name already exists."} {
		if text == want {
			return true
		}
	}
	return false
}

// dumpsToRestore are DUMP payloads of a BF key holding restoredItems and
// of a CF key holding i0-i4, taken from a server in memory.
func dumpsToRestore(t *testing.T) [2]string {
	t.Helper()
	_, addr := start(t, Config{})
	c := client(t, addr)
	ctx := context.Background()
	var out [2]string
	for i, cmd := range [][]any{append([]any{"BF.MADD", "k"}, restoredItems...), {"CF.INSERT", "k", "ITEMS", "i0", "i1", "i2", "i3", "i4"}} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
		d, err := c.Dump(ctx, "k").Result()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = d
		c.Del(ctx, "k")
	}
	return out
}

// restoredItems are the items of the BF key RESTORE makes.
var restoredItems = []any{"r0", "r1", "r2", "r3", "r4"}

// concurrentState is keyspaceState with, for each BF key, which of items
// it holds.
func concurrentState(t *testing.T, addr string, items []string) string {
	t.Helper()
	// One line a key: TTL's reply, as keyspaceState keeps it, ends in CRLF.
	state := strings.ReplaceAll(keyspaceState(t, addr), "\r\n", " ")
	c := dial(t, addr)
	var b strings.Builder
	for db := range 3 {
		c.run(t, "SELECT", strconv.Itoa(db))
		for k := range 4 {
			name := fmt.Sprint("b", k)
			got := c.run(t, append([]string{"BF.MEXISTS", name}, items...)...)
			fmt.Fprintf(&b, "db%d %s holds ", db, name)
			if !strings.HasPrefix(got, "*") {
				fmt.Fprintf(&b, "%q\n", got) // missing: not found
				continue
			}
			lines := strings.Split(got, "\r\n")[1:]
			for i, item := range items {
				if lines[i] == ":1" {
					b.WriteString(item + " ")
				}
			}
			b.WriteString("\n")
		}
	}
	return state + b.String()
}

// stateDiff is the lines where two states differ.
func stateDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			fmt.Fprintf(&b, "after the restart:  %s\nthe live server:    %s\n", gl, wl)
		}
	}
	return b.String()
}

// TestConcurrentClientsSurviveKill: clients at once, each a random run of
// adds, removals, expiries, renames, copies, moves, database swaps,
// flushes, MULTI blocks and SAVEs over the same few keys, on a server in
// a process of its own (under appendfsync always, saving every few
// milliseconds in one round and never in another; and under everysec,
// whose replies do not wait for the disk, so that the clients' commands
// meet far more often). Once every client has read every reply, and
// every record is fsynced, the keyspace the server holds is read, the
// server is killed with SIGKILL, and a server started on its directory
// must hold exactly that keyspace: what the clients were answered from.
func TestConcurrentClientsSurviveKill(t *testing.T) {
	clients, scale := 6, 1
	if testing.Short() {
		clients, scale = 4, 4
	}
	t.Setenv("GOMAXPROCS", concurrentLoops) // the server processes'
	for round, r := range []struct {
		policy    string
		saveEvery time.Duration
		steps     int
		churn     bool // churnSteps rather than steps
	}{
		{"always", -1, 300, false}, {"always", 3 * time.Millisecond, 300, false},
		{"everysec", -1, 500, false}, {"everysec", -1, 1000, true},
	} {
		n := r.steps / scale
		name := fmt.Sprint(r.policy, " save every ", r.saveEvery)
		if r.churn {
			name += " churn"
		}
		t.Run(name, func(t *testing.T) {
			if r.churn {
				setJitter(t, churnJitter)
			} else {
				setJitter(t, jitter)
			}
			dir := t.TempDir()
			cmd, addr := serverProcess(t, dir, r.policy, r.saveEvery)
			items := []string{}
			for _, item := range restoredItems {
				items = append(items, item.(string))
			}
			dumps := dumpsToRestore(t)
			var runs [][]step
			for c := range clients {
				g := &concurrentClient{rng: rand.New(rand.NewPCG(uint64(round), uint64(c))), id: c, dumps: dumps, keys: 2, dbs: 2}
				if r.churn {
					runs = append(runs, g.churnSteps(n))
				} else {
					runs = append(runs, g.steps(n))
				}
				items = append(items, g.bfItems...)
			}
			conns := make([]net.Conn, clients)
			for c := range conns {
				conns[c] = dialConcurrent(t, addr)
			}
			var wg sync.WaitGroup
			var errorReplies atomic.Int64
			for c, steps := range runs {
				wg.Go(func() {
					err := runSteps(conns[c], steps, func(cmd []string, r parsedReply) {
						if r.isError() && !expectedError(r.text) {
							t.Errorf("client %d: %q: %s", c, cmd[:min(len(cmd), 3)], r.text)
						}
						if r.isError() {
							errorReplies.Add(1)
						}
					})
					if err != nil {
						t.Errorf("client %d: %v", c, err)
					}
				})
			}
			wg.Wait() // every reply read
			if t.Failed() {
				t.FailNow()
			}
			if r.policy != "always" {
				// Every record durable: a change's reply under always
				// waits for the fsync of every record before its own.
				c := dial(t, addr)
				for _, cmd := range [][]string{{"CONFIG", "SET", "appendfsync", "always"}, {"SELECT", "9"}, {"BF.ADD", "fence", "x"}} {
					if got := c.do(t, cmd...); got[0] == '-' {
						t.Fatalf("%q: %s", cmd, got)
					}
				}
			}
			live := concurrentState(t, addr, items)
			cmd.Process.Kill()
			cmd.Wait()
			_, back := start(t, Config{DataDir: dir, AppendFsync: "always"})
			if got := concurrentState(t, back, items); got != live {
				t.Fatalf("after kill -9 and a start the keyspace differs from what the live server held:\n%s", stateDiff(got, live))
			}
			t.Logf("%d clients, %d steps each, %d error replies (missing keys)", clients, n, errorReplies.Load())
		})
	}
}

// stableClient makes the steps of a client that only adds, to keys no
// command removes: BF keys s0 and s1 and CF keys t0 and t1 of database 5,
// which the other clients of TestConcurrentAcknowledgedSurviveKill never
// select, swap or flush. It copies them into the others' keys too.
type stableClient struct {
	rng *rand.Rand
	id  int
	n   int            // items made
	bf  map[string]int // BF items made for each key
	cf  map[string]int // CF items sent to each key
}

func (g *stableClient) command() []string {
	k := strconv.Itoa(g.rng.IntN(2))
	items := func(max int) []string {
		var items []string
		for range 1 + g.rng.IntN(max) {
			items = append(items, fmt.Sprintf("y%d.%d", g.id, g.n))
			g.n++
			g.bf["s"+k]++
		}
		return items
	}
	cfItems := func(max int) []string {
		var items []string
		for range 1 + g.rng.IntN(max) {
			items = append(items, fmt.Sprint("u", g.rng.IntN(200)))
			g.cf["t"+k]++
		}
		return items
	}
	switch r := g.rng.IntN(100); {
	case r < 30:
		return append([]string{"BF.ADD", "s" + k}, items(1)...)
	case r < 45:
		return append([]string{"BF.MADD", "s" + k}, items(4)...)
	case r < 55:
		return append([]string{"BF.INSERT", "s" + k, "ITEMS"}, items(4)...)
	case r < 75:
		return append([]string{"CF.ADD", "t" + k}, cfItems(1)...)
	case r < 85:
		return append([]string{"CF.INSERT", "t" + k, "ITEMS"}, cfItems(3)...)
	case r < 90:
		src, dst := "s", "b"
		if r%2 == 0 {
			src, dst = "t", "c"
		}
		return []string{"COPY", src + k, fmt.Sprint(dst, g.rng.IntN(2)), "DB", strconv.Itoa(g.rng.IntN(2)), "REPLACE"}
	case r < 95:
		return []string{"EXPIRE", []string{"s", "t"}[r%2] + k, "100000"}
	default:
		return []string{"PERSIST", []string{"s", "t"}[r%2] + k}
	}
}

func (g *stableClient) steps(n int) []step {
	steps := []step{{{"SELECT", "5"}}}
	for range n {
		if g.rng.IntN(8) > 0 {
			steps = append(steps, step{g.command()})
			continue
		}
		block := step{{"MULTI"}}
		for range 2 + g.rng.IntN(2) {
			block = append(block, g.command())
		}
		steps = append(steps, append(block, []string{"EXEC"}))
	}
	return steps
}

// acked is what the stable clients were answered: the BF items of each
// key, and how many times each CF item was added to each key.
type acked struct {
	mu sync.Mutex
	bf map[string][]string
	cf map[string]map[string]int
}

// note records the acknowledgements in the reply r to cmd.
func (a *acked) note(cmd []string, r parsedReply) error {
	var items []string
	switch cmd[0] {
	case "BF.ADD", "BF.MADD", "CF.ADD":
		items = cmd[2:]
	case "BF.INSERT", "CF.INSERT":
		items = cmd[3:]
	default:
		if r.isError() {
			return fmt.Errorf("%q: %s", cmd, r.text)
		}
		return nil
	}
	replies := []parsedReply{r}
	if r.kind == '*' {
		replies = r.elems
	}
	if len(replies) != len(items) {
		return fmt.Errorf("%q: %d replies", cmd, len(replies))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, rep := range replies {
		switch {
		case rep.kind != ':':
			return fmt.Errorf("%q: %s", cmd, rep.text)
		case cmd[0][0] == 'B':
			a.bf[cmd[1]] = append(a.bf[cmd[1]], items[i])
		case rep.n == 1:
			if a.cf[cmd[1]] == nil {
				a.cf[cmd[1]] = map[string]int{}
			}
			a.cf[cmd[1]][items[i]]++
		}
	}
	return nil
}

// TestConcurrentAcknowledgedSurviveKill: the clients of
// TestConcurrentClientsSurviveKill (without FLUSHALL) and clients that
// only add, to keys of their own that the others copy but never touch,
// run at once on a server under appendfsync always that saves every few
// milliseconds, until SIGKILL lands in the middle of them (once the
// adders have had half their steps answered). A server started on its
// directory holds every item an adder was answered for (CF: at least as
// many copies as were acknowledged), and no key counts more items than
// were sent to it (a change replayed twice would).
func TestConcurrentAcknowledgedSurviveKill(t *testing.T) {
	others, adders, n := 4, 2, 400
	if testing.Short() {
		others, adders, n = 3, 2, 100
	}
	t.Setenv("GOMAXPROCS", concurrentLoops) // the server process's
	setJitter(t, jitter)
	dir := t.TempDir()
	cmd, addr := serverProcess(t, dir, "always", 3*time.Millisecond)
	dumps := dumpsToRestore(t)
	var runs [][]step
	for c := range others {
		g := &concurrentClient{rng: rand.New(rand.NewPCG(7, uint64(c))), id: c, noFlush: true, dumps: dumps, keys: 2, dbs: 2}
		runs = append(runs, g.steps(n))
	}
	sentBF, sentCF := map[string]int{}, map[string]int{}
	for c := range adders {
		g := &stableClient{rng: rand.New(rand.NewPCG(8, uint64(c))), id: c, bf: sentBF, cf: sentCF}
		runs = append(runs, g.steps(n))
	}
	conns := make([]net.Conn, len(runs))
	for c := range conns {
		conns[c] = dialConcurrent(t, addr)
	}
	ack := &acked{bf: map[string][]string{}, cf: map[string]map[string]int{}}
	var killed atomic.Bool
	var answered atomic.Int64 // steps of the adders answered
	kill := sync.OnceFunc(func() {
		killed.Store(true)
		cmd.Process.Kill()
	})
	var wg sync.WaitGroup
	for c, steps := range runs {
		adder := c >= others
		wg.Go(func() {
			err := runSteps(conns[c], steps, func(cmd []string, r parsedReply) {
				switch {
				case adder:
					if err := ack.note(cmd, r); err != nil {
						t.Errorf("adder %d: %v", c, err)
					}
					if answered.Add(1) >= int64(adders*n/2) {
						kill()
					}
				case r.isError() && !expectedError(r.text):
					t.Errorf("client %d: %q: %s", c, cmd[:min(len(cmd), 3)], r.text)
				}
			})
			if err != nil && !killed.Load() {
				t.Errorf("client %d: %v", c, err)
			}
		})
	}
	wg.Wait()
	if !killed.Load() {
		t.Fatal("every step was answered before the kill")
	}
	cmd.Wait()
	_, back := start(t, Config{DataDir: dir, AppendFsync: "always"})
	c := client(t, back, func(o *redis.Options) { o.DB = 5 })
	ctx := context.Background()
	items := 0
	for key, want := range ack.bf {
		got, err := c.BFMExists(ctx, key, toAny(want)...).Result()
		if err != nil {
			t.Fatalf("BF.MEXISTS %s: %v", key, err)
		}
		for i, ok := range got {
			if !ok {
				t.Errorf("%s lost %s, acknowledged", key, want[i])
			}
		}
		items += len(want)
		if card := c.BFCard(ctx, key).Val(); card > int64(sentBF[key]) {
			t.Errorf("%s counts %d items, %d were sent", key, card, sentBF[key])
		}
	}
	for key, want := range ack.cf {
		for item, n := range want {
			if got, err := c.CFCount(ctx, key, item).Result(); err != nil || got < int64(n) {
				t.Errorf("%s counts %s %d times (%v), acknowledged %d", key, item, got, err, n)
			}
			items += n
		}
		if info, err := c.CFInfo(ctx, key).Result(); err != nil || info.NumItemsInserted > int64(sentCF[key]) {
			t.Errorf("%s counts %d items (%v), %d were sent", key, info.NumItemsInserted, err, sentCF[key])
		}
	}
	t.Logf("%d acknowledged items of %d adders checked after a kill -9 amid %d other clients", items, adders, others)
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// parkedIn reports whether a goroutine waits for a lock (lock: the
// sync function it waits in) in function fn.
func parkedIn(fn, lock string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) && strings.Contains(g, lock) {
			return true
		}
	}
	return false
}

// startOnCopy starts a server on a copy of the data directory dir, as a
// crash would leave it once every reply under always is in (every record
// fsynced), and returns its address.
func startOnCopy(t *testing.T, dir string) string {
	t.Helper()
	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	_, addr := start(t, Config{DataDir: crashed, AppendFsync: "always"})
	return addr
}

// TestChangeRacingItsKeysReplacement: a command found its key, and before
// it changed the key and logged the change, another client removed the
// key and made a new one of the same name (here the first command waits
// for the key's lock, held as a save holds it while it copies the
// filter; a descheduled thread makes the same gap). The change is to a
// key that is gone, and after a crash it must not appear in the new one:
// the server that ran on and the one started on its directory (its log
// fsynced, copied as a crash leaves it) hold the same.
func TestChangeRacingItsKeysReplacement(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cf      bool
		replace [][]string // "$dump" is a DUMP payload of a key of the same type
	}{
		{"BF FLUSHDB", false, [][]string{{"FLUSHDB"}, {"BF.ADD", "k", "y"}}},
		{"BF DEL", false, [][]string{{"DEL", "k"}, {"BF.ADD", "k", "y"}}},
		{"BF PEXPIRE 0", false, [][]string{{"PEXPIRE", "k", "0"}, {"BF.RESERVE", "k", "0.01", "1000"}}},
		{"BF RESTORE REPLACE", false, [][]string{{"RESTORE", "k", "0", "$dump", "REPLACE"}}},
		{"CF FLUSHALL", true, [][]string{{"FLUSHALL"}, {"CF.ADD", "k", "y"}}},
		{"CF DEL", true, [][]string{{"DEL", "k"}, {"CF.ADD", "k", "y"}}},
		{"CF RESTORE REPLACE", true, [][]string{{"RESTORE", "k", "0", "$dump", "REPLACE"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, addr := start(t, Config{DataDir: dir, AppendFsync: "always", SaveInterval: -1})
			a, b := dial(t, addr), dial(t, addr)
			add, check := "BF.ADD", "BF.EXISTS"
			if tc.cf {
				add, check = "CF.ADD", "CF.COUNT"
			}
			for _, cmd := range [][]string{{add, "k", "old"}, {add, "other", "z"}} {
				if got := a.do(t, cmd...); got != ":1" {
					t.Fatalf("%q: %s", cmd, got)
				}
			}
			dump, err := client(t, addr).Dump(context.Background(), "other").Result()
			if err != nil {
				t.Fatal(err)
			}
			e := s.store.get(0, "k")
			waitsIn, lock := "(*Server).addItems", "sync.(*RWMutex).RLock"
			if tc.cf {
				e.mu.Lock()
				waitsIn, lock = "(*Server).cfAdds", "sync.(*Mutex)"
			} else {
				e.adding.Lock()
			}
			if _, err := a.Write([]byte(resp(add, "k", "x"))); err != nil {
				t.Fatal(err)
			}
			waitFor(t, add+" to wait for the key's lock", func() bool { return parkedIn(waitsIn, lock) })
			for _, cmd := range tc.replace {
				cmd = slices.Clone(cmd)
				for i := range cmd {
					if cmd[i] == "$dump" {
						cmd[i] = dump
					}
				}
				if got := b.do(t, cmd...); got[0] == '-' {
					t.Fatalf("%q: %s", cmd[:2], got)
				}
			}
			if tc.cf {
				e.mu.Unlock()
			} else {
				e.adding.Unlock()
			}
			if got := a.reply(t); got != ":1" {
				t.Fatalf("%s k x, the key replaced meanwhile: %s", add, got)
			}
			state := func(c *rawConn) string {
				var out []string
				for _, item := range []string{"x", "y", "z", "old"} {
					out = append(out, item+" "+c.do(t, check, "k", item))
				}
				return strings.Join(out, ", ")
			}
			live := state(b)
			if got := state(dial(t, startOnCopy(t, dir))); got != live {
				t.Fatalf("k after a crash: %s; the server that ran on: %s", got, live)
			}
		})
	}
}

// TestConcurrentAddsReplayInTheirOrder: two clients add to one BF key at
// once, and the second one's item is found present because of the bits
// the first one's add has just set, before the first add's record is in
// the log (here the first add waits there, in changeRecordHook; a
// descheduled thread makes the same gap). The log must hold the adds in
// the order they were applied: replayed the other way round, the second
// item counted as new and the first too, one more than the live server's
// "Number of items inserted", and in a growing filter the items could
// land in other stages than they did live.
func TestConcurrentAddsReplayInTheirOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reserve []string
	}{
		{"fixed", []string{"BF.RESERVE", "k", "0.5", "1000", "NONSCALING"}},
		{"scalable", []string{"BF.RESERVE", "k", "0.5", "1000", "EXPANSION", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, addr := start(t, Config{DataDir: dir, AppendFsync: "always", SaveInterval: -1})
			a, b := dial(t, addr), dial(t, addr)
			if got := a.do(t, tc.reserve...); got != "+OK" {
				t.Fatalf("%q: %s", tc.reserve, got)
			}
			// A dense filter, so that many items miss only a few bits.
			for i := range 9 {
				cmd := []string{"BF.MADD", "k"}
				for j := range 100 {
					cmd = append(cmd, fmt.Sprint("fill", i, ".", j))
				}
				if got := a.run(t, cmd...); got[0] != '*' {
					t.Fatalf("BF.MADD: %q", got)
				}
			}
			// Two items whose adds find different things in the two
			// orders: the second is found present once the first is in,
			// but the first is not once the second is, so that replayed
			// second first, both count (found on copies of the filter).
			e := s.store.get(0, "k")
			var saved bytes.Buffer
			if _, err := e.writeFilter(&saved); err != nil {
				t.Fatal(err)
			}
			with := func(items ...string) interface{ TestHash(uint64) bool } {
				var f interface {
					io.ReaderFrom
					TestHash(uint64) bool
					AddHash(uint64)
				}
				if e.kind == kindFixed {
					f = new(ohbloom.AtomicFilter)
				} else {
					f = new(ohbloom.AtomicScalableFilter)
				}
				if _, err := f.ReadFrom(bytes.NewReader(saved.Bytes())); err != nil {
					t.Fatal(err)
				}
				for _, item := range items {
					f.AddHash(e.hash([]byte(item)))
				}
				return f
			}
			present := func(f interface{ TestHash(uint64) bool }, item string) bool {
				return f.TestHash(e.hash([]byte(item)))
			}
			base := with()
			var first, second string
		search:
			for i := range 300 {
				f := fmt.Sprint("f", i)
				if present(base, f) {
					continue
				}
				withF := with(f)
				for j := range 20000 {
					c := fmt.Sprint("s", j)
					if !present(base, c) && present(withF, c) && !present(with(c), f) {
						first, second = f, c
						break search
					}
				}
			}
			if first == "" {
				t.Fatal("no two items whose adds depend on their order")
			}

			// The first add waits off its loop for the key's lock, held as
			// a save holds it, so that it pauses in the hook off the loop.
			e.adding.Lock()
			if _, err := a.Write([]byte(resp("BF.ADD", "k", first))); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "BF.ADD to wait for the key's lock", func() bool { return parkedIn("(*Server).addItems", "sync.(*RWMutex).RLock") })
			reached, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			hook := func() { once.Do(func() { close(reached); <-release }) }
			recordHook.Store(&hook)
			t.Cleanup(func() { recordHook.Store(nil) })
			e.adding.Unlock()
			<-reached // the first add is applied; its record waits
			recordHook.Store(nil)

			if _, err := b.Write([]byte(resp("BF.ADD", "k", second))); err != nil {
				t.Fatal(err)
			}
			close(release)
			if got := a.reply(t); got != ":1" {
				t.Fatalf("BF.ADD k %s: %s", first, got)
			}
			if got := b.reply(t); got != ":0" {
				t.Fatalf("BF.ADD k %s, its bits set by the first: %s", second, got)
			}
			state := func(c *rawConn) string {
				return strings.ReplaceAll(c.run(t, "BF.INFO", "k")+c.run(t, "BF.MEXISTS", "k", first, second), "\r\n", " ")
			}
			live := state(b)
			if got := state(dial(t, startOnCopy(t, dir))); got != live {
				t.Fatalf("k after a crash:\n%s\nthe server that ran on:\n%s", got, live)
			}
		})
	}
}
