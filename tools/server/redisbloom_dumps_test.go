package server

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ohbloom/ohbloom/internal/redisbloomtest"
	"github.com/redis/go-redis/v9"
)

// Dumps the real RedisBloom module made (../shared/testdata/redisbloom and
// the repository's copy; their README says how), driven through the
// server over a socket with go-redis, in both protocols: BF.LOADCHUNK of
// each chunk makes a key that answers the absent probes with exactly
// RedisBloom's false positives, reports its BF.INFO and BF.CARD, and dumps
// back to the same chunks; BF.MADD of the items RedisBloom added next, in
// 1000-item commands as it was fed them, reaches its state after them
// byte for byte; and so does a restart, from the log alone and from a
// snapshot and the log after it.

// anys turns items into BF.MADD's and BF.MEXISTS's arguments.
func anys(items [][]byte) []any {
	out := make([]any, len(items))
	for i, item := range items {
		out[i] = string(item)
	}
	return out
}

// rbRange is redisbloomtest.Range as command arguments.
func rbRange(t *testing.T, desc string) []any { return anys(redisbloomtest.Range(t, desc)) }

// loadRBGolden reads every dump (redisbloomtest.Load).
func loadRBGolden(t *testing.T) []*redisbloomtest.Dump { return redisbloomtest.Load(t, "../..") }

// wantInfo is BF.INFO as RedisBloom recorded it, in the shape infoMap
// gives: numbers as float64, as JSON decodes them, and a nil expansion.
func wantInfo(in redisbloomtest.Info) map[string]any {
	m := map[string]any{"Capacity": float64(in.Capacity), "Size": float64(in.Size),
		"Number of filters": float64(in.Filters), "Number of items inserted": float64(in.Items), "Expansion rate": nil}
	if in.Expansion != nil {
		m["Expansion rate"] = float64(*in.Expansion)
	}
	return m
}

// infoMap is BF.INFO as a map from either protocol's reply.
func infoMap(t *testing.T, v any) map[string]any {
	t.Helper()
	out := map[string]any{}
	switch v := v.(type) {
	case []any: // RESP2: names and values in turn
		for i := 0; i+1 < len(v); i += 2 {
			out[v[i].(string)] = v[i+1]
		}
	case map[any]any: // RESP3
		for k, x := range v {
			out[k.(string)] = x
		}
	default:
		t.Fatalf("BF.INFO replied %T %v", v, v)
	}
	return out
}

// sameInfo compares BF.INFO with the JSON's numbers (float64, or nil).
func sameInfo(got, want map[string]any) bool {
	if len(got) != len(want) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			return false
		}
		if w == nil || g == nil {
			if w != g {
				return false
			}
			continue
		}
		if n, ok := g.(int64); !ok || float64(n) != w.(float64) {
			return false
		}
	}
	return true
}

