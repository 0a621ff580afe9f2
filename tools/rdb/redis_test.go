package rdb

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/redis*-*.rdb are files a real redis-server saved, with every
// type and encoding its version writes; each .json beside lists the keys
// as the server reported them (testdata/gen_redis.py made both).
type redisGolden struct {
	MadeBy string `json:"made_by"`
	Keys   []struct {
		DB          int    `json:"db"`
		Key         string `json:"key"`
		Type        string `json:"type"`
		Encoding    string `json:"encoding"`
		PExpireTime int64  `json:"pexpiretime"`
		Dump        string `json:"dump"`
	} `json:"keys"`
}

// encodingTypes is the RDB types Redis writes a value of each TYPE and
// OBJECT ENCODING as (rdbSaveObjectType).
var encodingTypes = map[[2]string][]Type{
	{"string", "embstr"}: {TypeString}, {"string", "raw"}: {TypeString}, {"string", "int"}: {TypeString},
	{"list", "quicklist"}: {TypeListQuicklist2}, {"list", "listpack"}: {TypeListQuicklist2},
	{"set", "intset"}: {TypeSetIntset}, {"set", "hashtable"}: {TypeSet}, {"set", "listpack"}: {TypeSetListpack},
	{"zset", "listpack"}: {TypeZsetListpack}, {"zset", "skiplist"}: {TypeZset2},
	{"hash", "listpack"}: {TypeHashListpack}, {"hash", "listpackex"}: {TypeHashListpackEx},
	{"hash", "hashtable"}: {TypeHash, TypeHashMetadata},
	{"stream", "stream"}:  {TypeStreamListpacks2, TypeStreamListpacks3},
}

func TestRealRedisFiles(t *testing.T) {
	paths, _ := filepath.Glob("testdata/redis*-*.rdb")
	if len(paths) < 2 {
		t.Fatalf("want the files gen_redis.py makes, found %v", paths)
	}
	seen := map[Type]bool{}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			var g redisGolden
			js, err := os.ReadFile(strings.TrimSuffix(p, ".rdb") + ".json")
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(js, &g); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := NewReader(f, &Options{Keep: func(*Entry) bool { return true }})
			if err != nil {
				t.Fatal(err)
			}
			entries := readAll(t, r)
			type dbKey struct {
				db  int
				key string
			}
			got := map[dbKey]*Entry{}
			for _, e := range entries {
				got[dbKey{e.DB, string(e.Key)}] = e
				seen[e.Type] = true
			}
			if len(got) != len(g.Keys) || len(entries) != len(g.Keys) {
				t.Errorf("%d keys (%d distinct), the server listed %d", len(entries), len(got), len(g.Keys))
			}
			lfu, lru := strings.Contains(g.MadeBy, "allkeys-lfu"), strings.Contains(g.MadeBy, "allkeys-lru")
			compressed := strings.Contains(g.MadeBy, "rdbcompression yes")
			nLZF, nInt := 0, 0
			for _, k := range g.Keys {
				name := string(b64(t, k.Key))
				e := got[dbKey{k.DB, name}]
				if e == nil {
					t.Errorf("db %d key %q missing", k.DB, name)
					continue
				}
				if e.Kind() != k.Type || !containsType(encodingTypes[[2]string{k.Type, k.Encoding}], e.Type) {
					t.Errorf("%q: kind %s type %s, the server said %s %s", name, e.Kind(), e.Type, k.Type, k.Encoding)
				}
				if e.ExpireAt != k.PExpireTime {
					t.Errorf("%q: expiry %d, PEXPIRETIME %d", name, e.ExpireAt, k.PExpireTime)
				}
				if (e.Freq >= 0) != lfu || (e.Idle >= 0) != lru {
					t.Errorf("%q: freq %d idle %d in a file of %s", name, e.Freq, e.Idle, g.MadeBy)
				}
				typ, value, err := ParsePayload(b64(t, k.Dump))
				if err != nil {
					t.Errorf("%q: DUMP payload: %v", name, err)
				} else if typ != e.Type || !bytes.Equal(value, e.Value) {
					t.Errorf("%q: DUMP gives type %s and %d bytes, the file type %s and %d bytes", name, typ, len(value), e.Type, len(e.Value))
				}
				if _, _, err := ParsePayload(AppendPayload(nil, e.Type, e.Value)); err != nil {
					t.Errorf("%q: our payload: %v", name, err)
				}
				if compressed {
					lzf, ints := checkStringEncodings(t, name, e)
					nLZF, nInt = nLZF+lzf, nInt+ints
				}
			}
			if compressed && (nLZF < 100 || nInt < 2) {
				t.Errorf("compared %d LZF strings and %d integers only", nLZF, nInt)
			}
			st := r.Stats()
			if st.Keys != int64(len(g.Keys)) || st.Kept != st.Keys || len(st.Skipped) != 0 || st.Functions != 1 {
				t.Errorf("stats %+v", st)
			}
		})
	}
	// What Redis 7.0 and 7.4 write, all of it read from real files.
	for _, typ := range []Type{TypeString, TypeSet, TypeZset2, TypeHash, TypeSetIntset, TypeHashListpack,
		TypeZsetListpack, TypeListQuicklist2, TypeStreamListpacks2, TypeSetListpack, TypeStreamListpacks3,
		TypeHashMetadata, TypeHashListpackEx} {
		if !seen[typ] {
			t.Errorf("no key of type %s in %v", typ, paths)
		}
	}
}

func containsType(ts []Type, t Type) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// checkStringEncodings encodes again every string of a value Redis wrote
// with rdbSaveRawString (rdbcompression on) and compares: the integer
// encodings and the LZF compressor must choose as Redis does. It returns
// how many compressed and integer strings it compared.
func checkStringEncodings(t *testing.T, name string, e *Entry) (lzf, ints int) {
	t.Helper()
	c := cursor{b: e.Value}
	var n uint64
	per := 0
	switch e.Type {
	case TypeString:
		n, per = 1, 1
	case TypeSet:
		per = 1
	case TypeHash:
		per = 2
	case TypeZset2:
		per = 1
	default:
		return 0, 0
	}
	if e.Type != TypeString {
		var err error
		if n, err = c.number("count"); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		for range per {
			start := c.pos
			s, err := c.str("string")
			if err != nil {
				t.Fatalf("%q: %v", name, err)
			}
			switch e.Value[start] {
			case 0xc0, 0xc1, 0xc2:
				ints++
			case 0xc3:
				lzf++
			}
			if again := appendString(nil, s); !bytes.Equal(again, e.Value[start:c.pos]) {
				t.Errorf("%q: string of %d bytes encodes as %x, Redis wrote %x", name, len(s), again, e.Value[start:c.pos])
			}
		}
		if e.Type == TypeZset2 {
			c.pos += 8
		}
	}
	if c.pos != len(e.Value) {
		t.Errorf("%q: %d bytes left after the strings", name, len(e.Value)-c.pos)
	}
	return lzf, ints
}
