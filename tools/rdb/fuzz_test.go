package rdb

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// Fuzz targets for every decoder of outside bytes: the RDB reader, the
// DUMP payload parser, the module value decoders, the SCANDUMP chunk
// decoders and LZF. Each asserts invariants, not just the absence of a
// panic: refusals are *Error values within the input, and whatever is
// accepted encodes back to what decodes the same.

// checkFuzzErr fails unless err is an *Error with an offset within n
// bytes.
func checkFuzzErr(t *testing.T, err error, n int) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%v is not an *Error", err)
	}
	if e.Offset < 0 || e.Offset > int64(n) {
		t.Fatalf("offset %d outside the %d bytes: %v", e.Offset, n, err)
	}
}

// Seeds stay small: the fuzzer minimizes every new input it finds, running
// the target over and over, and on inputs of tens of kilobytes that takes
// its minute each time.
const maxSeed = 4 << 10

// goldenValues returns the module values of RedisBloom's DUMP payloads in
// testdata/dump.json of at most maxSeed bytes, by module type name.
func goldenValues(f *testing.F) map[string][][]byte {
	js, err := os.ReadFile("testdata/dump.json")
	if err != nil {
		f.Fatal(err)
	}
	var g rdbGolden
	if err := json.Unmarshal(js, &g); err != nil {
		f.Fatal(err)
	}
	out := map[string][][]byte{}
	for _, fl := range g.Filters {
		p, err := base64.StdEncoding.DecodeString(fl.DumpPayload)
		if err != nil {
			f.Fatal(err)
		}
		_, v, err := ParsePayload(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(v) <= maxSeed {
			out[fl.Type] = append(out[fl.Type], v)
		}
	}
	return out
}

func FuzzReader(f *testing.F) {
	for v := 9; v <= 12; v++ {
		data, _ := synthFile(v, v%2 == 0)
		f.Add(data)
	}
	f.Add(newRDB(12).key(TypeString, "k").enc("v").done(true))
	// The golden files' first keys, cut after them and closed.
	for _, p := range []string{"testdata/dump.rdb", "testdata/redis7.4-lfu.rdb"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		entries, err := readFile(data, true)
		if err != nil {
			f.Fatal(err)
		}
		end := 0
		for _, e := range entries {
			if e.Offset < maxSeed {
				end = int(e.Offset)
			}
		}
		f.Add((&rdbFile{b: bytes.Clone(data[:end])}).done(true))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		known, errKnown := readFile(data, true)
		stream, errStream := readFile(data, false)
		for _, err := range []error{errKnown, errStream} {
			if err != nil {
				checkFuzzErr(t, err, len(data))
			}
		}
		// Knowing the size only refuses earlier, or bytes after the
		// checksum: what one takes, the other takes the same.
		if errKnown == nil && errStream != nil {
			t.Fatalf("taken with its size, refused as a stream: %v", errStream)
		}
		n := min(len(known), len(stream))
		for i := range n {
			a, b := known[i], stream[i]
			if a.Offset != b.Offset || a.DB != b.DB || !bytes.Equal(a.Key, b.Key) || a.Type != b.Type ||
				a.ExpireAt != b.ExpireAt || !bytes.Equal(a.Value, b.Value) {
				t.Fatalf("key %d differs between the two reads", i)
			}
		}
		if errKnown == nil && len(known) != len(stream) {
			t.Fatalf("%d keys with the size, %d without", len(known), len(stream))
		}
		// A kept value is well-formed on its own: its payload parses to it.
		for _, e := range stream {
			if e.Value == nil {
				continue
			}
			typ, v, err := ParsePayload(AppendPayload(nil, e.Type, e.Value))
			if err != nil || typ != e.Type || !bytes.Equal(v, e.Value) {
				t.Fatalf("%q: the kept value does not parse as a payload: %v", e.Key, err)
			}
		}
	})
}

