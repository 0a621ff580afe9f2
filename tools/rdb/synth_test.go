package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
)

// rdbFile builds RDB files record by record, as rdb.c writes them, for the
// encodings no file in testdata has: Redis 5's types, the 7.4 release
// candidates', module AUX data, old expiry records.
type rdbFile struct{ b []byte }

func newRDB(version int) *rdbFile { return &rdbFile{b: fmt.Appendf(nil, "REDIS%04d", version)} }

func (f *rdbFile) op(b ...byte) *rdbFile { f.b = append(f.b, b...); return f }

func (f *rdbFile) n(v uint64) *rdbFile { f.b = appendLen(f.b, v); return f }

// s appends a string as its length and bytes.
func (f *rdbFile) s(v string) *rdbFile { f.b = append(appendLen(f.b, uint64(len(v))), v...); return f }

// enc appends a string as Redis would choose to encode it.
func (f *rdbFile) enc(v string) *rdbFile { f.b = appendString(f.b, []byte(v)); return f }

func (f *rdbFile) u64(v uint64) *rdbFile { f.b = binary.LittleEndian.AppendUint64(f.b, v); return f }

func (f *rdbFile) aux(k, v string) *rdbFile { return f.op(opAux).enc(k).enc(v) }

// key starts a key of type t.
func (f *rdbFile) key(t Type, name string) *rdbFile { return f.op(byte(t)).enc(name) }

// done appends EOF and the checksum (0 without sum).
func (f *rdbFile) done(sum bool) []byte {
	f.op(opEOF)
	var c uint64
	if sum {
		c = crc64(0, f.b)
	}
	return binary.LittleEndian.AppendUint64(f.b, c)
}

// synthKey is what Reader must return for a key of the synthetic file.
type synthKey struct {
	db       int
	key      string
	t        Type
	expireAt int64
	idle     int64
	freq     int
}

