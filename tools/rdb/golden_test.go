package rdb

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The golden data RedisBloom 2.8.20 in redis-server 7.4.1 made
// (/work/shared/testdata/redisbloom/README.md): beside a clone (CI) it is
// ../../../shared from here, beside a worktree under wt/ one level more.
// testdata/ holds a copy of rdb/dump.rdb and dump.json, so that the RDB
// tests have data anywhere; the cf/ and BF files are read from the shared
// directory only, and their tests fail in CI without it.
var sharedDirs = []string{"../../../shared/testdata/redisbloom", "../../../../shared/testdata/redisbloom"}

func sharedDir(t testing.TB) string {
	t.Helper()
	for _, d := range sharedDirs {
		if _, err := os.Stat(filepath.Join(d, "README.md")); err == nil {
			return d
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("no shared RedisBloom golden data in %v", sharedDirs)
	}
	t.Skipf("no shared RedisBloom golden data in %v", sharedDirs)
	return ""
}

func b64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type goldenChunk struct {
	Iterator int64  `json:"iterator"`
	Data     string `json:"data"`
}

func goldenChunks(t testing.TB, cs []goldenChunk) []Chunk {
	out := make([]Chunk, len(cs))
	for i, c := range cs {
		out[i] = Chunk{Iter: c.Iterator, Data: b64(t, c.Data)}
	}
	return out
}

func equalChunks(a, b []Chunk) bool {
	return slices.EqualFunc(a, b, func(x, y Chunk) bool { return x.Iter == y.Iter && bytes.Equal(x.Data, y.Data) })
}

// bloomInfo is what BF.INFO answers for b: BFCapacity, BFMemUsage (the
// 64-bit build's sizeof(SBChain) 32 and sizeof(SBLink) 64 besides the
// bits), and no expansion for a NONSCALING chain.
func bloomInfo(b *Bloom) map[string]*uint64 {
	p := func(v uint64) *uint64 { return &v }
	capacity, size := uint64(0), uint64(32)
	for _, l := range b.Links {
		capacity += l.Entries
		size += 64 + uint64(len(l.Data))
	}
	info := map[string]*uint64{
		"Capacity": p(capacity), "Size": p(size), "Number of filters": p(uint64(len(b.Links))),
		"Number of items inserted": p(b.Size), "Expansion rate": p(uint64(b.Growth)),
	}
	if b.Options&BloomNoScaling != 0 {
		info["Expansion rate"] = nil
	}
	return info
}

// cuckooInfo is what CF.INFO answers for cf: CFMemUsage counts
// sizeof(CuckooFilter) 40 and sizeof(SubCF) 16 a filter besides the
// buckets.
func cuckooInfo(cf *Cuckoo) map[string]*uint64 {
	p := func(v uint64) *uint64 { return &v }
	size := uint64(40)
	for _, f := range cf.Filters {
		size += 16 + uint64(len(f.Data))
	}
	return map[string]*uint64{
		"Size": p(size), "Number of buckets": p(cf.NumBuckets), "Number of filters": p(uint64(len(cf.Filters))),
		"Number of items inserted": p(cf.NumItems), "Number of items deleted": p(cf.NumDeletes),
		"Bucket size": p(uint64(cf.BucketSize)), "Expansion rate": p(uint64(cf.Expansion)),
		"Max iterations": p(uint64(cf.MaxIterations)),
	}
}

func equalInfo(a, b map[string]*uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || (x == nil) != (y == nil) || (x != nil && *x != *y) {
			return false
		}
	}
	return true
}

func infoString(m map[string]*uint64) string {
	var s []string
	for k, v := range m {
		if v == nil {
			s = append(s, k+"=nil")
		} else {
			s = append(s, k+"="+strconv.FormatUint(*v, 10))
		}
	}
	slices.Sort(s)
	return strings.Join(s, " ")
}

