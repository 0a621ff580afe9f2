package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ohbloom/ohbloom/internal/redisbloomtest"
	"github.com/ohbloom/ohbloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// CF replies that the golden files do not reach, byte for byte, in both
// protocols: RedisBloom's texts (rebloom.c) and shapes.
func TestCFReplies(t *testing.T) {
	_, addr := start(t, Config{})
	// A filter's header with a sub-filter count RedisBloom refuses.
	bad := make([]byte, redisbloom.CuckooHeaderSize)
	binary.LittleEndian.PutUint64(bad[8:], 3) // not a power of two
	binary.LittleEndian.PutUint64(bad[24:], 1)
	bad[32], bad[34] = 2, 20
	for _, proto := range []string{"2", "3"} {
		c := dial(t, addr)
		c.Write([]byte(resp("HELLO", proto)))
		rawReply(t, c.r)
		k := "k" + proto
		for _, x := range []struct {
			args []string
			want string
		}{
			{[]string{"CF.RESERVE", k, "4", "BUCKETSIZE", "2", "EXPANSION", "0"}, "+OK\r\n"},
			{[]string{"CF.SCANDUMP", k, "0"}, map[string]string{"2": "*2\r\n:0\r\n$-1\r\n", "3": "*2\r\n:0\r\n_\r\n"}[proto]},
			{[]string{"CF.ADD", k, "a"}, map[string]string{"2": ":1\r\n", "3": "#t\r\n"}[proto]},
			{[]string{"CF.ADD", k, "a"}, map[string]string{"2": ":1\r\n", "3": "#t\r\n"}[proto]},
			// a's two buckets are one here (of two buckets of two): a third
			// copy has no room, and the filter does not grow.
			{[]string{"CF.ADD", k, "a"}, "-Filter is full\r\n"},
			{[]string{"CF.INSERT", k, "ITEMS", "a"}, map[string]string{"2": "*1\r\n:-1\r\n", "3": "*1\r\n#f\r\n"}[proto]},
			{[]string{"CF.INSERTNX", k, "ITEMS", "a", "b"}, "*2\r\n:0\r\n:-1\r\n"},
			{[]string{"CF.ADDNX", k, "a"}, map[string]string{"2": ":0\r\n", "3": "#f\r\n"}[proto]},
			{[]string{"CF.COUNT", k, "a"}, ":4\r\n"}, // the one bucket counted as b1 and as b2, as RedisBloom counts
			{[]string{"CF.DEL", k, "a"}, map[string]string{"2": ":1\r\n", "3": "#t\r\n"}[proto]},
			{[]string{"CF.DEL", k, "zz"}, map[string]string{"2": ":0\r\n", "3": "#f\r\n"}[proto]},
			{[]string{"CF.DEBUG", k}, bulk("bktsize:2 buckets:2 items:1 deletes:1 filters:1 max_iterations:20 expansion:0")},
			{[]string{"CF.COMPACT", k}, "+OK\r\n"},
			{[]string{"CF.DEBUG", k}, bulk("bktsize:2 buckets:2 items:1 deletes:0 filters:1 max_iterations:20 expansion:0")},
			{[]string{"CF.COMPACT", "none"}, "-Cuckoo filter was not found\r\n"},
			{[]string{"CF.DEBUG", "none"}, "-ERR not found\r\n"},
			{[]string{"CF.INFO", "none"}, "-ERR not found\r\n"},
			{[]string{"CF.DEL", "none", "a"}, "-Not found\r\n"},
			{[]string{"CF.INSERT", "none", "NOCREATE", "ITEMS", "a"}, "-ERR not found\r\n"},
			{[]string{"CF.INSERT", k, "BOGUS", "ITEMS", "a"}, "-Unknown argument received\r\n"},
			{[]string{"CF.INSERT", k, "CAPACITY", "3", "ITEMS", "a"}, "-" + errCFInsertCapacity + "\r\n"},
			{[]string{"CF.RESERVE", k, "100"}, "-ERR item exists\r\n"},
			{[]string{"CF.RESERVE", "r", "100", "BUCKETSIZE", "0"}, "-BUCKETSIZE: value must be in the range [1, 255]\r\n"},
			{[]string{"CF.RESERVE", "r", "100", "MAXITERATIONS", "x"}, "-Couldn't parse MAXITERATIONS\r\n"},
			{[]string{"CF.RESERVE", "r", "100", "EXPANSION", "32769"}, "-EXPANSION: value must be in the range [0, 32768]\r\n"},
			{[]string{"CF.RESERVE", "r", "x"}, "-Bad capacity\r\n"},
			{[]string{"CF.LOADCHUNK", "new" + proto, "1", "short"}, "-Invalid header\r\n"},
			{[]string{"CF.LOADCHUNK", "new" + proto, "1", string(bad)}, "-Couldn't create filter!\r\n"},
			{[]string{"CF.LOADCHUNK", "new" + proto, "2", "a"}, "-ERR not found\r\n"},
			{[]string{"CF.LOADCHUNK", k, "1", string(bad)}, "-ERR item exists\r\n"},
			{[]string{"CF.LOADCHUNK", k, "100", "a"}, "-Couldn't load chunk!\r\n"},
			{[]string{"CF.LOADCHUNK", k, "-3", "a"}, "-Couldn't load chunk!\r\n"},
			{[]string{"CF.SCANDUMP", k, "1000"}, map[string]string{"2": "*2\r\n:0\r\n$-1\r\n", "3": "*2\r\n:0\r\n_\r\n"}[proto]},
			{[]string{"BF.ADD", "str", "v"}, map[string]string{"2": ":1\r\n", "3": "#t\r\n"}[proto]},
			{[]string{"CF.ADD", "str", "a"}, "-" + wrongType + "\r\n"},
			{[]string{"CF.INFO", "str"}, "-" + wrongType + "\r\n"},
			{[]string{"CF.COMPACT", "str"}, "-Cuckoo filter was not found\r\n"},
			{[]string{"CF.EXISTS", "str", "a"}, map[string]string{"2": ":0\r\n", "3": "#f\r\n"}[proto]},
			{[]string{"CF.COUNT", "str", "a"}, ":0\r\n"},
			{[]string{"TYPE", k}, "+MBbloomCF\r\n"},
		} {
			c.Write([]byte(resp(x.args...)))
			if got := rawReply(t, c.r); got != x.want {
				t.Errorf("RESP%s %q: %q, want %q", proto, x.args, got, x.want)
			}
		}
		c.do(t, "DEL", "str")
	}
}