// checkRBKey checks key against a state RedisBloom recorded.
func checkRBKey(t *testing.T, rdb *redis.Client, key string, want *redisbloomtest.State, probes []any) {
	t.Helper()
	ctx := context.Background()
	var positives []int
	for start := 0; start < len(probes); start += 5000 {
		batch := probes[start:min(len(probes), start+5000)]
		got, err := rdb.Do(ctx, append([]any{"BF.MEXISTS", key}, batch...)...).Slice()
		if err != nil || len(got) != len(batch) {
			t.Fatalf("%s: BF.MEXISTS: %d answers, %v", key, len(got), err)
		}
		for i, v := range got {
			if v == true || v == int64(1) {
				positives = append(positives, start+i)
			} else if v != false && v != int64(0) {
				t.Fatalf("%s: BF.MEXISTS answered %T %v", key, v, v)
			}
		}
	}
	if !slices.Equal(positives, want.Positives) {
		t.Errorf("%s: false positives %v, RedisBloom's %v", key, positives, want.Positives)
	}
	info, err := rdb.Do(ctx, "BF.INFO", key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if got := infoMap(t, info); !sameInfo(got, wantInfo(want.Info)) {
		t.Errorf("%s: BF.INFO %v, RedisBloom's %v", key, got, want.Info)
	}
	if n, err := rdb.BFCard(ctx, key).Result(); err != nil || n != int64(want.Info.Items) {
		t.Errorf("%s: BF.CARD %d %v", key, n, err)
	}
	iter := int64(0)
	for i, c := range want.Chunks {
		d, err := rdb.BFScanDump(ctx, key, iter).Result()
		if err != nil {
			t.Fatal(err)
		}
		if d.Iter != c.Iterator || d.Data != string(c.Data) {
			t.Fatalf("%s: chunk %d at iterator %d: %d bytes, iterator %d; RedisBloom: %d bytes, iterator %d",
				key, i, iter, len(d.Data), d.Iter, len(c.Data), c.Iterator)
		}
		iter = d.Iter
	}
	if d, err := rdb.BFScanDump(ctx, key, iter).Result(); err != nil || d.Iter != 0 || d.Data != "" {
		t.Fatalf("%s: past the last chunk: %+v %v", key, d, err)
	}
}

// maddAsRedisBloom adds items in 1000-item BF.MADDs. A filter that does
// not grow ends a BF.MADD at the first item it refuses, as RedisBloom's
// does: the reply is shorter, its last element the refusal.
func maddAsRedisBloom(t *testing.T, rdb *redis.Client, key string, items []any) {
	t.Helper()
	ctx := context.Background()
	for start := 0; start < len(items); start += 1000 {
		batch := items[start:min(len(items), start+1000)]
		got, err := rdb.Do(ctx, append([]any{"BF.MADD", key}, batch...)...).Slice()
		if err != nil {
			t.Fatalf("%s: BF.MADD: %v", key, err)
		}
		if len(got) < len(batch) || len(got) > 0 && isError(got[len(got)-1]) {
			if last, ok := got[len(got)-1].(error); !ok || last.Error() != "ERR non scaling filter is full" {
				t.Fatalf("%s: BF.MADD of %d items: %d replies, the last %v", key, len(batch), len(got), got[len(got)-1])
			}
			got = got[:len(got)-1]
		}
		for i, v := range got {
			if isError(v) {
				t.Fatalf("%s: BF.MADD item %d: %v", key, start+i, v)
			}
		}
	}
}

func isError(v any) bool { _, ok := v.(error); return ok }

func loadRBChunks(t *testing.T, rdb *redis.Client, key string, g *redisbloomtest.Dump) {
	t.Helper()
	for _, c := range g.Chunks {
		if err := rdb.BFLoadChunk(context.Background(), key, c.Iterator, string(c.Data)).Err(); err != nil {
			t.Fatalf("%s: BF.LOADCHUNK at iterator %d: %v", key, c.Iterator, err)
		}
	}
}

// inEachProtocol runs f in a subtest for RESP2 and one for RESP3, each on
// a fresh server with a client speaking that protocol.
func inEachProtocol(t *testing.T, f func(t *testing.T, rdb *redis.Client, proto int)) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			_, addr := start(t, Config{})
			f(t, client(t, addr, func(o *redis.Options) { o.Protocol = proto }), proto)
		})
	}
}

func TestRedisBloomDumpsThroughTheServer(t *testing.T) {
	golden := loadRBGolden(t)
	inEachProtocol(t, func(t *testing.T, rdb *redis.Client, _ int) {
		ctx := context.Background()
		for _, g := range golden {
			key := "rb:" + g.Name
			loadRBChunks(t, rdb, key, g)
			if typ, _ := rdb.Type(ctx, key).Result(); typ != "MBbloom--" {
				t.Fatalf("%s: TYPE %q", key, typ)
			}
			probes := rbRange(t, g.AbsentProbes)
			checkRBKey(t, rdb, key, &g.State, probes)
			// go-redis's own BF.INFO parses the reply too, but for a
			// filter that does not grow: its nil Expansion rate, which
			// RedisBloom sends too, fails go-redis's parser.
			if in, err := rdb.BFInfo(ctx, key).Result(); g.Info.Expansion != nil && (err != nil || uint64(in.Capacity) != g.Info.Capacity) {
				t.Fatalf("%s: go-redis BF.INFO %+v %v", key, in, err)
			}
			items := anys(g.Added(t))
			for start := 0; start < len(items); start += 5000 {
				found, err := rdb.BFMExists(ctx, key, items[start:min(len(items), start+5000)]...).Result()
				if err != nil || slices.Contains(found, false) {
					t.Fatalf("%s: an added item tests absent (%v)", key, err)
				}
			}
			maddAsRedisBloom(t, rdb, key, rbRange(t, g.AfterMore.MoreItems))
			checkRBKey(t, rdb, key, &g.AfterMore.State, probes)
		}
	})
}

