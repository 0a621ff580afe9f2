package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc64"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ohbloom/ohbloom/internal/redisbloomtest"
	"github.com/ohbloom/ohbloom/tools/rdb"
	"github.com/redis/go-redis/v9"
)

// rdbFilter is one filter of the RDB golden data
// (../shared/testdata/redisbloom/rdb/dump.json, copied to
// ../rdb/testdata): what RedisBloom 2.8.20 in Redis 7.4.1 answered for it
// and its DUMP payload.
type rdbFilter struct {
	DB           int            `json:"db"`
	Key          string         `json:"key"`
	Type         string         `json:"type"`
	Items        string         `json:"items"`
	Expire       bool           `json:"expire"`
	Info         map[string]any `json:"info"`
	AbsentProbes string         `json:"absent_probes"`
	Positives    []int          `json:"absent_probes_positive"`
	Counts       []int64        `json:"counts_first_1000_items"`
	Payload      string         `json:"dump_payload"`
}

// rdbGoldenPath is the RDB golden data's copy in tools/rdb.
const rdbGoldenPath = "../rdb/testdata/dump.json"

func loadRDBGolden(t testing.TB) []rdbFilter {
	t.Helper()
	data, err := os.ReadFile(rdbGoldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Filters []rdbFilter `json:"filters"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Filters) < 10 {
		t.Fatalf("%s: %d filters", rdbGoldenPath, len(g.Filters))
	}
	return g.Filters
}

func (f *rdbFilter) payload(t testing.TB) []byte {
	t.Helper()
	p, err := base64.StdEncoding.DecodeString(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkRestoredBloom checks that key answers as RedisBloom's filter f did:
// every item added present, exactly its false positives among the absent
// probes, its BF.INFO and BF.CARD, and DUMP gives back its payload.
func checkRestoredBloom(t *testing.T, c *redis.Client, key string, f *rdbFilter) {
	t.Helper()
	ctx := context.Background()
	items := anys(redisbloomtest.Range(t, f.Items))
	for start := 0; start < len(items); start += 5000 {
		found, err := c.BFMExists(ctx, key, items[start:min(len(items), start+5000)]...).Result()
		if err != nil || slices.Contains(found, false) {
			t.Fatalf("%s: an added item tests absent (%v)", key, err)
		}
	}
	probes := anys(redisbloomtest.Range(t, f.AbsentProbes))
	var positives []int
	for start := 0; start < len(probes); start += 5000 {
		found, err := c.BFMExists(ctx, key, probes[start:min(len(probes), start+5000)]...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range found {
			if ok {
				positives = append(positives, start+i)
			}
		}
	}
	if !slices.Equal(positives, f.Positives) {
		t.Errorf("%s: false positives %v, RedisBloom's %v", key, positives, f.Positives)
	}
	info, err := c.Do(ctx, "BF.INFO", key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if got := infoMap(t, info); !sameInfo(got, f.Info) {
		t.Errorf("%s: BF.INFO %v, RedisBloom's %v", key, got, f.Info)
	}
	if n, err := c.BFCard(ctx, key).Result(); err != nil || float64(n) != f.Info["Number of items inserted"] {
		t.Errorf("%s: BF.CARD %d %v", key, n, err)
	}
	if typ, err := c.Type(ctx, key).Result(); err != nil || typ != "MBbloom--" {
		t.Errorf("%s: TYPE %q %v", key, typ, err)
	}
	if p, err := c.Dump(ctx, key).Result(); err != nil || p != string(f.payload(t)) {
		t.Errorf("%s: DUMP gave %d bytes (%v), RedisBloom's payload is %d", key, len(p), err, len(f.payload(t)))
	}
}

// checkRestoredCuckoo checks that key answers as RedisBloom's cuckoo
// filter f did: exactly its false positives among the absent probes, its
// CF.COUNTs of the first 1000 items, its CF.INFO, and DUMP gives back its
// payload.
func checkRestoredCuckoo(t *testing.T, c *redis.Client, key string, f *rdbFilter) {
	t.Helper()
	ctx := context.Background()
	probes := anys(redisbloomtest.Range(t, f.AbsentProbes))
	var positives []int
	for start := 0; start < len(probes); start += 5000 {
		found, err := c.CFMExists(ctx, key, probes[start:min(len(probes), start+5000)]...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range found {
			if ok {
				positives = append(positives, start+i)
			}
		}
	}
	if !slices.Equal(positives, f.Positives) {
		t.Errorf("%s: false positives %v, RedisBloom's %v", key, positives, f.Positives)
	}
	items := anys(redisbloomtest.Range(t, f.Items))
	p := c.Pipeline()
	counts := make([]*redis.IntCmd, len(f.Counts))
	for i := range counts {
		counts[i] = p.CFCount(ctx, key, items[i])
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, n := range counts {
		if n.Val() != f.Counts[i] {
			t.Errorf("%s: CF.COUNT of item %d: %d, RedisBloom's %d", key, i, n.Val(), f.Counts[i])
			break
		}
	}
	info, err := c.Do(ctx, "CF.INFO", key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if got := infoMap(t, info); !sameInfo(got, f.Info) {
		t.Errorf("%s: CF.INFO %v, RedisBloom's %v", key, got, f.Info)
	}
	if typ, err := c.Type(ctx, key).Result(); err != nil || typ != "MBbloomCF" {
		t.Errorf("%s: TYPE %q %v", key, typ, err)
	}
	if d, err := c.Dump(ctx, key).Result(); err != nil || d != string(f.payload(t)) {
		t.Errorf("%s: DUMP gave %d bytes (%v), RedisBloom's payload is %d", key, len(d), err, len(f.payload(t)))
	}
}

// Every Bloom filter of the RDB golden data, restored from RedisBloom's
// DUMP payload, answers as RedisBloom did and dumps back to its bytes, in
// both protocols; RESTORE over it needs REPLACE.
func TestRestoreRedisBloomPayloads(t *testing.T) {
	golden := loadRDBGolden(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			_, addr := start(t, Config{})
			c := client(t, addr, func(o *redis.Options) { o.Protocol = proto })
			ctx := context.Background()
			blooms, cuckoos := 0, 0
			for i := range golden {
				f := &golden[i]
				p := f.payload(t)
				if f.Type == rdb.CuckooTypeName {
					cuckoos++
					if err := c.Restore(ctx, f.Key, 0, string(p)).Err(); err != nil {
						t.Fatalf("%s: RESTORE: %v", f.Key, err)
					}
					checkRestoredCuckoo(t, c, f.Key, f)
					wantErr(t, c.Restore(ctx, f.Key, 0, string(p)).Err(), "BUSYKEY Target key name already exists.")
					if err := c.RestoreReplace(ctx, f.Key, 0, string(p)).Err(); err != nil {
						t.Fatal(err)
					}
					checkRestoredCuckoo(t, c, f.Key, f)
					continue
				}
				blooms++
				if err := c.Restore(ctx, f.Key, 0, string(p)).Err(); err != nil {
					t.Fatalf("%s: RESTORE: %v", f.Key, err)
				}
				checkRestoredBloom(t, c, f.Key, f)
				wantErr(t, c.Restore(ctx, f.Key, 0, string(p)).Err(), "BUSYKEY Target key name already exists.")
				// Replacing it with another filter, then with itself.
				other := &golden[(i+1)%len(golden)]
				if other.Type == rdb.BloomTypeName {
					if err := c.RestoreReplace(ctx, f.Key, 0, other.Payload).Err(); err == nil {
						t.Fatalf("%s: RESTORE REPLACE of a base64 string taken", f.Key)
					}
					if err := c.RestoreReplace(ctx, f.Key, 0, string(other.payload(t))).Err(); err != nil {
						t.Fatal(err)
					}
					checkRestoredBloom(t, c, f.Key, other)
				}
				if err := c.RestoreReplace(ctx, f.Key, 0, string(p)).Err(); err != nil {
					t.Fatal(err)
				}
				checkRestoredBloom(t, c, f.Key, f)
			}
			if blooms < 5 || cuckoos < 4 {
				t.Fatalf("%d Bloom and %d cuckoo filters in the golden data", blooms, cuckoos)
			}
			if n, err := c.DBSize(ctx).Result(); err != nil || n != int64(blooms+cuckoos) {
				t.Fatalf("DBSIZE %d %v, want %d", n, err, blooms+cuckoos)
			}
		})
	}
}

// A key restored from RedisBloom's payload is RedisBloom's filter: adds
// reach the same state as in a key loaded from the same filter's
// SCANDUMP, and the dumps of both agree.
func TestRestoredBloomGrowsAsLoaded(t *testing.T) {
	_, addr := start(t, Config{})
	c := client(t, addr)
	ctx := context.Background()
	for _, g := range loadRBGolden(t) {
		loadRBChunks(t, c, "loaded", g)
		p, err := c.Dump(ctx, "loaded").Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Restore(ctx, "restored", 0, p).Err(); err != nil {
			t.Fatalf("%s: %v", g.Name, err)
		}
		checkRBKey(t, c, "restored", &g.State, rbRange(t, g.AbsentProbes))
		more := rbRange(t, g.AfterMore.MoreItems)
		maddAsRedisBloom(t, c, "restored", more)
		checkRBKey(t, c, "restored", &g.AfterMore.State, rbRange(t, g.AbsentProbes))
		c.Del(ctx, "loaded", "restored")
	}
}

// The refusals of RESTORE and DUMP, with Redis's texts where Redis has one
// and in Redis's order: the options, the key, the TTL, then the payload.
func TestRestoreErrors(t *testing.T) {
	golden := loadRDBGolden(t)
	bloom := string(golden[0].payload(t))
	var cuckoo string
	for i := range golden {
		if golden[i].Type == rdb.CuckooTypeName {
			cuckoo = string(golden[i].payload(t))
		}
	}
	flipped := []byte(bloom)
	flipped[5] ^= 1
	_, value, err := rdb.ParsePayload([]byte(bloom))
	if err != nil {
		t.Fatal(err)
	}
	// The value cut short inside the filter's bits, framed with a right
	// checksum: only the decoder can refuse it.
	cut := rdb.AppendPayload(nil, rdb.TypeModule2, value[:len(value)-20])
	_, cvalue, err := rdb.ParsePayload([]byte(cuckoo))
	if err != nil {
		t.Fatal(err)
	}
	cuckooCut := string(rdb.AppendPayload(nil, rdb.TypeModule2, cvalue[:len(cvalue)-30]))
	other, _ := rdb.NewModuleID("othermod1", 1)
	_, addr := start(t, Config{})
	c := dial(t, addr)
	if r := c.do(t, "BF.ADD", "have", "x"); r != ":1" {
		t.Fatal(r)
	}
	for _, x := range []struct {
		args []string
		want string
	}{
		{[]string{"RESTORE", "k", "0"}, "-ERR wrong number of arguments for 'restore' command"},
		{[]string{"DUMP"}, "-ERR wrong number of arguments for 'dump' command"},
		{[]string{"DUMP", "missing"}, "$-1"},
		{[]string{"RESTORE", "k", "0", bloom, "EXTRA"}, "-ERR syntax error"},
		{[]string{"RESTORE", "k", "0", bloom, "IDLETIME"}, "-ERR syntax error"},
		{[]string{"RESTORE", "k", "0", bloom, "IDLETIME", "-1"}, "-ERR Invalid IDLETIME value, must be >= 0"},
		{[]string{"RESTORE", "k", "0", bloom, "IDLETIME", "x"}, "-ERR value is not an integer or out of range"},
		{[]string{"RESTORE", "k", "0", bloom, "FREQ", "256"}, "-ERR Invalid FREQ value, must be >= 0 and <= 255"},
		{[]string{"RESTORE", "k", "0", bloom, "FREQ", "-1"}, "-ERR Invalid FREQ value, must be >= 0 and <= 255"},
		{[]string{"RESTORE", "k", "0", bloom, "IDLETIME", "1", "FREQ", "1"}, "-ERR syntax error"},
		{[]string{"RESTORE", "k", "0", bloom, "FREQ", "1", "IDLETIME", "1"}, "-ERR syntax error"},
		{[]string{"RESTORE", "have", "-1", "garbage"}, "-BUSYKEY Target key name already exists."},
		{[]string{"RESTORE", "k", "-1", bloom}, "-ERR Invalid TTL value, must be >= 0"},
		{[]string{"RESTORE", "k", "x", bloom}, "-ERR value is not an integer or out of range"},
		{[]string{"RESTORE", "k", "0", string(flipped)}, "-ERR DUMP payload version or checksum are wrong"},
		{[]string{"RESTORE", "k", "0", "short"}, "-ERR DUMP payload version or checksum are wrong"},
		{[]string{"RESTORE", "k", "0", bloom[:len(bloom)-1]}, "-ERR DUMP payload version or checksum are wrong"},
		{[]string{"RESTORE", "k", "0", string(rdb.AppendPayload(nil, rdb.TypeString, []byte("\x05hello")))},
			"-ERR ohbloom serve holds Bloom and cuckoo filters only: the payload is a string value"},
		{[]string{"RESTORE", "k", "0", string(rdb.AppendPayload(nil, rdb.TypeModule2, rdb.AppendBlobValue(nil, other, []byte("x"))))},
			"-ERR ohbloom serve holds Bloom and cuckoo filters only: the payload is a value of module type 'othermod1'"},
		{[]string{"RESTORE", "k", "0", string(rdb.AppendPayload(nil, rdb.TypeModule2, rdb.AppendBlobValue(nil, ohbloomModule, []byte("OHBSRV\x00\x02 not a record"))))},
			"-ERR Bad data format: corrupt record: truncated header"},
		{[]string{"RESTORE", "k", "0", string(cut)}, "-ERR Bad data format: rdb: at byte "},
		{[]string{"RESTORE", "k", "0", cuckooCut}, "-ERR Bad data format: rdb: at byte "},
		{[]string{"EXISTS", "k"}, ":0"},
		// A time already past makes no key, and removes the one REPLACE
		// would replace, as in Redis.
		{[]string{"RESTORE", "k", "1", bloom, "ABSTTL"}, "+OK"},
		{[]string{"EXISTS", "k"}, ":0"},
		{[]string{"RESTORE", "have", "1", bloom, "ABSTTL"}, "-BUSYKEY Target key name already exists."},
		{[]string{"RESTORE", "have", "1", bloom, "ABSTTL", "REPLACE"}, "+OK"},
		{[]string{"EXISTS", "have"}, ":0"},
		{[]string{"RESTORE", "k", "0", bloom, "replace", "absttl", "idletime", "5"}, "+OK"},
		{[]string{"RESTORE", "k2", "0", bloom, "FREQ", "255"}, "+OK"},
		{[]string{"TYPE", "k2"}, "+MBbloom--"},
	} {
		if got := c.do(t, x.args...); !strings.HasPrefix(got, x.want) || x.want == "+OK" && got != x.want {
			t.Errorf("%q: %q, want %q", x.args[:min(len(x.args), 3)], got, x.want)
		}
	}

	// Filters past max-filter-bytes are refused before they are made.
	_, addr = start(t, Config{MaxFilterBytes: 1000})
	c = dial(t, addr)
	if got := c.do(t, "RESTORE", "k", "0", bloom); got != "-ERR the payload's filters take more than max-filter-bytes (1000)" {
		t.Fatal(got)
	}
	if got := c.do(t, "EXISTS", "k"); got != ":0" {
		t.Fatal(got)
	}
}

// Keys of ohbloom's own kinds dump in a payload of module type ohbloom--,
// which a Redis without that module refuses (RedisBloom's decoders refuse
// it too), and RESTORE here takes back, under any name: the copy answers
// exactly as the original. CF keys dump RedisBloom's cuckoo payloads, an
// empty one too.
func TestDumpRestoreOhbloomKeys(t *testing.T) {
	_, addr := start(t, Config{})
	c := client(t, addr)
	ctx := context.Background()
	items := make([]any, 3000)
	probes := make([]any, 20000)
	for i := range items {
		items[i] = "item:" + strconv.Itoa(i)
	}
	for i := range probes {
		probes[i] = "probe:" + strconv.Itoa(i)
	}
	must := func(cmd *redis.Cmd) {
		t.Helper()
		if err := cmd.Err(); err != nil {
			t.Fatal(err)
		}
	}
	must(c.Do(ctx, "BF.RESERVE", "scalable", "0.01", "500", "EXPANSION", "2"))
	must(c.Do(ctx, append([]any{"BF.MADD", "scalable"}, items...)...))
	must(c.Do(ctx, "BF.RESERVE", "fixed", "0.001", "5000", "NONSCALING"))
	must(c.Do(ctx, append([]any{"BF.MADD", "fixed"}, items...)...))
	for _, it := range items[:1000] {
		must(c.Do(ctx, "CF.ADD", "counting", it))
	}
	for _, it := range items[:100] {
		must(c.Do(ctx, "CF.DEL", "counting", it))
	}
	answers := func(key string, cf bool) string {
		var b strings.Builder
		cmd, info := "BF.MEXISTS", "BF.INFO"
		if cf {
			cmd, info = "CF.MEXISTS", "CF.INFO"
		}
		for _, set := range [][]any{items, probes} {
			got, err := c.Do(ctx, append([]any{cmd, key}, set...)...).Slice()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprint(&b, got)
		}
		in, err := c.Do(ctx, info, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(&b, in)
		typ, _ := c.Type(ctx, key).Result()
		return b.String() + typ
	}
	must(c.Do(ctx, "CF.RESERVE", "empty", "1000"))
	for _, key := range []string{"scalable", "fixed", "counting", "empty"} {
		p, err := c.Dump(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		typ, value, err := rdb.ParsePayload([]byte(p))
		if err != nil || typ != rdb.TypeModule2 {
			t.Fatalf("%s: the payload does not parse as Redis's: %v %v", key, typ, err)
		}
		cf := key == "counting" || key == "empty"
		if cf {
			// A CF key is RedisBloom's cuckoo filter, and dumps as
			// RedisBloom does: an empty one too, which CF.SCANDUMP does
			// not dump at all.
			if _, err := rdb.DecodeCuckoo(value); err != nil {
				t.Fatalf("%s: not RedisBloom's cuckoo payload: %v", key, err)
			}
		} else {
			if id, err := rdb.ModuleOf(value); err != nil || id.Name() != "ohbloom--" {
				t.Fatalf("%s: module type %v %v", key, id, err)
			}
			if _, err := rdb.DecodeBloom(value); err == nil {
				t.Fatalf("%s: RedisBloom's Bloom decoder takes ohbloom's payload", key)
			}
			if _, err := rdb.DecodeCuckoo(value); err == nil {
				t.Fatalf("%s: RedisBloom's cuckoo decoder takes ohbloom's payload", key)
			}
		}
		want := answers(key, cf)
		if err := c.Restore(ctx, key+":copy", 0, p).Err(); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if got := answers(key+":copy", cf); got != want {
			t.Errorf("%s: the copy answers otherwise", key)
		}
		if again, err := c.Dump(ctx, key+":copy").Result(); cf && (err != nil || again != p) {
			t.Errorf("%s: the copy dumps otherwise (%v)", key, err)
		}
		// Over another kind of key, with REPLACE.
		if err := c.RestoreReplace(ctx, "scalable:copy", 0, p).Err(); err != nil {
			t.Fatal(err)
		}
		if got := answers("scalable:copy", cf); got != want {
			t.Errorf("%s: replaced, the copy answers otherwise", key)
		}
	}
}

// DUMP's payload fits what RESTORE can take, max-request-bytes: a key
// whose payload would not is refused, and BF.SCANDUMP moves it.
func TestDumpBoundedByRequestSize(t *testing.T) {
	golden := loadRDBGolden(t)
	var small *rdbFilter
	for i := range golden {
		if golden[i].Key == "bf:madd-default" {
			small = &golden[i]
		}
	}
	_, addr := start(t, Config{MaxRequestBytes: 4096})
	c := dial(t, addr)
	if r := c.do(t, "RESTORE", "rb", "0", string(small.payload(t))); r != "+OK" {
		t.Fatal(r)
	}
	if r := c.do(t, "DUMP", "rb"); !strings.HasPrefix(r, "$") || r == "$-1" {
		t.Fatalf("DUMP of a small key: %q", r)
	}
	if r := c.do(t, "BF.RESERVE", "big", "0.01", "10000"); r != "+OK" {
		t.Fatal(r)
	}
	if r := c.do(t, "DUMP", "big"); !strings.Contains(r, "more than max-request-bytes (4096)") {
		t.Fatalf("DUMP of a key past max-request-bytes: %q", r)
	}
	for i := 0; i < 5000; i += 50 {
		args := []string{"BF.MADD", "rb"}
		for j := range 50 {
			args = append(args, "grow:"+strconv.Itoa(i+j))
		}
		c.do(t, args...)
	}
	if r := c.do(t, "DUMP", "rb"); !strings.Contains(r, "more than max-request-bytes (4096)") {
		t.Fatalf("DUMP of a RedisBloom key grown past max-request-bytes: %q", r)
	}
}

// Restored keys are in the log: a crash (a copy of the data directory,
// every reply received under appendfsync always) and a restart give them
// back, replaced keys with their new contents, and so does a save.
func TestRestoreSurvivesRestart(t *testing.T) {
	golden := loadRDBGolden(t)
	dir := t.TempDir()
	s, c := startOn(t, dir, Config{AppendFsync: "always"})
	ctx := context.Background()
	var blooms []*rdbFilter
	for i := range golden {
		if golden[i].Type == rdb.BloomTypeName {
			blooms = append(blooms, &golden[i])
		}
	}
	for i, f := range blooms {
		if err := c.Restore(ctx, f.Key, 0, string(f.payload(t))).Err(); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if err := c.Save(ctx).Err(); err != nil { // one key in the snapshot, the rest in the log
				t.Fatal(err)
			}
		}
	}
	// The key in the snapshot replaced in the log by another filter, and
	// an ohbloom key restored from its payload.
	if err := c.RestoreReplace(ctx, blooms[1].Key, 0, string(blooms[0].payload(t))).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "BF.MADD", "own", "a", "b", "c").Err(); err != nil {
		t.Fatal(err)
	}
	own, err := c.Dump(ctx, "own").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Restore(ctx, "own:copy", 0, own).Err(); err != nil {
		t.Fatal(err)
	}
	var cuckoos []*rdbFilter
	for i := range golden {
		if f := &golden[i]; f.Type == rdb.CuckooTypeName {
			cuckoos = append(cuckoos, f)
			if err := c.Restore(ctx, f.Key, 0, string(f.payload(t))).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	crash := copyTree(t, dir, "crash")
	s.Shutdown(ctx)
	for _, d := range []string{crash, dir} {
		_, r := startOn(t, d, Config{})
		for i, f := range blooms {
			want := f
			if i == 1 {
				want = blooms[0]
			}
			checkRestoredBloom(t, r, f.Key, want)
		}
		for _, f := range cuckoos {
			checkRestoredCuckoo(t, r, f.Key, f)
		}
		got, err := r.BFMExists(ctx, "own:copy", "a", "b", "c").Result()
		if err != nil || slices.Contains(got, false) {
			t.Fatalf("%s: the restored ohbloom key: %v %v", d, got, err)
		}
	}
}

// RESTORE inside MULTI runs at EXEC, and a REPLACE there is seen whole by
// the transaction's next command.
func TestRestoreInTransaction(t *testing.T) {
	golden := loadRDBGolden(t)
	_, addr := start(t, Config{})
	c := client(t, addr)
	ctx := context.Background()
	p := string(golden[0].payload(t))
	cmds, err := c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Restore(ctx, "k", 0, p)
		pipe.BFCard(ctx, "k")
		pipe.Dump(ctx, "k")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := cmds[1].(*redis.IntCmd).Val(); float64(n) != golden[0].Info["Number of items inserted"] {
		t.Fatalf("BF.CARD in the transaction: %d", n)
	}
	if d := cmds[2].(*redis.StringCmd).Val(); d != p {
		t.Fatal("DUMP in the transaction")
	}
}

// REPLACEs of one key racing adds and reads never
// show a missing key or a torn one.
func TestRestoreReplaceConcurrently(t *testing.T) {
	golden := loadRDBGolden(t)
	_, addr := start(t, Config{})
	ctx := context.Background()
	a, b := string(golden[0].payload(t)), string(golden[1].payload(t))
	c := client(t, addr)
	if err := c.Restore(ctx, "k", 0, a).Err(); err != nil {
		t.Fatal(err)
	}
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	done := make(chan error, 2)
	go func() {
		w := client(t, addr)
		for i := range rounds {
			p := a
			if i%2 == 0 {
				p = b
			}
			if err := w.RestoreReplace(ctx, "k", 0, p).Err(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	go func() {
		r := client(t, addr)
		for range rounds {
			p, err := r.Dump(ctx, "k").Result()
			if err != nil {
				done <- fmt.Errorf("DUMP: %v", err)
				return
			}
			if p != a && p != b {
				done <- fmt.Errorf("DUMP gave neither payload (%d bytes)", len(p))
				return
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

// redisCRC64 is Redis's CRC-64 (Jones, reflected, no inversion), from
// hash/crc64's table of the reflected polynomial: Update inverts before
// and after, which a start of ^0 and a final ^ undo.
func redisCRC64(p []byte) uint64 {
	return ^crc64.Update(^uint64(0), crc64.MakeTable(0x95ac9329ac4bc9b5), p)
}

// A real Redis refuses ohbloom's payloads cleanly, as any module value it
// has no module for: "Bad data format", not a crash or a key (CI starts
// a redis-server: OHBLOOM_REDIS_ADDR). The payload is framed with that
// server's own RDB version, so that its version check passes.
func TestOhbloomPayloadRefusedByRedis(t *testing.T) {
	addr := os.Getenv("OHBLOOM_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must set OHBLOOM_REDIS_ADDR (.ci/run starts redis-server)")
		}
		t.Skip("OHBLOOM_REDIS_ADDR is not set")
	}
	ctx := context.Background()
	r := redis.NewClient(&redis.Options{Addr: addr, DB: 6, MaxRetries: -1})
	t.Cleanup(func() { r.FlushDB(ctx); r.Close() })
	if err := r.Set(ctx, "s", "hello", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ref, err := r.Dump(ctx, "s").Result()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := redisCRC64([]byte(ref[:len(ref)-8])), binary.LittleEndian.Uint64([]byte(ref[len(ref)-8:])); got != want {
		t.Fatalf("redisCRC64 %016x, Redis's %016x", got, want)
	}
	version := binary.LittleEndian.Uint16([]byte(ref[len(ref)-10:]))

	_, addr2 := start(t, Config{})
	c := client(t, addr2)
	if err := c.Do(ctx, "BF.ADD", "own", "a").Err(); err != nil {
		t.Fatal(err)
	}
	own, err := c.Dump(ctx, "own").Result()
	if err != nil {
		t.Fatal(err)
	}
	p := []byte(own[:len(own)-10])
	p = binary.LittleEndian.AppendUint16(p, version)
	p = binary.LittleEndian.AppendUint64(p, redisCRC64(p))
	wantErr(t, r.Restore(ctx, "own", 0, string(p)).Err(), "Bad data format")
	if n, _ := r.Exists(ctx, "own").Result(); n != 0 {
		t.Fatal("Redis made a key of ohbloom's payload")
	}
	// And our RESTORE takes the payload at that version too.
	if err := c.Restore(ctx, "own:copy", 0, string(p)).Err(); err != nil {
		t.Fatal(err)
	}

	// The refusals before the payload is decoded, and of a payload that
	// fails its checks, are Redis's, text for text.
	bad := []byte(ref)
	bad[1] ^= 1
	for _, args := range [][]any{
		{"RESTORE", "k", "0", ref, "EXTRA"},
		{"RESTORE", "k", "0", ref, "IDLETIME"},
		{"RESTORE", "k", "0", ref, "IDLETIME", "-1"},
		{"RESTORE", "k", "0", ref, "IDLETIME", "x"},
		{"RESTORE", "k", "0", ref, "FREQ", "256"},
		{"RESTORE", "k", "0", ref, "IDLETIME", "1", "FREQ", "1"},
		{"RESTORE", "k", "-1", ref},
		{"RESTORE", "k", "1.5", ref},
		{"RESTORE", "k", "0", string(bad)},
		{"RESTORE", "k", "0", "short"},
		{"RESTORE", "k", "0"},
		{"RESTORE", "own", "-1", "x"},
		{"DUMP"},
	} {
		if len(args) > 1 && args[1] == "own" {
			r.Set(ctx, "own", "x", 0)
		}
		_, rerr := r.Do(ctx, args...).Result()
		_, oerr := c.Do(ctx, args...).Result()
		if rerr == nil || oerr == nil || rerr.Error() != oerr.Error() {
			t.Errorf("%q: Redis %v, ohbloom %v", args[:min(len(args), 3)], rerr, oerr)
		}
	}
}

// The cuckoo filters RedisBloom made (../shared/testdata/redisbloom/cf),
// restored from their DUMP payloads: each answers as RedisBloom did
// (chunks, CF.INFO, false positives, counts) and dumps back to its
// payload; the file's second script then gives RedisBloom's replies and
// reaches its second state, whose DUMP is RedisBloom's second payload.
func TestRestoreCuckooGolden(t *testing.T) {
	golden := redisbloomtest.LoadCuckoo(t, "../..")
	_, addr := start(t, Config{})
	c := client(t, addr)
	ctx := context.Background()
	for _, g := range golden {
		p := [2]string{string(g.DumpPayload), string(g.AfterMore.DumpPayload)}
		if p[0] == "" || p[1] == "" {
			t.Fatalf("%s: no DUMP payloads", g.Name)
		}
		key := "restored:" + g.Name
		if err := c.Restore(ctx, key, 0, p[0]).Err(); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		checkCFState(t, c, g, key, &g.CuckooRun)
		if d, err := c.Dump(ctx, key).Result(); err != nil || d != p[0] {
			t.Errorf("%s: DUMP differs from RedisBloom's (%v)", key, err)
		}
		checkCFReplies(t, key, runCFScript(t, c, g, key, &g.AfterMore), g.AfterMore.Replies)
		checkCFState(t, c, g, key, &g.AfterMore)
		if d, err := c.Dump(ctx, key).Result(); err != nil || d != p[1] {
			t.Errorf("%s: after the second script, DUMP differs from RedisBloom's (%v)", key, err)
		}
	}
}

// CF keys kept from the counting-filter server (testdata/legacy-cf) are
// not RedisBloom's: they dump in ohbloom's payload, and RESTORE makes a
// copy that answers as they do.
func TestDumpRestoreLegacyCFKeys(t *testing.T) {
	dir := copyTree(t, "testdata/legacy-cf/data", "data")
	_, c := startOn(t, dir, Config{})
	ctx := context.Background()
	var items []any
	for i := range 400 {
		items = append(items, fmt.Sprint("s", i), fmt.Sprint("l", i))
	}
	answers := func(key string) string {
		got, err := c.Do(ctx, append([]any{"CF.MEXISTS", key}, items...)...).Slice()
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Do(ctx, "CF.INFO", key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(got, infoMap(t, info))
	}
	for _, key := range []string{"saved", "logged"} {
		p, err := c.Dump(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		_, value, err := rdb.ParsePayload([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := rdb.ModuleOf(value); id.Name() != "ohbloom--" {
			t.Fatalf("%s: a legacy CF key dumps as %v", key, id)
		}
		if err := c.Restore(ctx, key+":copy", 0, p).Err(); err != nil {
			t.Fatal(err)
		}
		if got, want := answers(key+":copy"), answers(key); got != want || !strings.Contains(want, "1") {
			t.Errorf("%s: the copy answers %s, the key %s", key, got, want)
		}
	}
}

// RESTORE's TTL, relative or absolute (ABSTTL), becomes the key's expiry,
// in the session's database; REPLACE gives the key the new one (or none);
// a time already past makes no key. The expiry and the database survive a
// crash (the log) and a save.
func TestRestoreTTLAndDatabases(t *testing.T) {
	golden := loadRDBGolden(t)
	p := string(golden[0].payload(t))
	dir := t.TempDir()
	s, c := startOn(t, dir, Config{AppendFsync: "always"})
	ctx := context.Background()
	now := time.Now()
	if err := c.Restore(ctx, "rel", 100*time.Second, p).Err(); err != nil {
		t.Fatal(err)
	}
	if d, err := c.PTTL(ctx, "rel").Result(); err != nil || d <= 0 || d > 100*time.Second {
		t.Fatalf("PTTL after RESTORE with a TTL of 100 s: %v %v", d, err)
	}
	at := now.Add(time.Hour).UnixMilli()
	if err := c.Do(ctx, "RESTORE", "abs", at, p, "ABSTTL").Err(); err != nil {
		t.Fatal(err)
	}
	if ms, err := c.Do(ctx, "PEXPIRETIME", "abs").Int64(); err != nil || ms != at {
		t.Fatalf("PEXPIRETIME after ABSTTL %d: %d %v", at, ms, err)
	}
	// REPLACE with no TTL leaves the key without one.
	if err := c.RestoreReplace(ctx, "abs", 0, p).Err(); err != nil {
		t.Fatal(err)
	}
	if d, err := c.Do(ctx, "PTTL", "abs").Int64(); err != nil || d != -1 {
		t.Fatalf("PTTL after REPLACE without a TTL: %v %v", d, err)
	}
	// A time past: OK, and no key.
	if err := c.Do(ctx, "RESTORE", "past", now.Add(-time.Hour).UnixMilli(), p, "ABSTTL").Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, "past").Result(); n != 0 {
		t.Fatal("a RESTORE with a time past made a key")
	}
	// In database 3, with its expiry.
	c3 := client(t, c.Options().Addr, func(o *redis.Options) { o.DB = 3 })
	if err := c3.Do(ctx, "RESTORE", "db3", at, p, "ABSTTL").Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, "db3").Result(); n != 0 {
		t.Fatal("RESTORE in database 3 made a key in database 0")
	}
	if d, err := c3.Dump(ctx, "db3").Result(); err != nil || d != p {
		t.Fatalf("DUMP in database 3: %v", err)
	}
	crash := copyTree(t, dir, "crash")
	s.Shutdown(ctx)
	for _, d := range []string{crash, dir} {
		_, r := startOn(t, d, Config{})
		r3 := client(t, r.Options().Addr, func(o *redis.Options) { o.DB = 3 })
		if ms, err := r3.Do(ctx, "PEXPIRETIME", "db3").Int64(); err != nil || ms != at {
			t.Fatalf("%s: PEXPIRETIME of db3 in database 3: %d %v", d, ms, err)
		}
		if d, err := r.PTTL(ctx, "rel").Result(); err != nil || d <= 0 {
			t.Fatalf("PTTL of rel after a restart: %v %v", d, err)
		}
		if d, err := r.Do(ctx, "PTTL", "abs").Int64(); err != nil || d != -1 {
			t.Fatalf("PTTL of abs after a restart: %v %v", d, err)
		}
		checkRestoredBloom(t, r3, "db3", &golden[0])
	}
}