func FuzzParsePayload(f *testing.F) {
	for _, vs := range goldenValues(f) {
		for _, v := range vs {
			f.Add(append([]byte{byte(TypeModule2)}, v...), true)
		}
	}
	data, _ := synthFile(12, true)
	entries, err := readFile(data, true)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(append([]byte{byte(e.Type)}, e.Value...), true)
	}
	f.Add(AppendPayload(nil, TypeString, []byte{1, 'x'}), false)
	f.Fuzz(func(t *testing.T, data []byte, frame bool) {
		// With frame, data is a type and a value, given a right footer, so
		// that the fuzzer reaches the value parser past the CRC-64.
		p := data
		if frame && len(data) > 0 {
			p = AppendPayload(nil, Type(data[0]), data[1:])
		}
		typ, value, err := ParsePayload(p)
		if err != nil {
			checkFuzzErr(t, err, len(p))
			return
		}
		if len(p) < 11 || !bytes.Equal(value, p[1:len(p)-10]) || typ != Type(p[0]) {
			t.Fatal("the value is not the payload's middle")
		}
		if again := AppendPayload(nil, typ, value); p[len(p)-10] == PayloadVersion && p[len(p)-9] == 0 && !bytes.Equal(again, p) {
			t.Fatal("a version 12 payload does not re-frame to itself")
		}
		// Module values of RedisBloom's types decode or are refused cleanly.
		if typ == TypeModule2 {
			if _, err := DecodeBloom(value); err != nil {
				checkFuzzErr(t, err, len(value))
			}
			if _, err := DecodeCuckoo(value); err != nil {
				checkFuzzErr(t, err, len(value))
			}
		}
	})
}

func FuzzDecodeBloom(f *testing.F) {
	for _, v := range goldenValues(f)[BloomTypeName] {
		f.Add(v)
	}
	small := &Bloom{Size: 1, Options: BloomForce64 | BloomNoRound, Growth: 2, Links: []BloomLink{
		{Entries: 10, Error: 0.01, Hashes: 7, BPE: 9.585, Bits: 8 * 12, Size: 1, Data: []byte("123456789012")},
		{Entries: 20, Error: 0.005, Hashes: 8, BPE: 11.03, Bits: 8 * 30, Data: bytes.Repeat([]byte{9}, 30)},
	}}
	f.Add(small.AppendValue(nil))
	f.Fuzz(func(t *testing.T, value []byte) {
		b, err := DecodeBloom(value)
		if err != nil {
			checkFuzzErr(t, err, len(value))
			return
		}
		checkBloomRoundTrips(t, b)
	})
}

// checkBloomRoundTrips holds b to its encodings: value, payload, chunks.
func checkBloomRoundTrips(t *testing.T, b *Bloom) {
	t.Helper()
	if err := b.Validate(); err != nil {
		t.Fatalf("decoded, yet invalid: %v", err)
	}
	again, err := DecodeBloom(b.AppendValue(nil))
	if err != nil || !equalBloom(again, b) {
		t.Fatalf("value round trip: %v", err)
	}
	_, v, err := ParsePayload(b.DumpPayload())
	if err != nil || !bytes.Equal(v, b.AppendValue(nil)) {
		t.Fatalf("payload round trip: %v", err)
	}
	chunks, err := b.ScanDump()
	if err != nil {
		t.Fatalf("scandump: %v", err)
	}
	back, err := BloomFromScanDump(chunks)
	if err != nil || !equalBloom(back, b) {
		t.Fatalf("chunk round trip: %v", err)
	}
}

