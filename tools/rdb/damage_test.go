package rdb

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"testing"
)

// checkRefusal asserts that err is an *Error of one of the kinds, at an
// offset within [0, limit].
func checkRefusal(t *testing.T, what string, err error, limit int64, kinds ...error) {
	t.Helper()
	var e *Error
	if err == nil {
		t.Fatalf("%s: accepted", what)
	}
	if !errors.As(err, &e) {
		t.Fatalf("%s: %v is not an *Error", what, err)
	}
	if e.Offset < 0 || e.Offset > limit {
		t.Fatalf("%s: offset %d outside [0, %d]: %v", what, e.Offset, limit, err)
	}
	for _, k := range kinds {
		if errors.Is(err, k) {
			return
		}
	}
	t.Fatalf("%s: %v is none of %v", what, err, kinds)
}

// truncationOffsets is every offset of a small file, and for a large one
// its first and last bytes, the first bytes of every key and a stride.
func truncationOffsets(t *testing.T, data []byte) []int {
	if len(data) < 4096 {
		offs := make([]int, len(data))
		for i := range offs {
			offs[i] = i
		}
		return offs
	}
	entries, err := readFile(data, true)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int
	for i := range 64 {
		offs = append(offs, i, len(data)-1-i)
	}
	for _, e := range entries {
		for d := range int64(24) {
			offs = append(offs, int(e.Offset+d))
		}
	}
	stride := 61
	if testing.Short() {
		stride = 1021
	}
	for i := 0; i < len(data); i += stride {
		offs = append(offs, i)
	}
	return offs
}

// TestTruncated cuts files at every offset class: each must be refused,
// as truncated when the reader cannot know the size (as corrupt or
// truncated when it can: a length past the end is either), at an offset
// within the bytes it had.
func TestTruncated(t *testing.T) {
	synth, _ := synthFile(12, true)
	golden, err := os.ReadFile("testdata/dump.rdb")
	if err != nil {
		t.Fatal(err)
	}
	real74, err := os.ReadFile("testdata/redis7.4-lfu.rdb")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"synthetic": synth, "dump.rdb": golden, "redis7.4-lfu.rdb": real74} {
		t.Run(name, func(t *testing.T) {
			for _, k := range truncationOffsets(t, data) {
				_, err := readFile(data[:k], true)
				checkRefusal(t, "known size, cut at "+fmt.Sprint(k), err, int64(k), ErrTruncated, ErrCorrupt)
				_, err = readFile(data[:k], false)
				checkRefusal(t, "unknown size, cut at "+fmt.Sprint(k), err, int64(k), ErrTruncated)
			}
		})
	}
}

// TestFlippedBytes flips bytes across files with checksums: every flip is
// refused, most by the CRC-64, which catches any flip the structure does
// not.
func TestFlippedBytes(t *testing.T) {
	synth, _ := synthFile(12, true)
	golden, err := os.ReadFile("testdata/dump.rdb")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"synthetic": synth, "dump.rdb": golden} {
		t.Run(name, func(t *testing.T) {
			stride := 1
			if len(data) > 4096 {
				stride = 37
				if testing.Short() {
					stride = 499
				}
			}
			crc := 0
			for i := 0; i < len(data); i += stride {
				for _, x := range []byte{0x01, 0xff} {
					bad := bytes.Clone(data)
					bad[i] ^= x
					for _, known := range []bool{true, false} {
						_, err := readFile(bad, known)
						checkRefusal(t, "flip at "+fmt.Sprint(i), err, int64(len(data)), ErrChecksum, ErrCorrupt, ErrTruncated, ErrVersion, ErrUnsupported)
						if errors.Is(err, ErrChecksum) {
							crc++
						}
					}
				}
			}
			if crc == 0 {
				t.Error("no flip was caught by the checksum")
			}
		})
	}
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// maxAbsurdAlloc bounds what refusing an absurd length may allocate: the
// reader's 64 KiB buffer and small change, nothing of what it claims.
const maxAbsurdAlloc = 512 << 10

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64([]byte{0x81}, v) }