func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

// CF.ADD, CF.INSERT and the NX forms refuse a key of 32 sub-filters
// (RedisBloom's cf-max-expansions) before they add anything.
func TestCFMaximumExpansions(t *testing.T) {
	_, addr := start(t, Config{})
	c := dial(t, addr)
	if r := c.do(t, "CF.RESERVE", "k", "2", "BUCKETSIZE", "1", "MAXITERATIONS", "1"); r != "+OK" {
		t.Fatal(r)
	}
	// The same item again and again: each copy past the first two needs a
	// new sub-filter.
	for i := 0; ; i++ {
		r := c.do(t, "CF.ADD", "k", "x")
		if r == "-Maximum expansions reached" {
			break
		}
		if r != ":1" || i > 100 {
			t.Fatalf("add %d: %q", i, r)
		}
	}
	s := c.do(t, "CF.INSERT", "k", "ITEMS", "y")
	if s != "-Maximum expansions reached" {
		t.Fatalf("CF.INSERT: %q", s)
	}
	var info []any
	rdb := client(t, addr, func(o *redis.Options) { o.Protocol = 2 })
	info, _ = rdb.Do(context.Background(), "CF.INFO", "k").Slice()
	if len(info) != 16 || info[5] != int64(32) {
		t.Fatalf("CF.INFO %v, want 32 filters", info)
	}
}

