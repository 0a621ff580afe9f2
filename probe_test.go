package ohbloom

import (
	"math"
	"math/rand/v2"
	"testing"
)

// residueEdges returns residues where a quotient computed in floating point
// would go wrong first: multiples of each partition size and their
// neighbours, across the whole 32-bit range, and the range's ends.
func residueEdges(sizes []uint32, r *rand.Rand) []uint32 {
	xs := []uint32{0, 1, math.MaxUint32 - 1, math.MaxUint32}
	for _, s := range sizes {
		top := math.MaxUint32 / s
		for _, q := range []uint32{1, 2, top - 1, top, r.Uint32N(top), r.Uint32N(top), 1 << 20 / s, 1 << 31 / s} {
			m := q * s
			xs = append(xs, m-1, m, m+1, m+s-1)
		}
	}
	return xs
}

// TestQuotientExact checks the generated probes' quotient, x - ⌊x·inv⌋·size
// with inv the float64 just above 1/size, against x % size on every
// partition size in use, at the edges and at random.
func TestQuotientExact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for k := minK; k <= maxK; k++ {
		var sizes []uint32
		parts := partitionsFor(k)
		for _, p := range parts[:k] {
			sizes = append(sizes, p.size)
		}
		xs := residueEdges(sizes, r)
		for range 20000 {
			xs = append(xs, r.Uint32())
		}
		for _, s := range sizes {
			inv := math.Nextafter(1/float64(s), 1)
			for _, x := range xs {
				if got := x - uint32(int32(float64(x)*inv))*s; got != x%s {
					t.Fatalf("size %d, x %d: %d, want %d", s, x, got, x%s)
				}
			}
		}
	}
}

// TestVectorMatchesProbes holds the vector probe to the generated ones bit
// for bit, for every k, where the CPU runs it.
func TestVectorMatchesProbes(t *testing.T) {
	if !hasVector {
		t.Skip("no vector probe on this CPU")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for k := minK; k <= maxK; k++ {
		f, err := NewWithConfig(Config{Blocks: 3, K: k})
		if err != nil {
			t.Fatal(err)
		}
		if f.vec == nil && probeChoice != "scalar" {
			t.Fatalf("k=%d: no vector probe though the CPU has one", k)
		}
		f.setVec(makeVecProbe(f.parts[:k]))
		var sizes []uint32
		for _, p := range f.parts[:k] {
			sizes = append(sizes, p.size)
		}
		xs := residueEdges(sizes, r)
		for range 5000 {
			xs = append(xs, r.Uint32())
		}
		for _, x := range xs {
			var want, got block
			f.add(&want, x)
			if probeTestAndAdd(&f.core, &got, x) {
				t.Fatalf("k=%d x=%d: probeTestAndAdd reports the key present in an empty block", k, x)
			}
			if got != want {
				t.Fatalf("k=%d x=%d: probeTestAndAdd sets %x, add %x", k, x, got, want)
			}
			if !probeTestAndAdd(&f.core, &got, x) || got != want {
				t.Fatalf("k=%d x=%d: a second probeTestAndAdd reports the key absent or changes the block", k, x)
			}
			// On a random block, and on one with exactly the key's bits
			// minus one of them.
			var b block
			for w := range b {
				b[w] = r.Uint64() | r.Uint64() // three quarters set: both answers occur
			}
			if probeTest(&f.core, &b, x) != f.test(&b, x) {
				t.Fatalf("k=%d x=%d: probeTest and test disagree on %x", k, x, b)
			}
			if !probeTest(&f.core, &want, x) {
				t.Fatalf("k=%d x=%d: probeTest misses the key's own bits", k, x)
			}
			b = want
			w := r.IntN(blockWords)
			for b[w] == 0 {
				w = (w + 1) % blockWords
			}
			b[w] &= b[w] - 1 // clear one of the key's bits
			if probeTest(&f.core, &b, x) {
				t.Fatalf("k=%d x=%d: probeTest passes with a bit missing", k, x)
			}
			if probeTestAndAdd(&f.core, &b, x) || b != want {
				t.Fatalf("k=%d x=%d: probeTestAndAdd with a bit missing reports present or does not restore it", k, x)
			}
			// probeTestAndAdd ORs: bits already set stay set.
			b = block{^uint64(0), 0, ^uint64(0), 0, 1, 2, 3, 4}
			want = b
			f.add(&want, x)
			if probeTestAndAdd(&f.core, &b, x) != f.test(&block{^uint64(0), 0, ^uint64(0), 0, 1, 2, 3, 4}, x) {
				t.Fatalf("k=%d x=%d: probeTestAndAdd's answer differs from test's", k, x)
			}
			if b != want {
				t.Fatalf("k=%d x=%d: probeTestAndAdd on a full block gives %x, want %x", k, x, b, want)
			}
		}
	}
}

// TestVecProbeShared: filters of one k share one set of vector constants,
// so that many small filters do not each carry 1.4 KB of them.
func TestVecProbeShared(t *testing.T) {
	a, b := New(100, 0.01), New(5000, 0.01)
	if a.K() != b.K() {
		t.Fatalf("k = %d and %d", a.K(), b.K())
	}
	if a.vec != b.vec {
		t.Errorf("two filters of k = %d hold different vector constants", a.K())
	}
	if a.vec != nil && New(100, 1e-6).vec == a.vec {
		t.Errorf("filters of different k share vector constants")
	}
}