func FuzzDecodeCuckoo(f *testing.F) {
	for _, v := range goldenValues(f)[CuckooTypeName] {
		f.Add(v)
	}
	small := &Cuckoo{NumBuckets: 2, NumItems: 3, NumDeletes: 1, BucketSize: 2, MaxIterations: 20, Expansion: 2,
		Filters: []CuckooFilter{{NumBuckets: 2, Data: []byte("1234")}, {NumBuckets: 4, Data: []byte("\x00\x01\x00\x02\x00\x00\x07\x00")}}}
	f.Add(small.AppendValue(nil))
	f.Fuzz(func(t *testing.T, value []byte) {
		cf, err := DecodeCuckoo(value)
		if err != nil {
			checkFuzzErr(t, err, len(value))
			return
		}
		checkCuckooRoundTrips(t, cf)
	})
}

func checkCuckooRoundTrips(t *testing.T, cf *Cuckoo) {
	t.Helper()
	if err := cf.Validate(); err != nil {
		t.Fatalf("decoded, yet invalid: %v", err)
	}
	again, err := DecodeCuckoo(cf.AppendValue(nil))
	if err != nil || !equalCuckoo(again, cf) {
		t.Fatalf("value round trip: %v", err)
	}
	chunks, err := cf.ScanDump()
	if err != nil {
		t.Fatalf("scandump: %v", err)
	}
	if cf.NumItems == 0 {
		if len(chunks) != 0 {
			t.Fatal("chunks for a filter without items")
		}
		return
	}
	back, err := CuckooFromScanDump(chunks)
	if err != nil || !equalCuckoo(back, cf) {
		t.Fatalf("chunk round trip: %v", err)
	}
}

// FuzzScanDumpChunks decodes a header chunk and the data chunks after it,
// cut where the fuzzer says, as BF.LOADCHUNK or CF.LOADCHUNK would take
// them from a client.
func FuzzScanDumpChunks(f *testing.F) {
	for _, vs := range goldenValues(f) {
		for _, v := range vs {
			var chunks []Chunk
			if b, err := DecodeBloom(v); err == nil {
				chunks, _ = b.ScanDump()
			} else if cf, err := DecodeCuckoo(v); err == nil {
				chunks, _ = cf.ScanDump()
			}
			var data []byte
			for _, c := range chunks[1:] {
				data = append(data, c.Data...)
			}
			f.Add(chunks[0].Data, data, uint16(len(data)/3))
		}
	}
	f.Fuzz(func(t *testing.T, header, data []byte, cut uint16) {
		chunks := []Chunk{{Iter: 1, Data: header}}
		for rest, iter := data, int64(1); len(rest) > 0; {
			n := min(len(rest), int(cut)+1)
			iter += int64(n)
			chunks = append(chunks, Chunk{Iter: iter, Data: rest[:n]})
			rest = rest[n:]
		}
		if b, err := BloomFromScanDump(chunks); err != nil {
			checkFuzzErr(t, err, 0)
		} else {
			checkBloomRoundTrips(t, b)
		}
		if cf, err := CuckooFromScanDump(chunks); err != nil {
			checkFuzzErr(t, err, 0)
		} else {
			checkCuckooRoundTrips(t, cf)
		}
	})
}

// FuzzLZF holds the compressor to the decompressor on any bytes, and the
// decompressor to its bounds on any input.
func FuzzLZF(f *testing.F) {
	f.Add([]byte("abcabcabcabcabcabcabcabcabcabcabc"), uint16(33))
	f.Add(bytes.Repeat([]byte{0}, 1000), uint16(1000))
	f.Add(noise(300), uint16(300))
	f.Fuzz(func(t *testing.T, data []byte, n uint16) {
		out := make([]byte, len(data)+1)
		if c := lzfCompress(data, out, len(data)); c > 0 {
			back, err := lzfDecompress(out[:c], uint64(len(data)))
			if err != nil || !bytes.Equal(back, data) {
				t.Fatalf("round trip of %d bytes through %d: %v", len(data), c, err)
			}
		}
		if back, err := lzfDecompress(data, uint64(n)); err == nil && len(back) != int(n) {
			t.Fatalf("decompressed %d bytes, asked %d", len(back), n)
		}
	})
}