// The golden scripts survive restarts exactly: from the log alone (a
// crash before any save), from a snapshot taken midway and the log after
// it, and from the snapshot of a shutdown; each key, created by its
// script or loaded from RedisBloom's chunks, reaches RedisBloom's state
// byte for byte, so that no change was applied twice or lost.
func TestCuckooSurvivesRestarts(t *testing.T) {
	golden := redisbloomtest.LoadCuckoo(t, "../..")
	if testing.Short() {
		golden = golden[:3]
	}
	dir := t.TempDir()
	s, rdb := startOn(t, dir, Config{AppendFsync: "always"})
	ctx := context.Background()
	// Every reply was received under always: the log holds every change,
	// and a copy of the directory is what a kill -9 leaves.
	crash := func(name string) string { return copyTree(t, dir, name) }
	for i, g := range golden {
		replayCFGolden(t, rdb, g, "cf:"+g.Name)
		loadCFChunks(t, rdb, "load:"+g.Name, &g.CuckooRun)
		if i%2 == 1 {
			if err := rdb.Save(ctx).Err(); err != nil { // some keys in the snapshot, some in the log only
				t.Fatal(err)
			}
		}
	}
	logOnly := crash("log-only")
	for i, g := range golden {
		for _, key := range []string{"cf:" + g.Name, "load:" + g.Name} {
			checkCFReplies(t, key, runCFScript(t, rdb, g, key, &g.AfterMore), g.AfterMore.Replies)
		}
		if i == len(golden)/2 {
			if err := rdb.Save(ctx).Err(); err != nil { // a snapshot midway
				t.Fatal(err)
			}
		}
	}
	final := crash("final")
	s.Shutdown(ctx)
	for _, c := range []struct {
		dir   string
		state func(g *redisbloomtest.Cuckoo) *redisbloomtest.CuckooRun
	}{
		{logOnly, func(g *redisbloomtest.Cuckoo) *redisbloomtest.CuckooRun { return &g.CuckooRun }},
		{final, func(g *redisbloomtest.Cuckoo) *redisbloomtest.CuckooRun { return &g.AfterMore }},
		{dir, func(g *redisbloomtest.Cuckoo) *redisbloomtest.CuckooRun { return &g.AfterMore }},
	} {
		_, r := startOn(t, c.dir, Config{})
		for _, g := range golden {
			checkCFState(t, r, g, "cf:"+g.Name, c.state(g))
			checkCFState(t, r, g, "load:"+g.Name, c.state(g))
		}
	}
}

