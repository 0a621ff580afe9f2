package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

type chunk struct {
	iter int64
	data string
}

// dumpStep calls SCANDUMP once and returns the chunk, or ok false at the
// end.
func dumpStep(t *testing.T, rdb *redis.Client, cmd, key string, iter int64) (chunk, bool) {
	t.Helper()
	res, err := rdb.Do(context.Background(), cmd, key, iter).Slice()
	if err != nil {
		t.Fatalf("%s %s %d: %v", cmd, key, iter, err)
	}
	next := res[0].(int64)
	if next == 0 {
		return chunk{}, false
	}
	return chunk{next, res[1].(string)}, true
}

func loadAll(t *testing.T, rdb *redis.Client, cmd, key string, chunks []chunk) error {
	t.Helper()
	for _, c := range chunks {
		if err := rdb.Do(context.Background(), cmd, key, c.iter, c.data).Err(); err != nil {
			return err
		}
	}
	return nil
}

// Two SCANDUMPs of one key at once, with adds between their chunks: each
// gets a whole dump, consistent as of its iterator 0. (A CF key dumps as
// RedisBloom's does, its chunks read from the live filter: cf_test.go.)
func TestConcurrentScanDumpsOfOneKey(t *testing.T) {
	setScanDumpChunk(t, 4096)
	_, addr := start(t, Config{})
	a, b := client(t, addr), client(t, addr)
	ctx := context.Background()
	first, later := numbered("first", 20_000), numbered("later", 5000)
	a.BFReserve(ctx, "src", 0.01, 5000)
	a.BFMAdd(ctx, "src", first...)
	for _, fam := range []string{"BF"} {
		key := "src"
		var dumpA, dumpB []chunk
		ca, _ := dumpStep(t, a, fam+".SCANDUMP", key, 0)
		dumpA = append(dumpA, ca)
		cb, _ := dumpStep(t, b, fam+".SCANDUMP", key, 0)
		dumpB = append(dumpB, cb)
		// Changes after both dumps started: in neither.
		a.BFMAdd(ctx, key, later...)
		for moreA, moreB := true, true; moreA || moreB; {
			if moreA {
				if ca, moreA = dumpStep(t, a, fam+".SCANDUMP", key, ca.iter); moreA {
					dumpA = append(dumpA, ca)
				}
			}
			if moreB {
				if cb, moreB = dumpStep(t, b, fam+".SCANDUMP", key, cb.iter); moreB {
					dumpB = append(dumpB, cb)
				}
			}
		}
		if len(dumpA) < 3 || len(dumpA) != len(dumpB) {
			t.Fatalf("%s: dumps of %d and %d chunks", fam, len(dumpA), len(dumpB))
		}
		for name, d := range map[string][]chunk{"a": dumpA, "b": dumpB} {
			if err := loadAll(t, a, fam+".LOADCHUNK", fam+name, d); err != nil {
				t.Fatalf("%s loading dump %s: %v", fam, name, err)
			}
			found, _ := a.BFMExists(ctx, fam+name, first...).Result()
			for i, ok := range found {
				if !ok {
					t.Fatalf("dump %s lacks item %d", name, i)
				}
			}
			if card, _ := a.BFCard(ctx, fam+name).Result(); card > 20_000 {
				t.Fatalf("dump %s holds %d items: adds after its start tore into it", name, card)
			}
		}
	}
	if info, _ := a.Info(ctx, "persistence").Result(); !strings.Contains(info, "scandump_dumps:0\r\n") {
		t.Fatalf("finished dumps still held: %q", info)
	}
}

// Dumps in progress are bounded: past maxDumps (or max-dump-bytes) the
// least recently continued goes, and its next call says so rather than
// end the dump early.
func TestScanDumpsBounded(t *testing.T) {
	setScanDumpChunk(t, 1024)
	_, addr := start(t, Config{MaxDumpBytes: 1 << 20})
	rdb := client(t, addr)
	ctx := context.Background()
	rdb.BFReserve(ctx, "k", 0.01, 10_000)
	var firsts []chunk
	for range maxDumps + 1 {
		c, _ := dumpStep(t, rdb, "BF.SCANDUMP", "k", 0)
		firsts = append(firsts, c)
	}
	wantErr(t, rdb.BFScanDump(ctx, "k", firsts[0].iter).Err(), "no dump in progress for this iterator")
	if _, ok := dumpStep(t, rdb, "BF.SCANDUMP", "k", firsts[1].iter); !ok {
		t.Fatal("a dump within the bound ended")
	}
	if info, _ := rdb.Info(ctx, "persistence").Result(); !strings.Contains(info, "scandump_dumps:"+strconv.Itoa(maxDumps)+"\r\n") {
		t.Fatalf("INFO: %q", info)
	}
	// A key whose dump alone is over the bound is refused.
	rdb.BFReserve(ctx, "big", 0.0001, 1_000_000)
	wantErr(t, rdb.BFScanDump(ctx, "big", 0).Err(), "more than max-dump-bytes")
	// A dump's iterator is for its key only.
	rdb.BFAdd(ctx, "other", "x")
	wantErr(t, rdb.BFScanDump(ctx, "other", firsts[2].iter).Err(), "no dump in progress")
}

