package bench

import (
	"bytes"
	"fmt"
	"testing"

	bloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/ohbloom/ohbloom"
)

// TestBitsAndBloomsCompatibility checks ohbloom's ClassicFilter with the
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
			ours, err := ohbloom.NewClassicWithEstimates(ohbloom.BitsAndBlooms, uint64(c.n), c.p)
			if err != nil {
				t.Fatal(err)
			}
			if ours.Cap() != uint64(theirs.Cap()) || ours.K() != uint64(theirs.K()) {
				t.Fatalf("sizes: ours m=%d k=%d, theirs m=%d k=%d", ours.Cap(), ours.K(), theirs.Cap(), theirs.K())
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
			readByUs, _, err := ohbloom.ReadClassic(bytes.NewReader(a.Bytes()), ohbloom.BitsAndBlooms)
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
			t.Logf("m=%d k=%d: %d queries agree, %d false positives", ours.Cap(), ours.K(), c.n+20_000, fp)
		})
	}
}