// synthFile has every record and value type of RDB 9 to 12 that Reader
// reads, and the keys it must return.
func synthFile(version int, sum bool) ([]byte, []synthKey) {
	f := newRDB(version)
	f.aux("redis-ver", "7.4.1").aux("redis-bits", "64").aux("ctime", "1796503386")
	f.aux("lua", "return redis.call('get', KEYS[1])")
	// MODULE_AUX of some module: id, when opcode UINT, when, items, EOF.
	f.op(opModuleAux).n(uint64(mustModuleID("scripts-1", 1))).n(moduleUint).n(2)
	f.n(moduleString).s("aux data").n(moduleUint).n(7).n(moduleEOF)
	f.op(opFunction2).s("#!lua name=lib\nredis.register_function('f', function() return 1 end)")
	f.op(opSelectDB).n(0).op(opResizeDB).n(30).n(3)
	f.op(opSlotInfo).n(866).n(2).n(0)

	var keys []synthKey
	add := func(t Type, name string) *rdbFile {
		keys = append(keys, synthKey{db: 0, key: name, t: t, expireAt: NoExpiry, idle: NoExpiry, freq: NoExpiry})
		return f.key(t, name)
	}
	last := func() *synthKey { return &keys[len(keys)-1] }

	add(TypeString, "s:raw").enc("hello")
	add(TypeString, "s:int").enc("-1234567")
	add(TypeString, "s:lzf").enc(string(bytes.Repeat([]byte("abcd"), 50)))
	add(TypeString, string(bytes.Repeat([]byte("k"), 40))).enc("a compressed key")
	f.op(opExpireTimeMs).u64(1796503386123)
	add(TypeString, "s:expire-ms").enc("x")
	last().expireAt = 1796503386123
	f.op(opExpireTime).b = binary.LittleEndian.AppendUint32(f.b, 1796503386)
	add(TypeString, "s:expire-s").enc("y")
	last().expireAt = 1796503386000
	f.op(opIdle).n(12345)
	add(TypeString, "s:idle").enc("z")
	last().idle = 12345
	f.op(opFreq, 200)
	add(TypeString, "s:freq").enc("w")
	last().freq = 200
	f.op(opExpireTimeMs).u64(1).op(opFreq, 3)
	add(TypeString, "s:both").enc("v")
	last().expireAt, last().freq = 1, 3

	add(TypeList, "list:v1").n(3).enc("a").enc("17").enc(string(bytes.Repeat([]byte("x"), 40)))
	add(TypeSet, "set").n(2).enc("m1").enc("m2")
	add(TypeZset, "zset:text").n(3).enc("a").op(3).op([]byte("1.5")...).enc("b").op(254).enc("c").op(253)
	add(TypeHash, "hash").n(2).enc("f1").enc("v1").enc("f2").enc("12")
	add(TypeZset2, "zset2").n(2).enc("a").u64(math.Float64bits(1.5)).enc("b").u64(math.Float64bits(math.Inf(-1)))
	for _, t := range []Type{TypeHashZipmap, TypeListZiplist, TypeSetIntset, TypeZsetZiplist, TypeHashZiplist,
		TypeHashListpack, TypeZsetListpack, TypeSetListpack, TypeHashListpackExPreGA} {
		add(t, "blob:"+t.String()).s("\x0b\x00\x00\x00\x02\x00\x81a\x02\x81b\x02\xff") // one opaque blob
	}
	add(TypeListQuicklist, "list:quicklist").n(2).s("ziplist one").enc(string(bytes.Repeat([]byte("zl"), 30)))
	add(TypeListQuicklist2, "list:quicklist2").n(2).n(2).s("packed listpack").n(1).s("a plain node")
	add(TypeHashMetadataPreGA, "hash:ttl-pre-ga").n(2).n(1796503386123).enc("f1").enc("v1").n(0).enc("f2").enc("v2")
	add(TypeHashMetadata, "hash:ttl").u64(1796503386000).n(2).n(124).enc("f1").enc("v1").n(0).enc("f2").enc("v2")
	add(TypeHashListpackEx, "hash:ttl-listpack").u64(1796503386000).s("listpack with TTLs")
	for _, t := range []Type{TypeStreamListpacks, TypeStreamListpacks2, TypeStreamListpacks3} {
		add(t, "stream:"+t.String())
		f.n(1).s("0123456789abcdef").s("the listpack") // listpacks: master ID, listpack
		f.n(5).n(1700000000000).n(3)                   // length, last ID
		if t >= TypeStreamListpacks2 {
			f.n(1700000000000).n(0).n(0).n(0).n(5) // first ID, max deleted ID, entries added
		}
		f.n(1).s("group").n(1700000000000).n(1) // a group and its last ID
		if t >= TypeStreamListpacks2 {
			f.n(4) // entries read
		}
		f.n(1).op(bytes.Repeat([]byte{7}, 16)...).u64(1700000000500).n(2) // PEL: ID, delivery time, count
		f.n(1).s("alice").u64(1700000000600)                              // a consumer and its seen time
		if t >= TypeStreamListpacks3 {
			f.u64(1700000000700) // active time
		}
		f.n(1).op(bytes.Repeat([]byte{7}, 16)...) // its PEL
	}
	b := &Bloom{Size: 1, Options: BloomForce64 | BloomNoRound, Growth: 2, Links: []BloomLink{
		{Entries: 100, Error: 0.01, Hashes: 7, BPE: 9.585, Bits: 64, Size: 1, Data: []byte("\x01\x02\x03\x04\x05\x06\x07\x08")},
	}}
	add(TypeModule2, "bf").op(b.AppendValue(nil)...)
	last().t = TypeModule2
	add(TypeModule2, "other-module").n(uint64(mustModuleID("ReJSON-RL", 3))).
		n(moduleSigned).n(math.MaxUint64).n(moduleFloat).op(0, 0, 0x80, 0x3f).
		n(moduleDouble).u64(math.Float64bits(2.5)).n(moduleString).enc("json").n(moduleEOF)

	f.op(opSelectDB).n(7)
	add(TypeString, "db7").enc("seven")
	last().db = 7
	f.op(opModuleAux).n(uint64(mustModuleID("scripts-1", 1))).n(moduleUint).n(1).n(moduleEOF)
	return f.done(sum), keys
}