// Adds, deletes and compactions from several clients while saves run:
// a restart from what kill -9 leaves holds exactly the live keys, chunk
// for chunk (a change applied twice, or lost, would show).
func TestCuckooConcurrentChangesAndSaves(t *testing.T) {
	dir := t.TempDir()
	_, rdb := startOn(t, dir, Config{AppendFsync: "always"})
	ctx := context.Background()
	rdb.Do(ctx, "CF.RESERVE", "a", 64, "EXPANSION", 2)
	rdb.Do(ctx, "CF.RESERVE", "b", 1000, "BUCKETSIZE", 4)
	n := 300 // under a second; fewer changes rarely meet a save
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				key := []string{"a", "b"}[i%2]
				item := fmt.Sprint("c", c, "-", i%50) // repeats: counts above 1
				switch i % 5 {
				case 0, 1:
					rdb.Do(ctx, "CF.ADD", key, item)
				case 2:
					rdb.Do(ctx, "CF.INSERT", key, "ITEMS", item, item+"x", item+"y")
				case 3:
					rdb.Do(ctx, "CF.DEL", key, item)
				default:
					if i%25 == 4 {
						rdb.Do(ctx, "CF.COMPACT", key)
					} else {
						rdb.Do(ctx, "CF.ADDNX", key, item+"nx")
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 10 {
			rdb.Save(ctx)
		}
	}()
	wg.Wait()
	_, again := startOn(t, copyTree(t, dir, "copy"), Config{})
	for _, key := range []string{"a", "b"} {
		live, restored := cfChunks(t, rdb, key), cfChunks(t, again, key)
		if len(live) == 0 || !slices.Equal(live, restored) {
			t.Errorf("%s: restored %d chunks differ from the live %d", key, len(restored), len(live))
		}
		li, _ := rdb.Do(ctx, "CF.DEBUG", key).Text()
		ri, _ := again.Do(ctx, "CF.DEBUG", key).Text()
		if li != ri {
			t.Errorf("%s: restored %q, live %q", key, ri, li)
		}
	}
}

// A data directory written by the server before CF keys were cuckoo
// filters (testdata/legacy-cf: mklegacy.go.txt, run with that version's
// code, wrote it and the answers it gave): its counting-filter CF keys, one
// in the snapshot and changed in the log after it, one in the log alone,
// load as they are, answer as they did, take changes that survive a
// restart, and the start says once that they are legacy keys.
func TestLegacyCFDataDir(t *testing.T) {
	dir := copyTree(t, "testdata/legacy-cf/data", "data")
	raw, err := os.ReadFile("testdata/legacy-cf/answers.json")
	if err != nil {
		t.Fatal(err)
	}
	var answers map[string]struct {
		Exists []int64 `json:"mexists_s0_s399_l0_l399"`
		Info   []any   `json:"info"`
	}
	if err := json.Unmarshal(raw, &answers); err != nil {
		t.Fatal(err)
	}
	var logged syncBuffer
	s, rdb := startOn(t, dir, Config{AppendFsync: "always", Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if n := strings.Count(logged.String(), "legacy CF keys"); n != 1 || !strings.Contains(logged.String(), "keys=2") {
		t.Fatalf("the start logged %d legacy notes: %s", n, logged.String())
	}
	r2 := client(t, s.Addr().String(), func(o *redis.Options) { o.Protocol = 2 })
	ctx := context.Background()
	var items []any
	for _, p := range []string{"s", "l"} {
		for i := range 400 {
			items = append(items, fmt.Sprint(p, i))
		}
	}
	check := func(r *redis.Client, key string, extra int64) {
		t.Helper()
		got, err := r.Do(ctx, append([]any{"CF.MEXISTS", key}, items...)...).Slice()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if v != answers[key].Exists[i] {
				t.Fatalf("%s: CF.MEXISTS of item %d: %v, the old server said %d", key, i, v, answers[key].Exists[i])
			}
		}
		info, _ := r.Do(ctx, "CF.INFO", key).Slice()
		want := fmt.Sprint(answers[key].Info)
		want = strings.Replace(want, fmt.Sprint("inserted ", answers[key].Info[7]), fmt.Sprint("inserted ", int64(answers[key].Info[7].(float64))+extra), 1)
		if got := fmt.Sprint(info); got != want {
			t.Fatalf("%s: CF.INFO %s, the old server said %s", key, got, want)
		}
	}
	for _, key := range []string{"saved", "logged"} {
		check(r2, key, 0)
		if typ, _ := rdb.Type(ctx, key).Result(); typ != "MBbloomCF" {
			t.Fatalf("%s: TYPE %q", key, typ)
		}
	}
	if ok, _ := rdb.BFExists(ctx, "bf", "b").Result(); !ok {
		t.Fatal("the BF key beside them is lost")
	}
	// Changes, saved and logged, survive a restart; the note comes again.
	if n, _ := r2.Do(ctx, "CF.ADD", "saved", "new").Int(); n != 1 {
		t.Fatal("CF.ADD of a legacy key")
	}
	rdb.Save(ctx)
	rdb.Do(ctx, "CF.ADD", "logged", "new")
	d := crashCopy(t, dir)
	s.Shutdown(ctx)
	logged = syncBuffer{}
	s2, again := startOn(t, d, Config{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if strings.Count(logged.String(), "legacy CF keys") != 1 {
		t.Fatalf("the second start logged: %s", logged.String())
	}
	a2 := client(t, s2.Addr().String(), func(o *redis.Options) { o.Protocol = 2 })
	for _, key := range []string{"saved", "logged"} {
		check(a2, key, 1)
		if ok, _ := again.CFExists(ctx, key, "new").Result(); !ok {
			t.Fatalf("%s: the add after the first start is lost", key)
		}
	}
	// Its dump is ohbloom's, and loads as a legacy key.
	var chunks []chunk
	for iter := int64(0); ; {
		c, more := dumpStep(t, again, "CF.SCANDUMP", "saved", iter)
		if !more {
			break
		}
		chunks = append(chunks, c)
		iter = c.iter
	}
	if len(chunks) == 0 || chunks[0].iter < ohbloomIterators {
		t.Fatalf("legacy dump: %d chunks", len(chunks))
	}
	if err := loadAll(t, again, "CF.LOADCHUNK", "copy", chunks); err != nil {
		t.Fatal(err)
	}
	if n, _ := again.CFCount(ctx, "copy", "s150").Result(); n != 1 {
		t.Fatalf("the loaded legacy dump counts %d", n)
	}
	if r := again.Do(ctx, "CF.LOADCHUNK", "copy", 2, "a").Err(); r == nil || r.Error() != errCuckooDump {
		t.Fatalf("a RedisBloom chunk into a legacy key: %v", r)
	}
}

// A cuckoo key's record round-trips, and a damaged one is refused.
func TestCuckooRecord(t *testing.T) {
	f, _ := redisbloom.NewCuckoo(redisbloom.DefaultCuckooConfig(100))
	for i := range 300 {
		f.Add([]byte(fmt.Sprint(i)))
	}
	f.Delete([]byte("7"))
	e := newCuckooEntry(f)
	e.seq = 42
	var b bytes.Buffer
	if _, err := writeRecord(&b, "k", e); err != nil {
		t.Fatal(err)
	}
	name, _, got, err := readRecord(bytes.NewReader(b.Bytes()))
	if err != nil || name != "k" || got.kind != kindCuckoo || got.seq != 42 {
		t.Fatalf("%q %+v %v", name, got, err)
	}
	if !got.cuckooFilter().Equal(e.cuckooFilter()) {
		t.Fatal("the filter read back differs")
	}
	rec := b.Bytes()
	for _, cut := range []int{len(rec) - 1, len(rec) - 9, 64 + 1 + 8 + 4} {
		if _, _, _, err := readRecord(bytes.NewReader(rec[:cut])); err == nil {
			t.Fatalf("a record cut at %d of %d read", cut, len(rec))
		}
	}
	bad := bytes.Clone(rec)
	bad[len(bad)-20] ^= 1
	if _, _, _, err := readRecord(bytes.NewReader(bad)); err == nil {
		t.Fatal("a damaged filter read")
	}
	if newCuckooEntry(f2()).cuckooFilter() == nil || (&entry{kind: kindFixed}).cuckooFilter() != nil {
		t.Fatal("cuckooFilter")
	}
}

func f2() *redisbloom.CuckooFilter {
	f, _ := redisbloom.NewCuckoo(redisbloom.DefaultCuckooConfig(4))
	return f
}

// FuzzCuckooRecord decodes arbitrary bytes as a key record (a data file,
// an ohbloom dump, a load record): an error or a cuckoo key whose record
// round-trips, never a panic, and never an allocation its bytes do not
// justify (readCuckoo reads the RDB value as it arrives).
func FuzzCuckooRecord(f *testing.F) {
	cf, _ := redisbloom.NewCuckoo(redisbloom.CuckooConfig{Capacity: 16, BucketSize: 2, MaxIterations: 5, Expansion: 2})
	for i := range 40 {
		cf.Add([]byte(fmt.Sprint(i)))
	}
	var b bytes.Buffer
	writeRecord(&b, "k", newCuckooEntry(cf))
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:b.Len()/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		before := allocated()
		name, _, e, err := readRecord(bytes.NewReader(data))
		if n := allocated() - before; n > 8*uint64(len(data))+1<<20 {
			t.Fatalf("decoding %d bytes allocated %d", len(data), n)
		}
		if err != nil || e.kind != kindCuckoo {
			return
		}
		var again bytes.Buffer
		if _, err := writeRecord(&again, name, e); err != nil {
			t.Fatal(err)
		}
		_, _, e2, err := readRecord(bytes.NewReader(again.Bytes()))
		if err != nil || !e2.cuckooFilter().Equal(e.cuckooFilter()) {
			t.Fatalf("a decoded cuckoo record does not round-trip: %v", err)
		}
		e.cf.Add([]byte("x"))
		e.cf.Test([]byte("y"))
	})
}

// Every BF and CF command names the key it touches (keySpecs), so that a
// transaction claims it: CF.COMPACT and CF.DEBUG inside MULTI are ordered
// with the other clients' commands on their key.
func TestFilterCommandsClaimTheirKey(t *testing.T) {
	for name := range commands {
		if strings.HasPrefix(name, "bf.") || strings.HasPrefix(name, "cf.") {
			if keySpecs[name].keys != keysFirst {
				t.Errorf("%s: no claim of its key", name)
			}
		}
	}
}