// TestRedisBloomDumpsSurviveRestarts: the same keys, restored from the log
// alone (a crash before any save), from a snapshot taken after the load
// and the log after it, and from the snapshot of a shutdown.
func TestRedisBloomDumpsSurviveRestarts(t *testing.T) {
	golden := loadRBGolden(t)
	dir := t.TempDir()
	s, rdb := startOn(t, dir, Config{AppendFsync: "always"})
	ctx := context.Background()
	half := map[string][]string{} // the dump of each key halfway through the more items
	// Every reply was received under always: the log holds every change,
	// and a copy of the directory is what a kill -9 leaves.
	crash := func(name string) string { return copyTree(t, dir, name) }
	for i, g := range golden {
		key := "rb:" + g.Name
		loadRBChunks(t, rdb, key, g)
		if i%2 == 0 {
			continue
		}
		if err := rdb.Save(ctx).Err(); err != nil { // some keys in the snapshot, some in the log only
			t.Fatal(err)
		}
	}
	logOnly := crash("log-only")
	for i, g := range golden {
		key := "rb:" + g.Name
		more := rbRange(t, g.AfterMore.MoreItems)
		maddAsRedisBloom(t, rdb, key, more[:len(more)/2])
		half[key] = dumpOf(t, rdb, key)
		if i == len(golden)/2 {
			if err := rdb.Save(ctx).Err(); err != nil { // a snapshot midway
				t.Fatal(err)
			}
		}
	}
	midway := crash("midway")
	for _, g := range golden {
		more := rbRange(t, g.AfterMore.MoreItems)
		maddAsRedisBloom(t, rdb, "rb:"+g.Name, more[len(more)/2:])
	}
	final := crash("final")
	s.Shutdown(ctx)

	for _, c := range []struct {
		dir   string
		state func(g *redisbloomtest.Dump) *redisbloomtest.State
	}{
		{logOnly, func(g *redisbloomtest.Dump) *redisbloomtest.State { return &g.State }},
		{final, func(g *redisbloomtest.Dump) *redisbloomtest.State { return &g.AfterMore.State }},
		{dir, func(g *redisbloomtest.Dump) *redisbloomtest.State { return &g.AfterMore.State }},
	} {
		_, r := startOn(t, c.dir, Config{})
		for _, g := range golden {
			checkRBKey(t, r, "rb:"+g.Name, c.state(g), rbRange(t, g.AbsentProbes))
		}
	}
	_, r := startOn(t, midway, Config{})
	for key, want := range half {
		if got := dumpOf(t, r, key); !slices.Equal(got, want) {
			t.Errorf("%s: restored midway, the dump differs from the live one", key)
		}
	}
}

// copyTree copies the directory src and all below it, as it is (cp -a),
// to a new directory called name in the test's temporary directory, and
// returns its path.
func copyTree(t *testing.T, src, name string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("cp", "-a", src, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return to
}

// dumpOf is every chunk of a key's BF.SCANDUMP.
func dumpOf(t *testing.T, rdb *redis.Client, key string) []string {
	t.Helper()
	var out []string
	for iter := int64(0); ; {
		d, err := rdb.BFScanDump(context.Background(), key, iter).Result()
		if err != nil {
			t.Fatal(err)
		}
		if d.Iter == 0 {
			return out
		}
		out = append(out, fmt.Sprint(d.Iter, ":", d.Data))
		iter = d.Iter
	}
}

// A RedisBloom dump's header is checked before anything is made: one that
// RedisBloom would refuse gets its reply, one whose filters exceed
// max-filter-bytes is refused before any byte is allocated, and data
// chunks are placed as RedisBloom places them, or refused with its texts.
func TestRedisBloomLoadChunkChecks(t *testing.T) {
	g := loadRBGolden(t)[0]
	header := g.Chunks[0].Data
	_, addr := start(t, Config{MaxFilterBytes: 100})
	c := dial(t, addr)
	for _, x := range []struct {
		args []string
		want string
	}{
		{[]string{"BF.LOADCHUNK", "k", "x", "y"}, "-ERR Second argument must be numeric"},
		{[]string{"BF.LOADCHUNK", "k", "2", "y"}, "-ERR not found"},
		{[]string{"BF.LOADCHUNK", "k", "1", "short"}, "-ERR received bad data"},
		{[]string{"BF.LOADCHUNK", "k", "1", string(header[:len(header)-1])}, "-ERR received bad data"},
		{[]string{"BF.LOADCHUNK", "k", "1", string(header)}, "-ERR the dump's filters take more than max-filter-bytes (100)"},
		{[]string{"BF.SCANDUMP", "k", "0"}, "-ERR not found"},
		{[]string{"CF.LOADCHUNK", "k", "0", "y"}, "-Invalid position"},
		{[]string{"CF.LOADCHUNK", "k", "x", "y"}, "-Invalid position"},
		{[]string{"CF.SCANDUMP", "k", "-1"}, "-Invalid position"},
	} {
		if got := c.do(t, x.args...); got != x.want {
			t.Errorf("%q: %q, want %q", x.args, got, x.want)
		}
	}
	_, addr = start(t, Config{})
	c = dial(t, addr)
	if got := c.do(t, "BF.LOADCHUNK", "k", "1", string(header)); got != "+OK" {
		t.Fatal(got)
	}
	size := int64(len(g.Chunks[1].Data))
	for _, x := range []struct {
		args []string
		want string
	}{
		{[]string{"BF.LOADCHUNK", "k", "1", string(header)}, "-ERR received bad data"},
		{[]string{"BF.LOADCHUNK", "k", "0", "ab"}, "-ERR received bad data"},
		{[]string{"BF.LOADCHUNK", "k", itoa(size + 100000), "ab"}, "-ERR invalid offset - no link found"},
		{[]string{"BF.LOADCHUNK", "k", itoa(size + 2), "ab"}, "-ERR invalid chunk - Too big for current filter"},
		{[]string{"BF.LOADCHUNK", "k", itoa(size + 1), "ab"}, "+OK"},
		{[]string{"BF.LOADCHUNK", "k", "3", "ab"}, "+OK"},
		{[]string{"BF.SCANDUMP", "k", "x"}, "-Second argument must be numeric"},
		{[]string{"BF.SCANDUMP", "k", "-5"}, "*2"},
		{[]string{"CF.LOADCHUNK", "k", "1", "x"}, "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]string{"CF.SCANDUMP", "k", "0"}, "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]string{"BF.RESERVE", "ohb", "0.01", "100"}, "+OK"},
		{[]string{"BF.LOADCHUNK", "ohb", "1", string(header)}, "-" + errNotRedisBloom},
		{[]string{"CF.ADD", "cf", "a"}, ":1"},
		{[]string{"CF.LOADCHUNK", "cf", "1", "a"}, "-ERR item exists"},
		{[]string{"CF.LOADCHUNK", "cf", "2", "a"}, "+OK"}, // a cuckoo key: byte 0 of its slots
		{[]string{"CF.LOADCHUNK", "none", "2", "a"}, "-ERR not found"},
	} {
		if got := c.do(t, x.args...); got != x.want {
			t.Errorf("%q: %q, want %q", x.args[:min(len(x.args), 3)], got, x.want)
		}
	}
	if !strings.Contains(c.do(t, "INFO", "persistence"), "$") {
		t.Fatal("INFO")
	}
}

