package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// start runs a server on a loopback port for the test.
func start(t *testing.T, c Config) (*Server, string) {
	t.Helper()
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	// The event: Serve owns the listener. A Shutdown before it would leave
	// the listener open (accepting into its backlog) until the goroutine
	// runs, and a test of a shut-down server would meet it.
	waitFor(t, "Serve to start", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.serving
	})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s, ln.Addr().String()
}

func client(t *testing.T, addr string, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: addr, MaxRetries: -1}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}

func TestBloomCommandsWithGoRedis(t *testing.T) {
	_, addr := start(t, Config{})
	ctx := context.Background()
	rdb := client(t, addr)

	if err := rdb.BFReserve(ctx, "blocks", 0.01, 10_000).Err(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, rdb.BFReserve(ctx, "blocks", 0.01, 10_000).Err(), "ERR item exists")
	wantErr(t, rdb.Do(ctx, "BF.RESERVE", "x", "zero", 100).Err(), "ERR bad error rate")
	wantErr(t, rdb.Do(ctx, "BF.RESERVE", "x", 1.5, 100).Err(), "ERR error rate must be in the range (0.000000, 1.000000)")
	wantErr(t, rdb.Do(ctx, "BF.RESERVE", "x", 0.01, -3).Err(), "ERR capacity must be in the range [1, 1073741824]")
	wantErr(t, rdb.Do(ctx, "BF.RESERVE", "x", 0.01, 100, "EXPANSION").Err(), "ERR no expansion")
	wantErr(t, rdb.Do(ctx, "BF.RESERVE", "x", 0.01, 100, "EXPANSION", 32769).Err(), "ERR expansion must be in the range [0, 32768]")
	wantErr(t, rdb.Do(ctx, "BF.ADD", "blocks").Err(), "ERR wrong number of arguments for 'bf.add' command")
	if n, _ := rdb.Exists(ctx, "x").Result(); n != 0 {
		t.Fatal("a refused BF.RESERVE created its key")
	}

	if added, err := rdb.BFAdd(ctx, "blocks", "alice|bob").Result(); err != nil || !added {
		t.Fatalf("first BF.ADD: %v %v", added, err)
	}
	if added, _ := rdb.BFAdd(ctx, "blocks", "alice|bob").Result(); added {
		t.Fatal("second BF.ADD of the same item reported it new")
	}
	keys := make([]any, 5000)
	for i := range keys {
		keys[i] = fmt.Sprintf("did:plc:%024d|did:plc:%024d", i, i*7)
	}
	news, err := rdb.BFMAdd(ctx, "blocks", keys...).Result()
	if err != nil || len(news) != len(keys) {
		t.Fatalf("BF.MADD: %d results, %v", len(news), err)
	}
	found, err := rdb.BFMExists(ctx, "blocks", keys...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range found {
		if !ok {
			t.Fatalf("false negative for %v", keys[i])
		}
	}
	absent := make([]any, 20_000)
	for i := range absent {
		absent[i] = fmt.Sprintf("absent-%d", i)
	}
	positives := 0
	found, _ = rdb.BFMExists(ctx, "blocks", absent...).Result()
	for _, ok := range found {
		if ok {
			positives++
		}
	}
	// 5001 of 10000 keys at p = 1%: the rate is well under 1%; 1.5% of
	// 20000 would be far out of chance.
	if positives > 300 {
		t.Fatalf("%d false positives in %d at half capacity", positives, len(absent))
	}
	card, _ := rdb.BFCard(ctx, "blocks").Result()
	if card < 4950 || card > 5001 {
		t.Fatalf("BF.CARD %d after 5001 distinct items", card)
	}
	if n, _ := rdb.BFCard(ctx, "missing").Result(); n != 0 {
		t.Fatalf("BF.CARD of a missing key: %d", n)
	}
	info, err := rdb.BFInfo(ctx, "blocks").Result()
	if err != nil {
		t.Fatal(err)
	}
	if info.Capacity != 10_000 || info.Filters != 1 || info.ItemsInserted != card || info.ExpansionRate != 2 || info.Size < 10_000 {
		t.Fatalf("BF.INFO %+v", info)
	}
	if c, _ := rdb.BFInfoCapacity(ctx, "blocks").Result(); c.Capacity != 10_000 {
		t.Fatalf("BF.INFO CAPACITY %+v", c)
	}
	wantErr(t, rdb.BFInfo(ctx, "missing").Err(), "ERR not found")
	wantErr(t, rdb.Do(ctx, "BF.INFO", "blocks", "COLOR").Err(), "Invalid information value")
	if ok, _ := rdb.BFExists(ctx, "missing", "a").Result(); ok {
		t.Fatal("BF.EXISTS on a missing key")
	}

	// BF.INSERT with options, NOCREATE, and a scalable filter that grows.
	wantErr(t, rdb.BFInsert(ctx, "nope", &redis.BFInsertOptions{NoCreate: true}, "a").Err(), "ERR not found")
	if _, err := rdb.BFInsert(ctx, "grow", &redis.BFInsertOptions{Capacity: 100, Error: 0.001}, keys...).Result(); err != nil {
		t.Fatal(err)
	}
	info, _ = rdb.BFInfo(ctx, "grow").Result()
	if info.Filters < 5 || info.Capacity < 5000 {
		t.Fatalf("5000 items in a scalable filter for 100: %+v", info)
	}
	found, _ = rdb.BFMExists(ctx, "grow", keys...).Result()
	for i, ok := range found {
		if !ok {
			t.Fatalf("false negative for %v after growth", keys[i])
		}
	}

	// A non-scaling filter refuses new items once full, not known ones.
	if err := rdb.BFReserveNonScaling(ctx, "fixed", 0.01, 3).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := rdb.BFAdd(ctx, "fixed", i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, rdb.BFAdd(ctx, "fixed", "fourth").Err(), "ERR non scaling filter is full")
	if added, err := rdb.BFAdd(ctx, "fixed", 1).Result(); err != nil || added {
		t.Fatalf("re-adding a known item to a full filter: %v %v", added, err)
	}

	if typ, _ := rdb.Type(ctx, "blocks").Result(); typ != "MBbloom--" {
		t.Fatalf("TYPE %q", typ)
	}
	wantErr(t, rdb.CFAdd(ctx, "blocks", "x").Err(), "WRONGTYPE")
}

func TestCountingCommandsWithGoRedis(t *testing.T) {
	_, addr := start(t, Config{})
	ctx := context.Background()
	rdb := client(t, addr)
	if err := rdb.CFReserve(ctx, "sessions", 1000).Err(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, rdb.CFReserve(ctx, "sessions", 1000).Err(), "ERR item exists")
	for range 3 {
		if ok, err := rdb.CFAdd(ctx, "sessions", "s1").Result(); err != nil || !ok {
			t.Fatalf("CF.ADD: %v %v", ok, err)
		}
	}
	if ok, _ := rdb.CFAddNX(ctx, "sessions", "s1").Result(); ok {
		t.Fatal("CF.ADDNX added a present item")
	}
	if n, _ := rdb.CFCount(ctx, "sessions", "s1").Result(); n != 3 {
		t.Fatalf("CF.COUNT %d after three adds", n)
	}
	if ok, _ := rdb.CFDel(ctx, "sessions", "s1").Result(); !ok {
		t.Fatal("CF.DEL of a present item")
	}
	if n, _ := rdb.CFCount(ctx, "sessions", "s1").Result(); n != 2 {
		t.Fatalf("CF.COUNT %d after a delete", n)
	}
	rdb.CFDel(ctx, "sessions", "s1")
	rdb.CFDel(ctx, "sessions", "s1")
	if ok, _ := rdb.CFExists(ctx, "sessions", "s1").Result(); ok {
		t.Fatal("item still present after deleting every copy")
	}
	if ok, _ := rdb.CFDel(ctx, "sessions", "s1").Result(); ok {
		t.Fatal("CF.DEL of an absent item reported a delete")
	}
	if got, err := rdb.CFInsert(ctx, "auto", nil, "a", "b").Result(); err != nil || len(got) != 2 {
		t.Fatalf("CF.INSERT %v %v", got, err)
	}
	if got, _ := rdb.CFMExists(ctx, "auto", "a", "b", "zzz").Result(); !got[0] || !got[1] {
		t.Fatalf("CF.MEXISTS %v", got)
	}
	info, err := rdb.CFInfo(ctx, "sessions").Result()
	if err != nil {
		t.Fatal(err)
	}
	if info.NumItemsInserted != 0 || info.NumItemsDeleted != 3 || info.NumFilters != 1 || info.Size == 0 {
		t.Fatalf("CF.INFO %+v", info)
	}
	wantErr(t, rdb.CFDel(ctx, "missing", "a").Err(), "Not found")
	wantErr(t, rdb.BFAdd(ctx, "sessions", "x").Err(), "WRONGTYPE")
}

func TestGenericCommands(t *testing.T) {
	_, addr := start(t, Config{})
	ctx := context.Background()
	rdb := client(t, addr)
	if pong, err := rdb.Ping(ctx).Result(); err != nil || pong != "PONG" {
		t.Fatalf("PING %q %v", pong, err)
	}
	for _, k := range []string{"bf:a", "bf:b", "cf:c"} {
		if strings.HasPrefix(k, "cf") {
			rdb.CFAdd(ctx, k, "x")
		} else {
			rdb.BFAdd(ctx, k, "x")
		}
	}
	if keys, _ := rdb.Keys(ctx, "bf:*").Result(); strings.Join(keys, ",") != "bf:a,bf:b" {
		t.Fatalf("KEYS bf:* = %v", keys)
	}
	var all []string
	for cursor := uint64(0); ; {
		keys, next, err := rdb.Scan(ctx, cursor, "*", 2).Result()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, keys...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	slices.Sort(all) // SCAN's order is a hash's, as Redis's is
	if strings.Join(all, ",") != "bf:a,bf:b,cf:c" {
		t.Fatalf("SCAN walked %v", all)
	}
	if n, _ := rdb.Exists(ctx, "bf:a", "cf:c", "nope").Result(); n != 2 {
		t.Fatalf("EXISTS counted %d", n)
	}
	if n, _ := rdb.Del(ctx, "bf:a", "nope").Result(); n != 1 {
		t.Fatalf("DEL removed %d", n)
	}
	if n, _ := rdb.DBSize(ctx).Result(); n != 2 {
		t.Fatalf("DBSIZE %d", n)
	}
	if info, _ := rdb.Info(ctx).Result(); !strings.Contains(info, "db0:keys=2") {
		t.Fatalf("INFO lacks the keyspace: %q", info)
	}
	wantErr(t, rdb.Do(ctx, "FOO", "bar").Err(), "ERR unknown command 'FOO', with args beginning with: 'bar'")
	if err := rdb.Do(ctx, "SELECT", 0).Err(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, rdb.Do(ctx, "SELECT", 16).Err(), "ERR DB index is out of range")
}

func TestAuth(t *testing.T) {
	_, addr := start(t, Config{Password: "s3cret"})
	ctx := context.Background()
	anon := client(t, addr)
	wantErr(t, anon.Ping(ctx).Err(), "NOAUTH")
	wantErr(t, anon.BFAdd(ctx, "k", "v").Err(), "NOAUTH")
	wrong := client(t, addr, func(o *redis.Options) { o.Password = "guess" })
	wantErr(t, wrong.Ping(ctx).Err(), "WRONGPASS")
	right := client(t, addr, func(o *redis.Options) { o.Password = "s3cret" })
	if err := right.BFAdd(ctx, "k", "v").Err(); err != nil {
		t.Fatal(err)
	}
	acl := client(t, addr, func(o *redis.Options) { o.Username, o.Password = "default", "s3cret" })
	if ok, err := acl.BFExists(ctx, "k", "v").Result(); err != nil || !ok {
		t.Fatalf("BF.EXISTS as user default: %v %v", ok, err)
	}
	// RESP2 HELLO with AUTH authenticates too.
	raw := dial(t, addr)
	if reply := raw.do(t, "HELLO", "2", "AUTH", "default", "s3cret"); !strings.HasPrefix(reply, "*14") {
		t.Fatalf("HELLO 2 AUTH: %q", reply)
	}
	if reply := raw.do(t, "BF.EXISTS", "k", "v"); reply != ":1" {
		t.Fatalf("after HELLO AUTH: %q", reply)
	}
}

// rawConn speaks RESP by hand, to send what clients never would.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawConn{c, bufio.NewReader(c)}
}

// do sends a command, reads its whole reply and returns the reply's first
// line, without CRLF.
func (c *rawConn) do(t *testing.T, args ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	return c.reply(t)
}

// reply reads one whole RESP2 reply and returns its first line.
func (c *rawConn) reply(t *testing.T) string {
	t.Helper()
	first := c.line(t)
	if len(first) == 0 {
		return first
	}
	n, _ := strconv.Atoi(first[1:])
	switch first[0] {
	case '*':
		for range n {
			c.reply(t)
		}
	case '$':
		if n >= 0 {
			if _, err := io.ReadFull(c.r, make([]byte, n+2)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return first
}

func (c *rawConn) line(t *testing.T) string {
	t.Helper()
	line, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading a reply: %v (got %q)", err, line)
	}
	return strings.TrimSuffix(line, "\r\n")
}

func TestPersistenceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, addr := start(t, Config{DataDir: dir, SaveInterval: -1})
	rdb := client(t, addr)
	keys := make([]any, 3000)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	rdb.BFReserve(ctx, "bf", 0.001, 500)
	rdb.BFMAdd(ctx, "bf", keys...)
	rdb.BFReserveNonScaling(ctx, "fixed", 0.01, 10)
	rdb.BFAdd(ctx, "fixed", "one")
	rdb.CFAdd(ctx, "cf", "x")
	rdb.CFAdd(ctx, "cf", "x")
	rdb.BFAdd(ctx, "gone", "soon")
	if err := rdb.Do(ctx, "SAVE").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, "gone")
	rdb.BFAdd(ctx, "after-save", "still saved at shutdown")
	before, _ := rdb.BFInfo(ctx, "bf").Result()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	_, addr = start(t, Config{DataDir: dir, SaveInterval: -1})
	rdb = client(t, addr)
	if names, _ := rdb.Keys(ctx, "*").Result(); strings.Join(names, ",") != "after-save,bf,cf,fixed" {
		t.Fatalf("restored keys %v", names)
	}
	after, _ := rdb.BFInfo(ctx, "bf").Result()
	if after != before {
		t.Fatalf("BF.INFO before %+v, after restart %+v", before, after)
	}
	found, _ := rdb.BFMExists(ctx, "bf", keys...).Result()
	for i, ok := range found {
		if !ok {
			t.Fatalf("%v lost across the restart", keys[i])
		}
	}
	if n, _ := rdb.CFCount(ctx, "cf", "x").Result(); n != 2 {
		t.Fatalf("CF.COUNT %d after restart", n)
	}
	if added, err := rdb.BFAdd(ctx, "fixed", "two").Result(); err != nil || !added {
		t.Fatalf("a restored non-scaling filter with room refused an item: %v", err)
	}
	if ok, _ := rdb.BFExists(ctx, "after-save", "still saved at shutdown").Result(); !ok {
		t.Fatal("an add after the last SAVE was not saved at shutdown")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.ohbs"))
	if len(files) != 4 {
		t.Fatalf("%d data files for 4 keys: %v", len(files), files)
	}
}

func TestScheduledSave(t *testing.T) {
	dir := t.TempDir()
	_, addr := start(t, Config{DataDir: dir, SaveInterval: 20 * time.Millisecond})
	rdb := client(t, addr)
	rdb.BFAdd(context.Background(), "k", "v")
	deadline := time.Now().Add(10 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(dir, "*.ohbs"))
		if len(files) == 1 {
			name, _, e, _, err := loadRecord(files[0])
			if err != nil || name != "k" || !e.scalable.TestString("v") {
				t.Fatalf("saved record: %q %v", name, err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no file saved by the schedule")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCorruptDataFileStopsStart(t *testing.T) {
	dir := t.TempDir()
	s, addr := start(t, Config{DataDir: dir, SaveInterval: -1})
	client(t, addr).BFAdd(context.Background(), "k", "v")
	s.Shutdown(context.Background())
	files, _ := filepath.Glob(filepath.Join(dir, "*.ohbs"))
	data, _ := os.ReadFile(files[0])
	for _, damage := range []struct {
		name string
		data []byte
	}{
		{"truncated", data[:len(data)-9]},
		{"bit flip in the filter", flip(data, len(data)-20)},
		{"bit flip in the key", flip(data, 56)},
		{"foreign", []byte("hello, world")},
	} {
		os.WriteFile(files[0], damage.data, 0o644)
		_, err := New(Config{DataDir: dir})
		if err == nil || !strings.Contains(err.Error(), files[0]) {
			t.Fatalf("%s: %v, want an error naming the file", damage.name, err)
		}
		if got, _ := os.ReadFile(files[0]); string(got) != string(damage.data) {
			t.Fatalf("%s: the file was changed", damage.name)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 1
	return c
}

func TestScanDumpLoadChunk(t *testing.T) {
	setScanDumpChunk(t, 4096)
	_, addr := start(t, Config{})
	ctx := context.Background()
	rdb := client(t, addr)
	keys := make([]any, 20_000)
	for i := range keys {
		keys[i] = i
	}
	rdb.BFReserve(ctx, "src", 0.01, 5000)
	rdb.BFMAdd(ctx, "src", keys...)
	type chunk struct {
		iter int64
		data string
	}
	var chunks []chunk
	for iter := int64(0); ; {
		d, err := rdb.BFScanDump(ctx, "src", iter).Result()
		if err != nil {
			t.Fatal(err)
		}
		if d.Iter == 0 {
			break
		}
		chunks = append(chunks, chunk{d.Iter, d.Data})
		iter = d.Iter
	}
	if len(chunks) < 10 {
		t.Fatalf("%d chunks of 4 KiB", len(chunks))
	}
	for i, c := range chunks {
		if err := rdb.BFLoadChunk(ctx, "copy", c.iter, c.data).Err(); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if n, _ := rdb.Exists(ctx, "copy").Result(); (n == 1) != (i == len(chunks)-1) {
			t.Fatalf("after chunk %d of %d, EXISTS copy = %d", i+1, len(chunks), n)
		}
	}
	src, _ := rdb.BFInfo(ctx, "src").Result()
	dst, _ := rdb.BFInfo(ctx, "copy").Result()
	if src != dst {
		t.Fatalf("BF.INFO of source %+v, of copy %+v", src, dst)
	}
	found, _ := rdb.BFMExists(ctx, "copy", keys...).Result()
	for i, ok := range found {
		if !ok {
			t.Fatalf("key %d missing from the copy", i)
		}
	}
	// A bad upload is refused and creates nothing.
	wantErr(t, rdb.BFLoadChunk(ctx, "bad", chunks[1].iter, chunks[1].data).Err(), "start with its first chunk")
	wantErr(t, rdb.BFLoadChunk(ctx, "copy", chunks[0].iter, chunks[0].data).Err(), "ERR item exists")
	rdb.BFLoadChunk(ctx, "bad", chunks[0].iter, chunks[0].data)
	wantErr(t, rdb.BFLoadChunk(ctx, "bad", chunks[2].iter, chunks[2].data).Err(), "expected")
	corrupt := []byte(chunks[len(chunks)-1].data)
	corrupt[0] ^= 0xFF
	for _, c := range chunks[1 : len(chunks)-1] {
		rdb.BFLoadChunk(ctx, "bad", c.iter, c.data)
	}
	wantErr(t, rdb.BFLoadChunk(ctx, "bad", chunks[len(chunks)-1].iter, string(corrupt)).Err(), "ERR invalid dump")
	if n, _ := rdb.Exists(ctx, "bad").Result(); n != 0 {
		t.Fatal("a corrupt upload created its key")
	}
	// CF keys dump and load through CF.*, and not through BF.*.
	rdb.CFAdd(ctx, "cf", "x")
	wantErr(t, rdb.BFScanDump(ctx, "cf", 0).Err(), "WRONGTYPE")
}

func TestLimits(t *testing.T) {
	_, addr := start(t, Config{MaxClients: 2, MaxRequestBytes: 4096, MaxFilterBytes: 1 << 20})
	a, b := dial(t, addr), dial(t, addr)
	a.do(t, "PING")
	b.do(t, "PING")
	c := dial(t, addr)
	if line := c.line(t); line != "-ERR max number of clients reached" {
		t.Fatalf("third client got %q", line)
	}
	// A request larger than the limit is refused and its connection
	// closed; the server goes on.
	big := strings.Repeat("x", 10_000)
	if line := a.do(t, "BF.ADD", "k", big); !strings.Contains(line, "max-request-bytes") {
		t.Fatalf("oversized request got %q", line)
	}
	if _, err := a.r.ReadString('\n'); err == nil {
		t.Fatal("the connection of an oversized request stayed open")
	}
	if line := b.do(t, "BF.ADD", "k", "small"); line != ":1" {
		t.Fatalf("after another client's oversized request: %q", line)
	}
	if line := b.do(t, "BF.RESERVE", "huge", "0.0001", "100000000"); !strings.Contains(line, "exceeds max-filter-bytes") {
		t.Fatalf("reserving beyond the filter limit: %q", line)
	}
}

// A scalable filter stops growing at the size limit: known items still
// answer, new ones are refused.
func TestScalableStopsAtSizeLimit(t *testing.T) {
	s, addr := start(t, Config{MaxFilterBytes: 1 << 20})
	ctx := context.Background()
	rdb := client(t, addr)
	rdb.BFReserve(ctx, "grow", 0.01, 10_000)
	var refused error
	for i := 0; refused == nil && i < 2_000_000; i += 10_000 {
		items := make([]any, 10_000)
		for j := range items {
			items[j] = i + j
		}
		res, err := rdb.Do(ctx, append([]any{"BF.MADD", "grow"}, items...)...).Slice()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if err, ok := r.(error); ok {
				refused = err
			}
		}
	}
	wantErr(t, refused, "max-filter-bytes")
	if ok, _ := rdb.BFExists(ctx, "grow", 5).Result(); !ok {
		t.Fatal("an item added before the limit is gone")
	}
	if size := s.store.get(0, "grow").sizeBytes(); size > 3<<20 {
		t.Fatalf("a filter limited to 1 MiB grew to %d bytes", size)
	}
}

// Garbage over real sockets gets errors or a closed connection, and the
// stored filters are untouched.
func TestGarbageOverSockets(t *testing.T) {
	_, addr := start(t, Config{MaxRequestBytes: 1 << 16})
	ctx := context.Background()
	rdb := client(t, addr)
	keys := make([]any, 1000)
	for i := range keys {
		keys[i] = i
	}
	rdb.BFMAdd(ctx, "keep", keys...)
	rdb.CFAdd(ctx, "keepcf", "x")
	garbage := [][]byte{
		[]byte("*-1\r\n"),
		[]byte("*2\r\n$-5\r\n"),
		[]byte("*1\r\n$3\r\nPINGX\r\n"),
		[]byte("*99999999999999999999\r\n"),
		[]byte("*2\r\n$1000000000\r\nabc"),
		[]byte("*3\r\n$6\r\nBF.ADD\r\n:12\r\n"),
		[]byte("\x00\x01\x02\xff\xfe\r\n"),
		[]byte("BF.ADD keep \"unterminated\r\n"),
		[]byte("*1\r\n$0\r\n\r\n"),
		[]byte("*4\r\n$12\r\nBF.LOADCHUNK\r\n$4\r\nkeep\r\n$1\r\n1\r\n$0\r\n\r\n"),
		[]byte("*3\r\n$11\r\nBF.SCANDUMP\r\n$4\r\nkeep\r\n$2\r\n-1\r\n"),
		[]byte("*4\r\n$10\r\nBF.RESERVE\r\n$1\r\nz\r\n$3\r\nnan\r\n$3\r\n1e9\r\n"),
		[]byte("*3\r\n$7\r\nCF.DEL\r\n$4\r\nkeep\r\n$1\r\nx\r\n"),
	}
	for i := range 200 {
		garbage = append(garbage, pseudoRandom(i, 1+i*37%3000))
	}
	for i, g := range garbage {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(g)
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		io.Copy(io.Discard, c) // whatever the server answers, until it closes or goes quiet
		c.Close()
		if i%20 == 0 {
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatalf("after garbage %d: %v", i, err)
			}
		}
	}
	found, err := rdb.BFMExists(ctx, "keep", keys...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range found {
		if !ok {
			t.Fatalf("key %d lost after the garbage", i)
		}
	}
	if n, _ := rdb.CFCount(ctx, "keepcf", "x").Result(); n != 1 {
		t.Fatalf("CF.COUNT %d after the garbage", n)
	}
	if card, _ := rdb.BFCard(ctx, "keep").Result(); card < 990 {
		t.Fatalf("BF.CARD %d", card)
	}
}

func pseudoRandom(seed, n int) []byte {
	b := make([]byte, n)
	x := uint64(seed)*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
		if x%7 == 0 { // enough RESP structure to get past the first byte
			b[i] = "*$\r\n:+-0123456789"[x%17]
		}
	}
	return b
}

func TestShutdownRefusesConnections(t *testing.T) {
	s, addr := start(t, Config{})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.SetReadDeadline(time.Now().Add(time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a shut-down server still serves: %v", err)
	}
}

// Many clients at once: every acknowledged item is found, and a
// non-scaling filter takes exactly its capacity, not more.
func TestConcurrentClients(t *testing.T) {
	_, addr := start(t, Config{})
	ctx := context.Background()
	rdb := client(t, addr, func(o *redis.Options) { o.PoolSize = 16 })
	rdb.BFReserveNonScaling(ctx, "fixed", 0.001, 500)
	const workers, each = 8, 300
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				item := fmt.Sprint(w, "-", i)
				if err := rdb.BFAdd(ctx, "shared", item).Err(); err != nil {
					errs <- err
					return
				}
				rdb.BFAdd(ctx, "fixed", item) // fills up, then refuses
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for w := range workers {
		for i := range each {
			if ok, _ := rdb.BFExists(ctx, "shared", fmt.Sprint(w, "-", i)).Result(); !ok {
				t.Fatalf("item %d-%d lost", w, i)
			}
		}
	}
	if n, _ := rdb.BFCard(ctx, "fixed").Result(); n != 500 {
		t.Fatalf("a non-scaling filter for 500 took %d items", n)
	}
}

// restoreAfterShutdown gives *v its value back once the test's servers
// have shut down: cleanups run last first, and Shutdown waits for the
// goroutines that slow commands (which may read *v) run on.
func restoreAfterShutdown[T any](t *testing.T, v *T) {
	old := *v
	t.Cleanup(func() { *v = old })
}