// firstChunk is a LOADCHUNK first chunk that claims total bytes and
// carries pad bytes of them, with the iterator of an ohbloom dump.
func firstChunk(total uint64, pad int) (int64, string) {
	data := binary.LittleEndian.AppendUint64(nil, total)
	data = append(data, make([]byte, pad)...)
	return ohbloomIterators | int64(len(data)) + 1, string(data)
}

// Uploads in progress are bounded per connection and in all, in count and
// in bytes; they show in INFO, go with DEL and FLUSHALL, and expire.
func TestLoadChunkUploadsBounded(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	_, addr := startWithClock(t, Config{MaxFilterBytes: 64 << 10, MaxUploadBytes: 1 << 20}, clock.now)
	conn := func() *rawConn { return dial(t, addr) }
	info := func() string {
		c := conn()
		c.Write([]byte("*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n"))
		c.line(t)
		var b strings.Builder
		for {
			line := c.line(t)
			b.WriteString(line + "\n")
			if strings.HasPrefix(line, "scandump_dump_bytes") {
				return b.String()
			}
		}
	}
	uploads := func() (n, bytes int) {
		text := info()
		fmt.Sscanf(text[strings.Index(text, "loadchunk_uploads:"):], "loadchunk_uploads:%d\nloadchunk_upload_bytes:%d", &n, &bytes)
		return n, bytes
	}
	start := func(c *rawConn, key string, total uint64, pad int) string {
		iter, data := firstChunk(total, pad)
		return c.do(t, "BF.LOADCHUNK", key, strconv.FormatInt(iter, 10), data)
	}
	// A connection may hold four.
	c1 := conn()
	for i := range maxUploadsPerClient {
		if r := start(c1, fmt.Sprint("u", i), 200_000, 1000); r != "+OK" {
			t.Fatalf("upload %d: %q", i, r)
		}
	}
	if r := start(c1, "u5", 200_000, 1000); !strings.Contains(r, "too many LOADCHUNK uploads in progress on this connection") {
		t.Fatalf("a fifth upload: %q", r)
	}
	if n, b := uploads(); n != 4 || b < 4000 {
		t.Fatalf("INFO: %d uploads, %d bytes", n, b)
	}
	// DEL and FLUSHALL drop them.
	c1.do(t, "DEL", "u0")
	if n, _ := uploads(); n != 3 {
		t.Fatalf("after DEL, %d uploads", n)
	}
	if r := c1.do(t, "BF.LOADCHUNK", "u0", itoa(ohbloomIterators+2010), strings.Repeat("x", 1000)); !strings.Contains(r, "no dump being loaded") {
		t.Fatalf("continuing a deleted upload: %q", r)
	}
	c1.do(t, "FLUSHALL")
	if n, b := uploads(); n != 0 || b != 0 {
		t.Fatalf("after FLUSHALL: %d uploads, %d bytes", n, b)
	}
	// A connection holds at most half of max-upload-bytes.
	if r := start(c1, "a", 250_000, 240_000); r != "+OK" {
		t.Fatal(r)
	}
	if r := start(c1, "b", 250_000, 240_000); r != "+OK" {
		t.Fatal(r)
	}
	if r := start(c1, "c", 250_000, 240_000); !strings.Contains(r, "would hold more than") {
		t.Fatalf("a connection past half the budget: %q", r)
	}
	// In all, the least recently continued go first, by count and by
	// bytes.
	var conns []*rawConn
	for i := range maxUploads {
		if i%maxUploadsPerClient == 0 {
			conns = append(conns, conn())
		}
		if r := start(conns[len(conns)-1], fmt.Sprint("n", i), 1000, 10); r != "+OK" {
			t.Fatal(r)
		}
	}
	if n, _ := uploads(); n != maxUploads {
		t.Fatalf("%d uploads, want the most, %d", n, maxUploads)
	}
	if r := c1.do(t, "BF.LOADCHUNK", "a", itoa(ohbloomIterators+240_008+1+10), strings.Repeat("x", 10)); !strings.Contains(r, "no dump being loaded") {
		t.Fatalf("the oldest upload survived a full table: %q", r)
	}
	c2, c3, c4 := conn(), conn(), conn()
	for i, c := range []*rawConn{c2, c3, c2, c3, c4} {
		if r := start(c, fmt.Sprint("big", i), 250_000, 240_000); r != "+OK" {
			t.Fatal(r)
		}
	}
	if n, b := uploads(); b > 1<<20 || n != 4 {
		t.Fatalf("uploads hold %d bytes in %d, want at most max-upload-bytes in 4", b, n)
	}
	if r := c2.do(t, "BF.LOADCHUNK", "big0", itoa(ohbloomIterators+240_008+1+10), strings.Repeat("x", 10)); !strings.Contains(r, "no dump being loaded") {
		t.Fatalf("the oldest large upload survived a full budget: %q", r)
	}
	// Left idle for a minute, they expire.
	clock.advance(idleTimeout)
	if n, b := uploads(); n != 0 || b != 0 {
		t.Fatalf("after a minute idle: %d uploads, %d bytes", n, b)
	}
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// setScanDumpChunk makes SCANDUMP's chunks small for one test. The old size
// comes back in a cleanup registered before the test starts its server, so
// it runs after the server's Shutdown: no command reads the variable as it
// changes.
func setScanDumpChunk(t *testing.T, n uint64) {
	old := scanDumpChunk
	t.Cleanup(func() { scanDumpChunk = old })
	scanDumpChunk = n
}