// TestAbsurdLengths gives lengths and counts that claim far more than the
// input has, where the input's size is known and where it is not: each is
// refused, and nothing near the claim is allocated.
func TestAbsurdLengths(t *testing.T) {
	pad := bytes.Repeat([]byte{1}, 1000)
	cases := map[string][]byte{
		"key length":         newRDB(12).op(byte(TypeString)).op(be64(1 << 62)...).op(pad...).b,
		"value length":       newRDB(12).key(TypeString, "k").op(be64(1 << 60)...).op(pad...).b,
		"set count":          newRDB(12).key(TypeSet, "k").op(be64(1 << 60)...).op(pad...).b,
		"zset count":         newRDB(12).key(TypeZset2, "k").op(be64(1 << 60)...).op(pad...).b,
		"quicklist count":    newRDB(12).key(TypeListQuicklist2, "k").op(be64(1 << 60)...).op(pad...).b,
		"hash TTL count":     newRDB(12).key(TypeHashMetadata, "k").u64(0).op(be64(1 << 60)...).op(pad...).b,
		"stream listpacks":   newRDB(12).key(TypeStreamListpacks3, "k").op(be64(1 << 60)...).op(pad...).b,
		"LZF expansion":      newRDB(12).key(TypeString, "k").op(0xc3).n(10).op(be64(1 << 40)...).op(pad...).b,
		"LZF compressed len": newRDB(12).op(byte(TypeString)).op(0xc3).op(be64(1 << 50)...).op(be64(1 << 50)...).op(pad...).b,
		"AUX value":          newRDB(12).op(opAux).enc("k").op(be64(1 << 61)...).op(pad...).b,
		"module string": newRDB(12).key(TypeModule2, "bf").n(uint64(BloomModuleID)).
			n(moduleUint).n(1).n(moduleString).op(be64(1 << 50)...).op(pad...).b,
		"module AUX string": newRDB(12).op(opModuleAux).n(uint64(BloomModuleID)).n(moduleUint).n(2).
			n(moduleString).op(be64(1 << 50)...).op(pad...).b,
		"pending entries": newRDB(12).key(TypeStreamListpacks3, "k").n(0).n(0).n(0).n(0).n(0).n(0).n(0).n(0).
			n(1).s("g").n(0).n(0).n(0).op(be64(1 << 60)...).op(pad...).b,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			for _, known := range []bool{true, false} {
				var err error
				n := allocated(func() { _, err = readFile(data, known) })
				if known {
					checkRefusal(t, name, err, int64(len(data)), ErrTruncated, ErrCorrupt)
				} else {
					checkRefusal(t, name, err, int64(len(data)), ErrTruncated, ErrCorrupt)
				}
				if n > maxAbsurdAlloc {
					t.Errorf("known size %v: allocated %d bytes refusing it", known, n)
				}
			}
		})
	}
}

// TestMaxValueBytes refuses kept keys, AUX fields and values over the
// limit, and skips values over it that are not kept.
func TestMaxValueBytes(t *testing.T) {
	big := string(bytes.Repeat([]byte("x"), 300))
	b := &Bloom{Size: 0, Options: BloomForce64, Growth: 2, Links: []BloomLink{
		{Entries: 100, Error: 0.01, Hashes: 7, BPE: 9.585, Bits: 8 * 500, Data: noise(500)},
	}}
	bf := newRDB(12).key(TypeModule2, "bf").op(b.AppendValue(nil)...).done(true)
	for name, c := range map[string]struct {
		data []byte
		ok   bool
	}{
		"big key":         {newRDB(12).key(TypeString, big).enc("v").done(true), false},
		"big AUX":         {newRDB(12).aux("k", big).done(true), false},
		"big kept value":  {bf, false},
		"big skipped":     {newRDB(12).key(TypeString, "k").s(big).done(true), true},
		"compressed key":  {newRDB(12).op(byte(TypeString)).enc(big).enc("v").done(true), false},
		"small kept/keys": {newRDB(12).key(TypeString, "k").enc("v").done(true), true},
	} {
		r, err := NewReader(bytes.NewReader(c.data), &Options{MaxValueBytes: 200})
		if err != nil {
			t.Fatal(err)
		}
		for err == nil {
			_, err = r.Next()
		}
		if c.ok && err != io.EOF {
			t.Errorf("%s: %v", name, err)
		}
		if !c.ok && !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: %v, want ErrTooLarge", name, err)
		}
	}
}

