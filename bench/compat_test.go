package bench

import (
	"bytes"
	"fmt"
	"testing"

	bloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/ohbloom/ohbloom/classic"
)

// TestBitsAndBloomsCompatibility checks ohbloom's classic.Filter with the
// BitsAndBlooms strategy against the real bits-and-blooms/bloom/v3: the
// same size for the same estimates, the same bytes after the same adds,
// the same answer to every query, and each reads what the other wrote.
func TestBitsAndBloomsCompatibility(t *testing.T) {
	for _, c := range []struct {
		n       int
		p       float64
		keySize int
	}{{1000, 0.01, 32}, {5000, 0.001, 7}, {300, 0.2, 15}} {
		t.Run(fmt.Sprintf("n=%d/p=%g", c.n, c.p), func(t *testing.T) {
			keys := NewKeys(c.n+20_000, uint64(c.n))
			theirs := bloom.NewWithEstimates(uint(c.n), c.p)
			ours, err := classic.NewWithEstimates(classic.BitsAndBlooms, uint64(c.n), c.p)
			if err != nil {
				t.Fatal(err)
			}
			if ours.Bits() != uint64(theirs.Cap()) || ours.Hashes() != uint64(theirs.K()) {
				t.Fatalf("sizes: ours m=%d k=%d, theirs m=%d k=%d", ours.Bits(), ours.Hashes(), theirs.Cap(), theirs.K())
			}
			for i := range c.n {
				k := keys.At(i)[:c.keySize]
				theirs.Add(k)
				ours.Add(k)
			}
			var a, b bytes.Buffer
			if _, err := theirs.WriteTo(&a); err != nil {
				t.Fatal(err)
			}
			if _, err := ours.WriteTo(&b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatal("the two filters' bytes differ")
			}
			readByUs, _, err := classic.Read(bytes.NewReader(a.Bytes()), classic.BitsAndBlooms)
			if err != nil {
				t.Fatal(err)
			}
			readByThem := &bloom.BloomFilter{}
			if _, err := readByThem.ReadFrom(bytes.NewReader(b.Bytes())); err != nil {
				t.Fatal(err)
			}
			fp := 0
			for i := range c.n + 20_000 {
				k := keys.At(i)[:c.keySize]
				want := theirs.Test(k)
				if ours.Test(k) != want || readByUs.Test(k) != want || readByThem.Test(k) != want {
					t.Fatalf("key %d: the filters disagree", i)
				}
				if i >= c.n && want {
					fp++
				}
			}
			t.Logf("m=%d k=%d: %d queries agree, %d false positives", ours.Bits(), ours.Hashes(), c.n+20_000, fp)
		})
	}
}

// TestBitsAndBloomsOddStreams checks that ohbloom reads the streams
// bits-and-blooms' own ReadFrom reads although NewWithEstimates never
// makes them, with identical answers, and that after the same adds both
// write the same bytes: a bitset whose length is not m (FromWithM, with
// the length above m and below it), an empty bitset (New(0, 3), whose m is
// 1), and k beyond 2^16.
func TestBitsAndBloomsOddStreams(t *testing.T) {
	keys := NewKeys(3000, 7)
	for _, c := range []struct {
		name   string
		filter func() *bloom.BloomFilter
		adds   int
		probes int
	}{
		{"FromWithM(2 words, 100, 3)", func() *bloom.BloomFilter { return bloom.FromWithM(make([]uint64, 2), 100, 3) }, 20, 2000},
		{"FromWithM(2 set words, 200, 2)", func() *bloom.BloomFilter {
			return bloom.FromWithM([]uint64{0x0123456789abcdef, 0xfedcba9876543210}, 200, 2)
		}, 30, 2000},
		{"New(0, 3)", func() *bloom.BloomFilter { return bloom.New(0, 3) }, 5, 2000},
		// Each add sets up to 70000 bits of 1000: after one the filter is
		// nearly full and every test runs thousands of probes.
		{"New(1000, 70000)", func() *bloom.BloomFilter { return bloom.New(1000, 70000) }, 2, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			theirs := c.filter()
			var written bytes.Buffer
			if _, err := theirs.WriteTo(&written); err != nil {
				t.Fatal(err)
			}
			ours, n, err := classic.Read(bytes.NewReader(written.Bytes()), classic.BitsAndBlooms)
			if err != nil || n != int64(written.Len()) {
				t.Fatalf("classic.Read of bits-and-blooms' stream: %v (%d of %d bytes)", err, n, written.Len())
			}
			compare := func(stage string) {
				t.Helper()
				for i := range c.probes {
					k := keys.At(i)[:11]
					if ours.Test(k) != theirs.Test(k) {
						t.Fatalf("%s: key %d: ours %v, theirs %v", stage, i, ours.Test(k), theirs.Test(k))
					}
				}
				var a, b bytes.Buffer
				theirs.WriteTo(&a)
				ours.WriteTo(&b)
				if !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Fatalf("%s: bytes differ:\ntheirs %x\nours   %x", stage, a.Bytes()[:min(a.Len(), 64)], b.Bytes()[:min(b.Len(), 64)])
				}
			}
			compare("as read")
			for i := range c.adds {
				k := keys.At(2000 + i)[:11]
				theirs.Add(k)
				ours.Add(k)
				compare(fmt.Sprintf("after %d adds", i+1))
			}
			// And bits-and-blooms reads ours back.
			var b bytes.Buffer
			ours.WriteTo(&b)
			back := &bloom.BloomFilter{}
			if _, err := back.ReadFrom(&b); err != nil || !back.Equal(theirs) {
				t.Fatalf("bits-and-blooms reading ours: %v", err)
			}
		})
	}
}