// A RedisBloom dump's load counts against the upload limits from its
// header until its last chunk, with the bytes of all its filters: a
// connection may not start one larger than its share, and INFO shows the
// ones in progress.
func TestRedisBloomLoadsCountAsUploads(t *testing.T) {
	var g *redisbloomtest.Dump
	for _, x := range loadRBGolden(t) {
		if x.Name == "cap1000-e0.01-grown" { // 11,464 bytes of filters
			g = x
		}
	}
	_, addr := start(t, Config{MaxUploadBytes: 20_000})
	c := dial(t, addr)
	uploads := func() string {
		c.Write([]byte(resp("INFO", "persistence")))
		info := rawReply(t, c.r)
		i := strings.Index(info, "loadchunk_uploads:")
		return strings.Fields(info[i:])[0] + " " + strings.Fields(info[i:])[1]
	}
	if r := c.do(t, "BF.LOADCHUNK", "a", "1", string(g.Chunks[0].Data)); r != "+OK" {
		t.Fatal(r)
	}
	if u := uploads(); u != "loadchunk_uploads:1 loadchunk_upload_bytes:11464" {
		t.Fatalf("after the header: %s", u)
	}
	if r := c.do(t, "BF.LOADCHUNK", "b", "1", string(g.Chunks[0].Data)); !strings.Contains(r, "would hold more than 20000 bytes") {
		t.Fatalf("a second load past the connection's share: %q", r)
	}
	if n := c.do(t, "EXISTS", "b"); n != ":0" {
		t.Fatal("a refused load made its key")
	}
	for _, ch := range g.Chunks[1:] {
		if r := c.do(t, "BF.LOADCHUNK", "a", itoa(ch.Iterator), string(ch.Data)); r != "+OK" {
			t.Fatal(r)
		}
	}
	if u := uploads(); u != "loadchunk_uploads:0 loadchunk_upload_bytes:0" {
		t.Fatalf("after the last chunk: %s", u)
	}
	if r := c.do(t, "BF.LOADCHUNK", "b", "1", string(g.Chunks[0].Data)); r != "+OK" {
		t.Fatalf("a load after the first ended: %q", r)
	}
	c.do(t, "DEL", "b")
	if u := uploads(); u != "loadchunk_uploads:0 loadchunk_upload_bytes:0" {
		t.Fatalf("after DEL: %s", u)
	}
}
