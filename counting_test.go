package ohbloom

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestCountingAgainstMultiset runs random adds and removes on a small key
// universe against a reference multiset: every key the multiset holds must
// test positive, Remove must fail exactly when the filter says the key is
// absent, and such a failed Remove must change nothing.
func TestCountingAgainstMultiset(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	f := NewCounting(2000, 0.01)
	a := NewAtomicCounting(2000, 0.01)
	held := map[int]int{}
	for op := range 200_000 {
		k := r.IntN(3000)
		key := fmt.Sprint("key", k)
		if r.IntN(2) == 0 || held[k] == 0 && r.IntN(4) != 0 {
			f.AddString(key)
			a.AddString(key)
			held[k]++
		} else if held[k] > 0 {
			if err := f.RemoveString(key); err != nil {
				t.Fatalf("op %d: removing held key %d: %v", op, k, err)
			}
			if err := a.RemoveString(key); err != nil {
				t.Fatalf("op %d: atomic: removing held key %d: %v", op, k, err)
			}
			held[k]--
		} else if !f.TestString(key) {
			before, _ := f.MarshalBinary()
			if err := f.RemoveString(key); !errors.Is(err, ErrNotPresent) {
				t.Fatalf("op %d: removing absent key %d: %v", op, k, err)
			}
			if after, _ := f.MarshalBinary(); !bytes.Equal(before, after) {
				t.Fatalf("op %d: a failed Remove changed the filter", op)
			}
			if err := a.RemoveString(key); !errors.Is(err, ErrNotPresent) {
				t.Fatalf("op %d: atomic: removing absent key %d: %v", op, k, err)
			}
		}
		if op%1000 == 0 {
			for k, n := range held {
				if n > 0 && (!f.TestString(fmt.Sprint("key", k)) || !a.TestString(fmt.Sprint("key", k))) {
					t.Fatalf("op %d: key %d held %d times tests absent", op, k, n)
				}
			}
		}
	}
	if !f.Equal(a.ToPlain()) {
		t.Fatal("the plain and the atomic filter differ after the same operations")
	}
}

func TestCountingRules(t *testing.T) {
	f := NewCounting(1000, 0.001)
	f.AddString("twice")
	f.AddString("twice")
	if err := f.RemoveString("twice"); err != nil || !f.TestString("twice") {
		t.Fatalf("added twice, removed once: %v, present %v", err, f.TestString("twice"))
	}
	if c := f.Count([]byte("twice")); c != 1 {
		t.Fatalf("Count = %d, want 1", c)
	}
	if err := f.RemoveString("twice"); err != nil || f.TestString("twice") {
		t.Fatalf("removed as often as added: %v, present %v", err, f.TestString("twice"))
	}
	// Saturation: 20 adds stick the counters at 15; 20 removes leave the
	// key present, since stuck counters are never decremented.
	for range 20 {
		f.AddString("hot")
	}
	if c := f.Count([]byte("hot")); c != 15 || f.Saturated() < uint64(f.K()) {
		t.Fatalf("Count %d, %d saturated counters after 20 adds", c, f.Saturated())
	}
	for range 20 {
		f.RemoveString("hot")
	}
	if !f.TestString("hot") || f.Count([]byte("hot")) != 15 {
		t.Fatal("saturated counters were decremented")
	}
	a := NewAtomicCounting(1000, 0.001)
	for range 20 {
		a.AddString("hot")
	}
	for range 20 {
		a.RemoveString("hot")
	}
	if !a.TestString("hot") || a.Saturated() < uint64(a.K()) {
		t.Fatal("atomic: saturated counters were decremented")
	}
}

func TestCountingFalsePositiveRate(t *testing.T) {
	n, queries := uint64(200_000), uint64(2_000_000)
	if testing.Short() {
		n, queries = 20_000, 200_000
	}
	for _, p := range []float64{0.05, 0.01, 0.001} {
		f := NewCounting(n, p)
		var buf []byte
		for i := range n {
			buf = keyShapes[0].key(buf, i)
			f.Add(buf)
		}
		fp := 0
		for i := range queries {
			buf = keyShapes[0].key(buf, n+i)
			if f.Test(buf) {
				fp++
			}
		}
		rate := float64(fp) / float64(queries)
		t.Logf("p=%g k=%d %.1f bits/key: measured %.4g, from the counters %.4g", p, f.K(), float64(f.SizeBytes()*8)/float64(n), rate, f.EstimatedFPR())
		if rate > p || f.EstimatedFPR() > p {
			t.Errorf("p=%g: measured %.4g, from the counters %.4g", p, rate, f.EstimatedFPR())
		}
		if c := f.EstimatedCount(); float64(c) < 0.97*float64(n) || float64(c) > 1.03*float64(n) {
			t.Errorf("p=%g: EstimatedCount %d for %d keys", p, c, n)
		}
	}
}

