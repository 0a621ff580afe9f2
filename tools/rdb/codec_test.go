package rdb

import (
	"bytes"
	"math"
	"testing"
)

func TestCRC64(t *testing.T) {
	// The check value of crc-64-jones, as Redis's own crc64 test prints it.
	if got := crc64(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64(123456789) = %016x, want e9c6d914c4b8d9ca", got)
	}
	// Slicing by 8 agrees with the byte-at-a-time loop, at every length
	// and split.
	data := noise(100)
	for n := range len(data) {
		var slow uint64
		for _, b := range data[:n] {
			slow = crcTable[0][byte(slow)^b] ^ slow>>8
		}
		if got := crc64(0, data[:n]); got != slow {
			t.Fatalf("length %d: %016x, byte by byte %016x", n, got, slow)
		}
		for k := 0; k <= n; k += 7 {
			if got := crc64(crc64(0, data[:k]), data[k:n]); got != slow {
				t.Fatalf("length %d split at %d: %016x, want %016x", n, k, got, slow)
			}
		}
	}
}

func TestLZF(t *testing.T) {
	inputs := [][]byte{
		[]byte("abcabcabcabcabcabcabcabcabcabcabcabc"),
		bytes.Repeat([]byte{0}, 5000), // back references of the most, 264 bytes
		noise(1000),                   // nothing to compress
		append(noise(40), noise(40)...),
		bytes.Repeat([]byte("0123456789abcdefghij"), 600), // offsets near 8192
	}
	for i, in := range inputs {
		out := make([]byte, len(in)+1)
		n := lzfCompress(in, out, len(in))
		if i == 2 {
			if n != 0 && n < len(in) {
				t.Errorf("noise compressed to %d bytes", n)
			}
		} else if n == 0 || n >= len(in)*3/4 {
			t.Errorf("input %d: %d bytes compress to %d", i, len(in), n)
		}
		if n == 0 {
			continue
		}
		back, err := lzfDecompress(out[:n], uint64(len(in)))
		if err != nil || !bytes.Equal(back, in) {
			t.Errorf("input %d: round trip: %v", i, err)
		}
		// An output one byte short: lzf_compress gives up, as Redis relies on.
		if m := lzfCompress(in, make([]byte, n), n-1); m != 0 {
			t.Errorf("input %d: %d bytes into %d", i, m, n-1)
		}
	}
	// liblzf never refers back to the input's first byte (ref > in_data):
	// the second "xyz" is a literal too, and the match, 6 bytes at offset
	// 3, starts at "yzx"; a match never takes the last two bytes.
	out := make([]byte, 32)
	n := lzfCompress([]byte("xyzxyzxyzxyz"), out, 31)
	if want := []byte{3, 'x', 'y', 'z', 'x', 4 << 5, 2, 1, 'y', 'z'}; !bytes.Equal(out[:n], want) {
		t.Errorf("xyz×4 compresses to %x, want %x", out[:n], want)
	}

	for name, c := range map[string]struct {
		in []byte
		n  uint64
	}{
		"literal past the input":   {[]byte{5, 'a', 'b'}, 6},
		"literal past the output":  {[]byte{2, 'a', 'b', 'c'}, 2},
		"reference before start":   {[]byte{0, 'a', 0x20, 5}, 4},
		"reference past output":    {[]byte{1, 'a', 'b', 0xe0, 200, 1}, 10},
		"reference cut":            {[]byte{0, 'a', 0x20}, 4},
		"long reference cut":       {[]byte{0, 'a', 0xe0, 1}, 20},
		"short of the length":      {[]byte{0, 'a'}, 2},
		"more than 88 times":       {[]byte{0, 'a'}, 177},
		"empty input, some output": {nil, 1},
	} {
		if _, err := lzfDecompress(c.in, c.n); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if out, err := lzfDecompress([]byte{0, 'a', 0xe0, 0xff, 0}, 265); err != nil || !bytes.Equal(out, bytes.Repeat([]byte{'a'}, 265)) {
		t.Errorf("the longest reference: %v", err)
	}
	if out, err := lzfDecompress(nil, 0); err != nil || len(out) != 0 {
		t.Errorf("empty: %v", err)
	}
}

func TestStringEncodings(t *testing.T) {
	for _, c := range []struct {
		s    string
		want []byte
	}{
		{"", []byte{0}},
		{"0", []byte{0xc0, 0}},
		{"-128", []byte{0xc0, 0x80}},
		{"127", []byte{0xc0, 0x7f}},
		{"128", []byte{0xc1, 0x80, 0}},
		{"-32768", []byte{0xc1, 0, 0x80}},
		{"32768", []byte{0xc2, 0, 0x80, 0, 0}},
		{"2147483647", []byte{0xc2, 0xff, 0xff, 0xff, 0x7f}},
		{"2147483648", append([]byte{10}, "2147483648"...)}, // past int32: text
		{"-0", []byte{2, '-', '0'}},
		{"01", []byte{2, '0', '1'}},
		{"+1", []byte{2, '+', '1'}},
		{" 1", []byte{2, ' ', '1'}},
		{"12345678901", append([]byte{11}, "12345678901"...)},
		{"abcdefghijklmnopqrst", append([]byte{20}, "abcdefghijklmnopqrst"...)}, // 20 bytes: never compressed
	} {
		got := appendString(nil, []byte(c.s))
		if !bytes.Equal(got, c.want) {
			t.Errorf("%q encodes as %x, want %x", c.s, got, c.want)
		}
		cur := cursor{b: got}
		back, err := cur.str("s")
		if err != nil || string(back) != c.s || cur.pos != len(got) {
			t.Errorf("%q decodes as %q: %v", c.s, back, err)
		}
	}
	for _, n := range []uint64{0, 63, 64, 16383, 16384, math.MaxUint32, math.MaxUint32 + 1, math.MaxUint64} {
		b := appendLen(nil, n)
		cur := cursor{b: b}
		if got, enc, err := cur.length("n"); err != nil || enc || got != n || cur.pos != len(b) {
			t.Errorf("length %d: %x gives %d %v %v", n, b, got, enc, err)
		}
	}
}

func TestModuleID(t *testing.T) {
	// The 64-bit IDs in RedisBloom's payloads: 0x3016e5a289bef804 and
	// 0x3016e5a289821404.
	if BloomModuleID != 0x3016e5a289bef804 || CuckooModuleID != 0x3016e5a289821404 {
		t.Fatalf("module IDs %x %x", uint64(BloomModuleID), uint64(CuckooModuleID))
	}
	if BloomModuleID.Name() != "MBbloom--" || BloomModuleID.EncVer() != 4 || CuckooModuleID.String() != "MBbloomCF/4" {
		t.Errorf("%s %d %s", BloomModuleID.Name(), BloomModuleID.EncVer(), CuckooModuleID)
	}
	for _, bad := range []struct {
		name   string
		encver int
	}{{"MBbloom-", 4}, {"MBbloom--x", 4}, {"MBbloom.-", 4}, {"MBbloom--", 1024}, {"MBbloom--", -1}} {
		if _, err := NewModuleID(bad.name, bad.encver); err == nil {
			t.Errorf("NewModuleID(%q, %d) accepted", bad.name, bad.encver)
		}
	}
}
