package classic

import (
	"bytes"
	"testing"
)

// TestMurmur3 checks MurmurHash3_x64_128 (seed 0) against published values
// of the reference implementation, and murmur3Pair against hashing both
// inputs.
func TestMurmur3(t *testing.T) {
	for _, c := range []struct {
		in     string
		h1, h2 uint64
	}{
		{"", 0, 0},
		{"hello", 0xcbd8a7b341bd9b02, 0x5b1e906a48ae1d19},
		{"The quick brown fox jumps over the lazy dog", 0xe34bbc7bbc071b6c, 0x7a433ca9c49a9347},
	} {
		h1, h2 := murmur3([]byte(c.in))
		if h1 != c.h1 || h2 != c.h2 {
			t.Errorf("murmur3(%q) = %#x %#x, want %#x %#x", c.in, h1, h2, c.h1, c.h2)
		}
	}
	for n := range 70 {
		data := bytes.Repeat([]byte{0xab}, n)
		h1, h2, h3, h4 := murmur3Pair(data)
		a1, a2 := murmur3(data)
		b1, b2 := murmur3(append(data, 1))
		if h1 != a1 || h2 != a2 || h3 != b1 || h4 != b2 {
			t.Fatalf("length %d: murmur3Pair differs from hashing data and data+0x01", n)
		}
	}
}