// TestAtomicCountingConcurrent: goroutines add and remove their own keys
// concurrently; the counters end as a sequential run of the same
// operations leaves them (no counter saturates: keys are added at most
// three times into a large filter).
func TestAtomicCountingConcurrent(t *testing.T) {
	const workers, keys = 4, 3000
	a := NewAtomicCounting(workers*keys, 0.001)
	ops := func(w int, do func(key string, add bool)) {
		r := rand.New(rand.NewPCG(uint64(w), 1))
		held := make([]int, keys)
		for range 4 * keys {
			k := r.IntN(keys)
			key := fmt.Sprintf("%d/%d", w, k)
			if held[k] < 3 && (held[k] == 0 || r.IntN(2) == 0) {
				do(key, true)
				held[k]++
			} else if held[k] > 0 {
				do(key, false)
				held[k]--
			}
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ops(w, func(key string, add bool) {
				if add {
					a.AddString(key)
				} else if err := a.RemoveString(key); err != nil {
					t.Errorf("removing held key %s: %v", key, err)
				}
			})
		})
	}
	wg.Wait()
	ref := NewCounting(workers*keys, 0.001)
	for w := range workers {
		ops(w, func(key string, add bool) {
			if add {
				ref.AddString(key)
			} else {
				ref.RemoveString(key)
			}
		})
	}
	if !a.ToPlain().Equal(ref) {
		t.Fatal("concurrent add/remove left other counters than the sequential run")
	}
	if ref.Saturated() != 0 {
		t.Fatal("a counter saturated: the comparison is void")
	}
}

func TestCountingEncoding(t *testing.T) {
	f := NewCounting(5000, 0.01)
	for i := range 5000 {
		f.AddString(fmt.Sprint(i))
	}
	data, _ := f.MarshalBinary()
	var g CountingFilter
	if err := g.UnmarshalBinary(data); err != nil || !g.Equal(f) {
		t.Fatalf("UnmarshalBinary: %v", err)
	}
	var stream bytes.Buffer
	f.ToAtomic().WriteTo(&stream)
	var h AtomicCountingFilter
	if _, err := h.ReadFrom(&stream); err != nil || !h.ToPlain().Equal(f) {
		t.Fatalf("ReadFrom: %v", err)
	}
	// A counting filter is not a Filter, and the other way round.
	var plain Filter
	if err := plain.UnmarshalBinary(data); !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("a counting filter read as a Filter: %v", err)
	}
	other, _ := New(10, 0.1).MarshalBinary()
	if err := g.UnmarshalBinary(other); !errors.Is(err, ErrUnknownKind) || !g.Equal(f) {
		t.Fatalf("a Filter read as a counting filter: %v", err)
	}
	if _, err := NewCountingWithConfig(Config{Blocks: 4, K: 9}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("K = 9: %v", err)
	}
}

func FuzzUnmarshalCounting(f *testing.F) {
	g := NewCounting(100, 0.01)
	g.AddString("seed")
	good, _ := g.MarshalBinary()
	f.Add(good)
	f.Add(good[:len(good)-3])
	plain, _ := New(100, 0.01).MarshalBinary()
	f.Add(plain)
	f.Fuzz(func(t *testing.T, data []byte) {
		var d CountingFilter
		if err := d.UnmarshalBinary(data); err != nil {
			checkDecodeError(t, err, d.blocks)
			return
		}
		again, _ := d.MarshalBinary()
		if !bytes.Equal(again, data) {
			t.Fatal("decoded counting filter re-encodes differently")
		}
		d.AddString("x")
		if !d.TestString("x") || d.RemoveString("x") != nil {
			t.Fatal("a decoded counting filter does not work")
		}
	})
}