// noise is n bytes LZF cannot shrink.
func noise(n int) []byte {
	b := make([]byte, n)
	x := uint32(29)
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

// TestVersions takes RDB 9 to 12 and refuses the others, and bad magics.
func TestVersions(t *testing.T) {
	for v := range 20 {
		data := newRDB(v).done(true)
		_, err := readFile(data, true)
		if v >= MinVersion && v <= MaxVersion {
			if err != nil {
				t.Errorf("version %d: %v", v, err)
			}
			continue
		}
		checkRefusal(t, "version "+fmt.Sprint(v), err, 5, ErrVersion)
	}
	for _, magic := range []string{"RUDIS0012", "REDIS00x2", "REDIS 012", "redis0012", "REDIS-012"} {
		_, err := readFile(append([]byte(magic), 0xff, 0, 0, 0, 0, 0, 0, 0, 0), true)
		checkRefusal(t, magic, err, 5, ErrCorrupt)
	}
}

// TestUnknownRecords refuses what no Redis of RDB 9 to 12 writes, and the
// pre-release formats Redis itself refuses.
func TestUnknownRecords(t *testing.T) {
	cases := map[string]struct {
		data []byte
		kind error
	}{
		"type 8":               {newRDB(12).key(8, "k").enc("v").done(true), ErrCorrupt},
		"type 26":              {newRDB(12).key(26, "k").enc("v").done(true), ErrCorrupt},
		"opcode 243":           {newRDB(12).op(243).done(true), ErrCorrupt},
		"function pre-GA":      {newRDB(10).op(opFunctionPreGA).s("f").done(true), ErrUnsupported},
		"module pre-GA":        {newRDB(12).key(TypeModulePreGA, "k").n(uint64(BloomModuleID)).n(1).done(true), ErrUnsupported},
		"module opcode 6":      {newRDB(12).key(TypeModule2, "k").n(uint64(BloomModuleID)).n(6).n(moduleEOF).done(true), ErrCorrupt},
		"module AUX when":      {newRDB(12).op(opModuleAux).n(uint64(BloomModuleID)).n(moduleSigned).n(2).n(moduleEOF).done(true), ErrCorrupt},
		"length encoding 0x82": {newRDB(12).op(opSelectDB).op(0x82).done(true), ErrCorrupt},
		"string encoding 4":    {newRDB(12).key(TypeString, "k").op(0xc4).done(true), ErrCorrupt},
		"database 2^31":        {newRDB(12).op(opSelectDB).n(1 << 31).done(true), ErrCorrupt},
		"slot 16384":           {newRDB(12).op(opSlotInfo).n(16384).n(0).n(0).done(true), ErrCorrupt},
		"quicklist container":  {newRDB(12).key(TypeListQuicklist2, "k").n(1).n(3).s("x").done(true), ErrCorrupt},
		"bad LZF":              {newRDB(12).op(byte(TypeString)).op(0xc3).n(3).n(40).op(0xe0, 0xff, 0x00).enc("v").done(true), ErrCorrupt},
	}
	for name, c := range cases {
		_, err := readFile(c.data, true)
		checkRefusal(t, name, err, int64(len(c.data)), c.kind)
	}
}

// TestPayloadDamage refuses every truncation and every flipped byte of
// RedisBloom's DUMP payloads, and payloads of a newer version, whatever
// their checksum.
func TestPayloadDamage(t *testing.T) {
	g := readGoldenJSON(t)
	for _, f := range g.Filters {
		p := b64(t, f.DumpPayload)
		step := 1
		if testing.Short() {
			step = 53
		}
		for k := 0; k < len(p); k += step {
			_, _, err := ParsePayload(p[:k])
			checkRefusal(t, f.Key+" cut", err, int64(k), ErrTruncated, ErrChecksum, ErrVersion, ErrCorrupt)
			bad := bytes.Clone(p)
			bad[k] ^= 0x20
			_, _, err = ParsePayload(bad)
			checkRefusal(t, f.Key+" flip", err, int64(len(p)), ErrChecksum, ErrVersion)
		}
		// A newer version, with a right checksum: refused as Redis does.
		_, value, err := ParsePayload(p)
		if err != nil {
			t.Fatal(err)
		}
		newer := AppendPayload(nil, TypeModule2, value)
		binary.LittleEndian.PutUint16(newer[len(newer)-10:], PayloadVersion+1)
		binary.LittleEndian.PutUint64(newer[len(newer)-8:], crc64(0, newer[:len(newer)-8]))
		_, _, err = ParsePayload(newer)
		checkRefusal(t, f.Key+" newer", err, int64(len(p)), ErrVersion)
		// An older one is taken, as RESTORE takes it.
		older := bytes.Clone(newer)
		binary.LittleEndian.PutUint16(older[len(older)-10:], 9)
		binary.LittleEndian.PutUint64(older[len(older)-8:], crc64(0, older[:len(older)-8]))
		if _, _, err := ParsePayload(older); err != nil {
			t.Errorf("%s version 9: %v", f.Key, err)
		}
	}
	// Bytes between a value and the footer: Redis would not see them, a
	// payload it made never has them.
	extra := AppendPayload(nil, TypeString, append(appendString(nil, []byte("v")), 0))
	_, _, err := ParsePayload(extra)
	checkRefusal(t, "extra byte", err, int64(len(extra)), ErrCorrupt)
	// A value that claims more than the payload holds.
	claim := AppendPayload(nil, TypeSet, be64(1<<60))
	n := allocated(func() { _, _, err = ParsePayload(claim) })
	checkRefusal(t, "absurd set", err, int64(len(claim)), ErrCorrupt)
	if n > maxAbsurdAlloc {
		t.Errorf("allocated %d bytes refusing an absurd payload", n)
	}
}

func readGoldenJSON(t *testing.T) rdbGolden {
	var g rdbGolden
	js, err := os.ReadFile("testdata/dump.json")
	if err == nil {
		err = json.Unmarshal(js, &g)
	}
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestModuleValueDamage refuses module values RedisBloom would not load
// and ones it could not have written.
func TestModuleValueDamage(t *testing.T) {
	linkOf := func(f *rdbFile, hashes, bits uint64) *rdbFile {
		return f.n(moduleUint).n(100).n(moduleDouble).u64(math.Float64bits(0.01)).n(moduleUint).n(hashes).
			n(moduleDouble).u64(math.Float64bits(9.585)).n(moduleUint).n(bits).n(moduleUint).n(0).
			n(moduleString).s("12345678").n(moduleUint).n(1)
	}
	link := func(f *rdbFile) *rdbFile { return linkOf(f, 7, 64) }
	bloom := func(id ModuleID, size, links, options uint64) *rdbFile {
		f := &rdbFile{}
		f.n(uint64(id)).n(moduleUint).n(size).n(moduleUint).n(links).n(moduleUint).n(options).n(moduleUint).n(2)
		return f
	}
	good := link(bloom(BloomModuleID, 1, 1, BloomForce64)).n(moduleEOF).b
	if _, err := DecodeBloom(good); err != nil {
		t.Fatalf("the good value: %v", err)
	}
	bv := func(encver int) ModuleID { return mustModuleID(BloomTypeName, encver) }
	cases := map[string]struct {
		value []byte
		kind  error
	}{
		"no links":       {bloom(BloomModuleID, 0, 0, 4).n(moduleEOF).b, ErrCorrupt},
		"2^40 links":     {link(bloom(BloomModuleID, 1, 1<<40, 4)).n(moduleEOF).b, ErrCorrupt},
		"encver 5":       {link(bloom(bv(5), 1, 1, 4)).n(moduleEOF).b, ErrUnsupported},
		"cuckoo ID":      {link(bloom(CuckooModuleID, 1, 1, 4)).n(moduleEOF).b, ErrCorrupt},
		"no EOF":         {link(bloom(BloomModuleID, 1, 1, 4)).b, ErrTruncated},
		"after EOF":      {link(bloom(BloomModuleID, 1, 1, 4)).n(moduleEOF).op(0).b, ErrCorrupt},
		"size mismatch":  {link(bloom(BloomModuleID, 2, 1, 4)).n(moduleEOF).b, ErrCorrupt},
		"unknown option": {link(bloom(BloomModuleID, 1, 1, 4|16)).n(moduleEOF).b, ErrCorrupt},
		"options 2^32":   {link(bloom(BloomModuleID, 1, 1, 1<<32)).n(moduleEOF).b, ErrCorrupt},
		"signed for unsigned": {func() []byte {
			b := bytes.Clone(good)
			b[len(appendLen(nil, uint64(BloomModuleID)))] = moduleSigned
			return b
		}(), ErrCorrupt},
		"hashes wrong":   {linkOf(bloom(BloomModuleID, 1, 1, 4), 8, 64).n(moduleEOF).b, ErrCorrupt},
		"bits not bytes": {linkOf(bloom(BloomModuleID, 1, 1, 4), 7, 72).n(moduleEOF).b, ErrCorrupt},
		"hashes 2^32":    {linkOf(bloom(BloomModuleID, 1, 1, 4), 1<<32+7, 64).n(moduleEOF).b, ErrCorrupt},
	}
	for name, c := range cases {
		_, err := DecodeBloom(c.value)
		checkRefusal(t, name, err, int64(len(c.value)), c.kind)
	}

	cuckoo := func(id ModuleID, filters, buckets, bucketSize, expansion uint64, data ...string) []byte {
		f := &rdbFile{}
		f.n(uint64(id)).n(moduleUint).n(filters).n(moduleUint).n(buckets).n(moduleUint).n(1).n(moduleUint).n(0).
			n(moduleUint).n(bucketSize).n(moduleUint).n(20).n(moduleUint).n(expansion)
		for i, d := range data {
			f.n(moduleUint).n(buckets << i).n(moduleString).s(d)
		}
		return f.n(moduleEOF).b
	}
	if _, err := DecodeCuckoo(cuckoo(CuckooModuleID, 2, 2, 2, 2, "abcd", "abcdefgh")); err != nil {
		t.Fatalf("the good value: %v", err)
	}
	for name, c := range map[string]struct {
		value []byte
		kind  error
	}{
		"no filters":      {cuckoo(CuckooModuleID, 0, 2, 2, 2), ErrCorrupt},
		"65536 filters":   {cuckoo(CuckooModuleID, 65536, 2, 2, 2, "abcd"), ErrCorrupt},
		"claims filters":  {cuckoo(CuckooModuleID, 1000, 2, 2, 2, "abcd"), ErrCorrupt},
		"3 buckets":       {cuckoo(CuckooModuleID, 1, 3, 2, 2, "abcdef"), ErrCorrupt},
		"short data":      {cuckoo(CuckooModuleID, 1, 2, 2, 2, "abc"), ErrCorrupt},
		"bucket size 0":   {cuckoo(CuckooModuleID, 1, 2, 0, 2, ""), ErrCorrupt},
		"bucket size 256": {cuckoo(CuckooModuleID, 1, 2, 256, 2, string(make([]byte, 512))), ErrCorrupt},
		"expansion 0, 2":  {cuckoo(CuckooModuleID, 2, 2, 2, 0, "abcd", "abcdefgh"), ErrCorrupt},
		"not geometric":   {cuckoo(CuckooModuleID, 2, 2, 2, 4, "abcd", "abcdefgh"), ErrCorrupt},
		"encver 5":        {cuckoo(mustModuleID(CuckooTypeName, 5), 1, 2, 2, 2, "abcd"), ErrUnsupported},
		"bloom ID":        {cuckoo(BloomModuleID, 1, 2, 2, 2, "abcd"), ErrCorrupt},
	} {
		_, err := DecodeCuckoo(c.value)
		checkRefusal(t, name, err, int64(len(c.value)), c.kind)
	}
}

// TestOldEncodingVersions decodes the encodings older RedisBloom releases
// wrote, as BFRdbLoad and CFRdbLoad read them.
func TestOldEncodingVersions(t *testing.T) {
	data := "\x01\x02\x03\x04\x05\x06\x07\x08"
	for encver := range 5 {
		f := &rdbFile{}
		f.n(uint64(mustModuleID(BloomTypeName, encver))).n(moduleUint).n(1).n(moduleUint).n(1)
		if encver >= 2 {
			f.n(moduleUint).n(BloomForce64)
		}
		if encver >= 4 {
			f.n(moduleUint).n(3)
		}
		f.n(moduleUint).n(8).n(moduleDouble).u64(math.Float64bits(0.01)).n(moduleUint).n(6).
			n(moduleDouble).u64(math.Float64bits(8)) // version 0: bits = entries·bpe = 64
		if encver > 0 {
			f.n(moduleUint).n(64).n(moduleUint).n(6)
		}
		f.n(moduleString).s(data).n(moduleUint).n(1).n(moduleEOF)
		b, err := DecodeBloom(f.b)
		if err != nil {
			t.Fatalf("Bloom encoding version %d: %v", encver, err)
		}
		wantGrowth, wantOptions := uint32(2), uint32(0)
		if encver >= 4 {
			wantGrowth = 3
		}
		if encver >= 2 {
			wantOptions = BloomForce64
		}
		l := b.Links[0]
		if b.Growth != wantGrowth || b.Options != wantOptions || l.Bits != 64 || string(l.Data) != data ||
			(encver > 0) != (l.N2 == 6) {
			t.Errorf("Bloom encoding version %d: %+v", encver, b)
		}
	}
	for _, encver := range []int{2, 3} {
		f := &rdbFile{}
		f.n(uint64(mustModuleID(CuckooTypeName, encver))).n(moduleUint).n(2).n(moduleUint).n(4).n(moduleUint).n(3).
			n(moduleString).s(data).n(moduleString).s(data).n(moduleEOF)
		cf, err := DecodeCuckoo(f.b)
		if err != nil {
			t.Fatalf("cuckoo encoding version %d: %v", encver, err)
		}
		if cf.BucketSize != 2 || cf.MaxIterations != 20 || cf.Expansion != 1 || cf.NumItems != 3 ||
			len(cf.Filters) != 2 || cf.Filters[1].NumBuckets != 4 || string(cf.Filters[1].Data) != data {
			t.Errorf("cuckoo encoding version %d: %+v", encver, cf)
		}
		// Encoded again, it is version 4 and decodes to the same filter.
		again, err := DecodeCuckoo(cf.AppendValue(nil))
		if err != nil || !equalCuckoo(again, cf) {
			t.Errorf("cuckoo encoding version %d re-encoded: %v", encver, err)
		}
	}
}

// TestChunkSequences takes the chunks SCANDUMP gives, with or without its
// final empty reply, and refuses every other order.
func TestChunkSequences(t *testing.T) {
	b := &Bloom{Size: 3, Options: BloomForce64 | BloomNoRound, Growth: 2, Links: []BloomLink{
		{Entries: 10, Error: 0.01, Hashes: 7, BPE: 9.585, Bits: 8 * 13, Size: 2, Data: bytes.Repeat([]byte{1}, 13)},
		{Entries: 20, Error: 0.005, Hashes: 8, BPE: 11.03, Bits: 8 * 29, Size: 1, Data: bytes.Repeat([]byte{2}, 29)},
	}}
	chunks, err := b.ScanDump()
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 3 || chunks[0].Iter != 1 || len(chunks[0].Data) != 20+2*53 || chunks[1].Iter != 14 || chunks[2].Iter != 43 {
		t.Fatalf("chunks %v", chunks)
	}
	for name, cs := range map[string][]Chunk{
		"as given": chunks, "with the final reply": append(cloneChunks(chunks), Chunk{Iter: 0}),
		"split": {chunks[0], {Iter: 6, Data: chunks[1].Data[:5]}, {Iter: 14, Data: chunks[1].Data[5:]}, chunks[2]},
	} {
		back, err := BloomFromScanDump(cs)
		if err != nil || !equalBloom(back, b) {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string][]Chunk{
		"none":           nil,
		"header only":    chunks[:1],
		"header at 0":    {{Iter: 0, Data: chunks[0].Data}, chunks[1], chunks[2]},
		"short header":   {{Iter: 1, Data: chunks[0].Data[:60]}, chunks[1], chunks[2]},
		"missing chunk":  {chunks[0], chunks[2]},
		"reordered":      {chunks[0], chunks[2], chunks[1]},
		"repeated":       {chunks[0], chunks[1], chunks[1], chunks[2]},
		"extra":          {chunks[0], chunks[1], chunks[2], {Iter: 44, Data: []byte{0}}},
		"empty data":     {chunks[0], {Iter: 1}, chunks[1], chunks[2]},
		"across links":   {chunks[0], {Iter: 43, Data: append(bytes.Clone(chunks[1].Data), chunks[2].Data...)}},
		"wrong iterator": {chunks[0], {Iter: 15, Data: chunks[1].Data}, chunks[2]},
		"negative":       {chunks[0], {Iter: -1, Data: chunks[1].Data}, chunks[2]},
	}
	for name, cs := range bad {
		_, err := BloomFromScanDump(cs)
		checkRefusal(t, name, err, 0, ErrCorrupt)
	}

	cf := &Cuckoo{NumBuckets: 4, NumItems: 5, NumDeletes: 1, BucketSize: 2, MaxIterations: 20, Expansion: 2,
		Filters: []CuckooFilter{{NumBuckets: 4, Data: bytes.Repeat([]byte{3}, 8)}, {NumBuckets: 8, Data: bytes.Repeat([]byte{4}, 16)}}}
	cchunks, err := cf.ScanDump()
	if err != nil {
		t.Fatal(err)
	}
	if len(cchunks) != 3 || len(cchunks[0].Data) != 38 || cchunks[1].Iter != 9 || cchunks[2].Iter != 25 {
		t.Fatalf("cuckoo chunks %v", cchunks)
	}
	if back, err := CuckooFromScanDump(cchunks); err != nil || !equalCuckoo(back, cf) {
		t.Errorf("cuckoo: %v", err)
	}
	for name, cs := range map[string][]Chunk{
		"none": nil, "missing": {cchunks[0], cchunks[2]}, "header 37": {{Iter: 1, Data: cchunks[0].Data[:37]}},
	} {
		_, err := CuckooFromScanDump(cs)
		checkRefusal(t, name, err, 0, ErrCorrupt)
	}
	// A filter without items dumps nothing, as CF.SCANDUMP answers.
	empty := *cf
	empty.NumItems = 0
	if cs, err := empty.ScanDump(); err != nil || len(cs) != 0 {
		t.Errorf("empty cuckoo: %v %v", cs, err)
	}
}

func cloneChunks(c []Chunk) []Chunk { return append([]Chunk(nil), c...) }

// TestAbsurdChunkHeaders: headers claiming huge filters are refused once
// the chunks run out, having allocated only what the chunks brought.
func TestAbsurdChunkHeaders(t *testing.T) {
	hdr := binary.LittleEndian.AppendUint64(nil, 0)
	hdr = binary.LittleEndian.AppendUint32(hdr, 1)
	hdr = binary.LittleEndian.AppendUint32(hdr, BloomForce64)
	hdr = binary.LittleEndian.AppendUint32(hdr, 2)
	hdr = binary.LittleEndian.AppendUint64(hdr, 1<<60) // bytes
	hdr = binary.LittleEndian.AppendUint64(hdr, 1<<63) // bits
	hdr = binary.LittleEndian.AppendUint64(hdr, 0)     // size
	hdr = binary.LittleEndian.AppendUint64(hdr, math.Float64bits(0.01))
	hdr = binary.LittleEndian.AppendUint64(hdr, math.Float64bits(9.585))
	hdr = binary.LittleEndian.AppendUint32(hdr, 7)
	hdr = binary.LittleEndian.AppendUint64(hdr, 1<<59)
	hdr = append(hdr, 0)
	var err error
	n := allocated(func() { _, err = BloomFromScanDump([]Chunk{{1, hdr}, {1001, make([]byte, 1000)}}) })
	checkRefusal(t, "Bloom of 2^60 bytes", err, 0, ErrCorrupt)
	if n > maxAbsurdAlloc {
		t.Errorf("allocated %d bytes", n)
	}

	ch := binary.LittleEndian.AppendUint64(nil, 1)
	ch = binary.LittleEndian.AppendUint64(ch, 1<<55) // buckets
	ch = binary.LittleEndian.AppendUint64(ch, 0)
	ch = binary.LittleEndian.AppendUint64(ch, 3) // filters
	ch = binary.LittleEndian.AppendUint16(ch, 255)
	ch = binary.LittleEndian.AppendUint16(ch, 20)
	ch = binary.LittleEndian.AppendUint16(ch, 1)
	n = allocated(func() { _, err = CuckooFromScanDump([]Chunk{{1, ch}, {1001, make([]byte, 1000)}}) })
	checkRefusal(t, "cuckoo of 2^63 bytes", err, 0, ErrCorrupt)
	if n > maxAbsurdAlloc {
		t.Errorf("allocated %d bytes", n)
	}
	// 65535 filters of one bucket of one byte, and 1000 bytes to fill
	// them: refused before a filter is allocated.
	binary.LittleEndian.PutUint64(ch[8:], 1)
	binary.LittleEndian.PutUint64(ch[24:], 65535)
	binary.LittleEndian.PutUint16(ch[32:], 1)
	n = allocated(func() { _, err = CuckooFromScanDump([]Chunk{{1, ch}, {1001, make([]byte, 1000)}}) })
	checkRefusal(t, "65535 cuckoo filters", err, 0, ErrCorrupt)
	if n > 64<<10 {
		t.Errorf("allocated %d bytes for 65535 claimed filters", n)
	}
}

// genReader streams an RDB file with one huge string value, computing the
// checksum as it goes, so that no copy of the file exists anywhere.
type genReader struct {
	parts [][]byte // header and key; then body bytes; then the trailer
	body  int64    // bytes of the value still to give
	crc   uint64
	done  bool
}

func (g *genReader) Read(p []byte) (int, error) {
	if len(g.parts) > 0 {
		n := copy(p, g.parts[0])
		g.crc = crc64(g.crc, p[:n])
		if g.parts[0] = g.parts[0][n:]; len(g.parts[0]) == 0 {
			g.parts = g.parts[1:]
		}
		return n, nil
	}
	if g.body > 0 {
		n := int(min(int64(len(p)), g.body))
		for i := range n {
			p[i] = byte(i)
		}
		g.crc = crc64(g.crc, p[:n])
		g.body -= int64(n)
		return n, nil
	}
	if !g.done {
		g.done = true
		trailer := []byte{opEOF}
		g.parts = [][]byte{binary.LittleEndian.AppendUint64(trailer, crc64(g.crc, trailer))}
		return g.Read(p)
	}
	return 0, io.EOF
}

// TestStreaming reads a file of a big value as a stream: the value is
// skipped as it passes, and the reader allocates nothing like its size.
func TestStreaming(t *testing.T) {
	size := int64(256 << 20)
	if testing.Short() {
		size = 16 << 20
	}
	head := newRDB(12).aux("redis-ver", "7.4.1").key(TypeString, "big").op(be64(uint64(size))...).b
	g := &genReader{parts: [][]byte{head}, body: size}
	r, err := NewReader(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	var entries []*Entry
	n := allocated(func() { entries, err = readAllErr(r) })
	if err != nil || len(entries) != 1 || string(entries[0].Key) != "big" || entries[0].Value != nil {
		t.Fatalf("%d entries: %v", len(entries), err)
	}
	if r.Offset() != int64(len(head))+size+9 {
		t.Errorf("read %d bytes", r.Offset())
	}
	if n > 1<<20 {
		t.Errorf("allocated %d bytes streaming a %d-byte value", n, size)
	}
}

func readAllErr(r *Reader) ([]*Entry, error) {
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