type rdbGolden struct {
	MadeBy    string   `json:"made_by"`
	OtherKeys []string `json:"other_keys"`
	Filters   []struct {
		DB          int                `json:"db"`
		Key         string             `json:"key"`
		Type        string             `json:"type"`
		Expire      bool               `json:"expire"`
		Info        map[string]*uint64 `json:"info"`
		DumpPayload string             `json:"dump_payload"`
	} `json:"filters"`
}

// goldenRDBs returns the paths of every distinct dump.rdb with its
// dump.json: the copy in testdata, and the shared one if it differs.
func goldenRDBs(t *testing.T) [][2]string {
	paths := [][2]string{{"testdata/dump.rdb", "testdata/dump.json"}}
	for _, d := range sharedDirs {
		p := filepath.Join(d, "rdb", "dump.rdb")
		theirs, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		ours, err := os.ReadFile(paths[0][0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(theirs, ours) {
			t.Logf("%s differs from testdata/dump.rdb: testing both", p)
			paths = append(paths, [2]string{p, filepath.Join(d, "rdb", "dump.json")})
		}
		break
	}
	return paths
}

func readAll(t testing.TB, r *Reader) []*Entry {
	t.Helper()
	var out []*Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

// TestGoldenRDB reads the RDB file redis-server 7.4.1 with RedisBloom
// 2.8.20 saved: every key with its database, expiry and type; the other
// keys skipped and counted by type; every filter's value decoded,
// answering its BF.INFO or CF.INFO, and encoded again to exactly the DUMP
// payload RedisBloom gave for it.
func TestGoldenRDB(t *testing.T) {
	for _, p := range goldenRDBs(t) {
		t.Run(p[0], func(t *testing.T) {
			var g rdbGolden
			js, err := os.ReadFile(p[1])
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(js, &g); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(p[0])
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := NewReader(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Version() != 12 {
				t.Errorf("version %d, want 12 (Redis 7.4)", r.Version())
			}
			entries := readAll(t, r)

			aux := map[string]string{}
			for _, a := range r.Aux() {
				aux[a.Key] = a.Value
			}
			if aux["redis-ver"] != "7.4.1" {
				t.Errorf("AUX redis-ver %q", aux["redis-ver"])
			}
			c, err := strconv.ParseInt(aux["ctime"], 10, 64)
			if err != nil {
				t.Fatalf("AUX ctime: %v", err)
			}
			ctime := time.Unix(c, 0)

			byKey := map[string]*Entry{}
			for _, e := range entries {
				byKey[string(e.Key)] = e
			}
			// The other keys, as dump.json's other_keys tells them: db 0,
			// the type in the name, plain:expiring a string with a 30-day
			// TTL.
			if len(g.OtherKeys) != 1 || !strings.Contains(g.OtherKeys[0], "plain:expiring (string with a 30-day TTL)") {
				t.Fatalf("other_keys changed: %q", g.OtherKeys)
			}
			others := map[string]string{"plain:string": "string", "plain:hash": "hash", "plain:list": "list",
				"plain:set": "set", "plain:zset": "zset", "plain:stream": "stream", "plain:expiring": "string"}
			wantSkipped := map[string]int64{}
			for k, kind := range others {
				wantSkipped[kind]++
				e := byKey[k]
				if e == nil {
					t.Errorf("no key %s", k)
					continue
				}
				if e.DB != 0 || e.Kind() != kind || e.Value != nil {
					t.Errorf("%s: db %d kind %s value %d bytes, want db 0 %s skipped", k, e.DB, e.Kind(), len(e.Value), kind)
				}
				checkTTL(t, e, k == "plain:expiring", ctime)
			}
			if len(entries) != len(others)+len(g.Filters) {
				t.Errorf("%d keys, want %d", len(entries), len(others)+len(g.Filters))
			}
			st := r.Stats()
			if st.Keys != int64(len(entries)) || st.Kept != int64(len(g.Filters)) || !mapsEqual(st.Skipped, wantSkipped) {
				t.Errorf("stats %+v, want %d keys, %d kept, skipped %v", st, len(entries), len(g.Filters), wantSkipped)
			}

			for _, gf := range g.Filters {
				e := byKey[gf.Key]
				if e == nil {
					t.Errorf("no key %s", gf.Key)
					continue
				}
				if e.DB != gf.DB || e.Type != TypeModule2 || e.Kind() != gf.Type || e.Module.EncVer() != 4 {
					t.Errorf("%s: db %d type %s kind %s module %s", gf.Key, e.DB, e.Type, e.Kind(), e.Module)
				}
				checkTTL(t, e, gf.Expire, ctime)
				payload := b64(t, gf.DumpPayload)
				typ, value, err := ParsePayload(payload)
				if err != nil {
					t.Fatalf("%s: %v", gf.Key, err)
				}
				if typ != e.Type || !bytes.Equal(value, e.Value) {
					t.Errorf("%s: the DUMP payload's value differs from the file's", gf.Key)
				}
				var again []byte
				var info map[string]*uint64
				switch gf.Type {
				case BloomTypeName:
					b, err := DecodeBloom(e.Value)
					if err != nil {
						t.Fatalf("%s: %v", gf.Key, err)
					}
					again, info = b.DumpPayload(), bloomInfo(b)
				case CuckooTypeName:
					cf, err := DecodeCuckoo(e.Value)
					if err != nil {
						t.Fatalf("%s: %v", gf.Key, err)
					}
					again, info = cf.DumpPayload(), cuckooInfo(cf)
				default:
					t.Fatalf("%s: type %s", gf.Key, gf.Type)
				}
				if !bytes.Equal(again, payload) {
					t.Errorf("%s: re-encoded payload differs from RedisBloom's DUMP (%d vs %d bytes)", gf.Key, len(again), len(payload))
				}
				if !equalInfo(info, gf.Info) {
					t.Errorf("%s: info %s, RedisBloom said %s", gf.Key, infoString(info), infoString(gf.Info))
				}
			}
		})
	}
}

// checkTTL checks that a key with a TTL expires 30 days after the file was
// written, less what elapsed between setting it and SAVE (ctime is in whole
// seconds, so up to a second more), and that others have none.
func checkTTL(t *testing.T, e *Entry, has bool, ctime time.Time) {
	t.Helper()
	if !has {
		if e.ExpireAt != NoExpiry {
			t.Errorf("%s: expiry %d, want none", e.Key, e.ExpireAt)
		}
		return
	}
	left := time.UnixMilli(e.ExpireAt).Sub(ctime)
	if left > 30*24*time.Hour+time.Second || left < 30*24*time.Hour-time.Hour {
		t.Errorf("%s: expires %v after the file's ctime, want just under 30 days", e.Key, left)
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

type cfGolden struct {
	Info        map[string]*uint64 `json:"info"`
	Chunks      []goldenChunk      `json:"chunks"`
	DumpPayload string             `json:"dump_payload"`
	AfterMore   *cfGolden          `json:"after_more"`
}

// TestGoldenCuckoo converts each CF golden file's DUMP payload to SCANDUMP
// chunks and back, in both states (after the script, after more): the
// payload must give exactly RedisBloom's chunks, and the chunks exactly
// RedisBloom's payload.
func TestGoldenCuckoo(t *testing.T) {
	dir := sharedDir(t)
	paths, _ := filepath.Glob(filepath.Join(dir, "cf", "*.json"))
	if len(paths) == 0 {
		t.Fatalf("no CF golden files in %s/cf", dir)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			js, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var g cfGolden
			if err := json.Unmarshal(js, &g); err != nil {
				t.Fatal(err)
			}
			if g.AfterMore == nil {
				t.Fatal("no after_more state")
			}
			for name, st := range map[string]*cfGolden{"state": &g, "after_more": g.AfterMore} {
				payload, chunks := b64(t, st.DumpPayload), goldenChunks(t, st.Chunks)
				typ, value, err := ParsePayload(payload)
				if err != nil || typ != TypeModule2 {
					t.Fatalf("%s: type %s, %v", name, typ, err)
				}
				cf, err := DecodeCuckoo(value)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got, err := cf.ScanDump()
				if err != nil {
					t.Fatal(err)
				}
				if !equalChunks(got, chunks) {
					t.Errorf("%s: payload -> chunks differs from CF.SCANDUMP's %d chunks", name, len(chunks))
				}
				back, err := CuckooFromScanDump(chunks)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !bytes.Equal(back.DumpPayload(), payload) {
					t.Errorf("%s: chunks -> payload differs from DUMP's", name)
				}
				if !equalInfo(cuckooInfo(cf), st.Info) {
					t.Errorf("%s: info %s, RedisBloom said %s", name, infoString(cuckooInfo(cf)), infoString(st.Info))
				}
			}
		})
	}
}

type bfGolden struct {
	Info      map[string]*uint64 `json:"info"`
	Chunks    []goldenChunk      `json:"chunks"`
	AfterMore *bfGolden          `json:"after_more"`
}

// TestGoldenBloomChunks takes the BF golden files' SCANDUMP chunks (they
// carry no DUMP payload) to a Bloom and back: the chunks must come back
// exactly, the info must be RedisBloom's, and the payload made from them
// must decode to the same chain.
func TestGoldenBloomChunks(t *testing.T) {
	dir := sharedDir(t)
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(paths) == 0 {
		t.Fatalf("no BF golden files in %s", dir)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			js, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var g bfGolden
			if err := json.Unmarshal(js, &g); err != nil {
				t.Fatal(err)
			}
			for _, st := range []*bfGolden{&g, g.AfterMore} {
				chunks := goldenChunks(t, st.Chunks)
				b, err := BloomFromScanDump(chunks)
				if err != nil {
					t.Fatal(err)
				}
				again, err := b.ScanDump()
				if err != nil {
					t.Fatal(err)
				}
				if !equalChunks(again, chunks) {
					t.Error("chunks -> Bloom -> chunks changed them")
				}
				if !equalInfo(bloomInfo(b), st.Info) {
					t.Errorf("info %s, RedisBloom said %s", infoString(bloomInfo(b)), infoString(st.Info))
				}
				typ, value, err := ParsePayload(b.DumpPayload())
				if err != nil || typ != TypeModule2 {
					t.Fatalf("type %s, %v", typ, err)
				}
				back, err := DecodeBloom(value)
				if err != nil {
					t.Fatal(err)
				}
				if !equalBloom(back, b) {
					t.Error("payload -> Bloom differs")
				}
			}
		})
	}
}

func equalBloom(a, b *Bloom) bool {
	return a.Size == b.Size && a.Options == b.Options && a.Growth == b.Growth &&
		slices.EqualFunc(a.Links, b.Links, func(x, y BloomLink) bool {
			return x.Entries == y.Entries && x.Error == y.Error && x.Hashes == y.Hashes && x.BPE == y.BPE &&
				x.Bits == y.Bits && x.N2 == y.N2 && x.Size == y.Size && bytes.Equal(x.Data, y.Data)
		})
}

func equalCuckoo(a, b *Cuckoo) bool {
	return a.NumBuckets == b.NumBuckets && a.NumItems == b.NumItems && a.NumDeletes == b.NumDeletes &&
		a.BucketSize == b.BucketSize && a.MaxIterations == b.MaxIterations && a.Expansion == b.Expansion &&
		slices.EqualFunc(a.Filters, b.Filters, func(x, y CuckooFilter) bool {
			return x.NumBuckets == y.NumBuckets && bytes.Equal(x.Data, y.Data)
		})
}