func TestSyntheticFile(t *testing.T) {
	for _, version := range []int{9, 10, 11, 12} {
		for _, sum := range []bool{true, false} {
			data, want := synthFile(version, sum)
			for _, known := range []bool{true, false} {
				t.Run(fmt.Sprintf("v%d/sum=%v/size=%v", version, sum, known), func(t *testing.T) {
					r, err := NewReader(input(data, known), &Options{Keep: func(*Entry) bool { return true }})
					if err != nil {
						t.Fatal(err)
					}
					got := readAll(t, r)
					if len(got) != len(want) {
						t.Fatalf("%d keys, want %d", len(got), len(want))
					}
					for i, w := range want {
						g := got[i]
						if g.DB != w.db || string(g.Key) != w.key || g.Type != w.t || g.ExpireAt != w.expireAt || g.Idle != w.idle || g.Freq != w.freq {
							t.Errorf("key %d: %d %q %s %d %d %d, want %+v", i, g.DB, g.Key, g.Type, g.ExpireAt, g.Idle, g.Freq, w)
						}
						if _, _, err := ParsePayload(AppendPayload(nil, g.Type, g.Value)); err != nil {
							t.Errorf("%q: %v", g.Key, err)
						}
						if i > 0 && g.Offset <= got[i-1].Offset {
							t.Errorf("%q at %d, after %d", g.Key, g.Offset, got[i-1].Offset)
						}
					}
					if got[0].Offset < 9 || data[got[0].Offset] != byte(TypeString) {
						t.Errorf("first key at %d", got[0].Offset)
					}
					st := r.Stats()
					if st.Functions != 1 || st.ModuleAux["scripts-1"] != 2 || st.Kept != int64(len(want)) {
						t.Errorf("stats %+v", st)
					}
					if aux := r.Aux(); len(aux) != 4 || aux[1] != (AuxField{"redis-bits", "64"}) || aux[3].Key != "lua" {
						t.Errorf("aux %q", aux)
					}
					if r.Offset() != int64(len(data)) {
						t.Errorf("offset %d after the end, want %d", r.Offset(), len(data))
					}
					if _, err := r.Next(); err != io.EOF {
						t.Errorf("Next after the end: %v", err)
					}
					// By default, only the RedisBloom value is kept.
					r, err = NewReader(input(data, known), nil)
					if err != nil {
						t.Fatal(err)
					}
					kept := 0
					for _, e := range readAll(t, r) {
						if e.Value != nil {
							kept++
							if _, err := DecodeBloom(e.Value); err != nil {
								t.Error(err)
							}
						}
					}
					wantSkipped := map[string]int64{}
					for _, w := range want {
						switch w.key {
						case "bf":
						case "other-module":
							wantSkipped["ReJSON-RL"]++
						default:
							wantSkipped[w.t.Kind()]++
						}
					}
					if st := r.Stats(); kept != 1 || st.Kept != 1 || !mapsEqual(st.Skipped, wantSkipped) {
						t.Errorf("kept %d, skipped %v, want %v", kept, st.Skipped, wantSkipped)
					}
				})
			}
		}
	}
}

// input gives data as a reader whose size Reader knows, or as a plain
// stream.
func input(data []byte, known bool) io.Reader {
	if known {
		return bytes.NewReader(data)
	}
	return struct{ io.Reader }{bytes.NewReader(data)}
}

func TestChecksumZeroAndWrong(t *testing.T) {
	data, _ := synthFile(12, false)
	if _, err := readFile(data, true); err != nil {
		t.Fatalf("checksum 0 (disabled): %v", err)
	}
	data, _ = synthFile(12, true)
	bad := bytes.Clone(data)
	bad[len(bad)-1] ^= 1
	_, err := readFile(bad, true)
	var e *Error
	if !errors.Is(err, ErrChecksum) || !errors.As(err, &e) || e.Offset != int64(len(data)-8) {
		t.Fatalf("wrong checksum: %v", err)
	}
	// Bytes after the checksum: refused when the size is known.
	_, err = readFile(append(bytes.Clone(data), 0), true)
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &e) || e.Offset != int64(len(data)) {
		t.Fatalf("a byte after the checksum: %v", err)
	}
}

// readFile reads every key of data and returns them or the error.
func readFile(data []byte, known bool) ([]*Entry, error) {
	r, err := NewReader(input(data, known), &Options{Keep: func(*Entry) bool { return true }})
	if err != nil {
		return nil, err
	}
	var out []*Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
}
