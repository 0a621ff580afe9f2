package ohbloom

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestAtomicConcurrent runs writers with disjoint and with overlapping key
// sets and readers against one AtomicFilter. Every writer checks, in its own
// goroutine, each key right after adding it, and the readers check keys that
// writers have published as added. Afterwards the filter must hold exactly
// the bits of a Filter built from the same keys on one goroutine.
func TestAtomicConcurrent(t *testing.T) { forEachAtomicWrite(t, testAtomicConcurrent) }

func testAtomicConcurrent(t *testing.T) {
	writers, perWriter := 8, 20000
	if testing.Short() {
		writers, perWriter = 4, 3000
	}
	n := uint64(writers * perWriter)
	a := NewAtomic(n, 0.01)
	// Writer w adds its own keys "w/i", and every writer adds the shared
	// keys "shared/i" too, racing on the same words.
	key := func(w, i int) string {
		if i%4 == 0 {
			return fmt.Sprintf("shared/%d", i)
		}
		return fmt.Sprintf("%d/%d", w, i)
	}
	// progress[w] is how many keys writer w has added; readers test below it.
	progress := make([]atomic.Int64, writers)
	var failures atomic.Int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				k := key(w, i)
				switch i % 3 {
				case 0:
					a.AddString(k)
				case 1:
					a.Add([]byte(k))
				default:
					a.TestAndAddString(k)
				}
				if !a.TestString(k) {
					failures.Add(1)
				}
				progress[w].Store(int64(i + 1))
			}
		})
	}
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			for round := 0; ; round++ {
				select {
				case <-done:
					return
				default:
				}
				w := (r + round) % writers
				upTo := int(progress[w].Load())
				for i := max(0, upTo-200); i < upTo; i++ {
					if !a.TestString(key(w, i)) {
						failures.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	if f := failures.Load(); f > 0 {
		t.Fatalf("%d keys were not found after their Add returned", f)
	}
	ref := New(n, 0.01)
	for w := range writers {
		for i := range perWriter {
			ref.AddString(key(w, i))
		}
	}
	if !a.ToPlain().Equal(ref) {
		t.Fatal("concurrent AtomicFilter differs from the sequential Filter")
	}
}

// TestAtomicTestAndAddRace: goroutines racing to add the same new keys; for
// every key at least one of them must be told it was new, unless the key was
// a false positive, its bits all set by other keys (checked against a filter
// of all the other keys, which holds every bit they could have set).
func TestAtomicTestAndAddRace(t *testing.T) { forEachAtomicWrite(t, testAtomicTestAndAddRace) }

func testAtomicTestAndAddRace(t *testing.T) {
	const keys = 2000
	racers := 4
	a := NewAtomic(keys, 0.01)
	newCount := make([]atomic.Int32, keys)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range racers {
		wg.Go(func() {
			<-start
			for i := range keys {
				if !a.TestAndAddString(fmt.Sprint("race/", i)) {
					newCount[i].Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range keys {
		if newCount[i].Load() > 0 {
			continue
		}
		others := New(keys, 0.01)
		for j := range keys {
			if j != i {
				others.AddString(fmt.Sprint("race/", j))
			}
		}
		if !others.TestString(fmt.Sprint("race/", i)) {
			t.Fatalf("key %d: no goroutine was told it was new", i)
		}
	}
}

// TestAtomicAddMatchesAdd holds AtomicFilter's add, vector and generated,
// to Filter's bit for bit, for every k: on an empty block, on a random one
// (ORed, not overwritten), and on the key's own bits less one; and their
// answers (present) to Test's.
func TestAtomicAddMatchesAdd(t *testing.T) { forEachAtomicWrite(t, testAtomicAddMatchesAdd) }

func testAtomicAddMatchesAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for k := minK; k <= maxK; k++ {
		a, err := NewAtomicWithConfig(Config{Blocks: 3, K: k})
		if err != nil {
			t.Fatal(err)
		}
		for range 3000 {
			x := r.Uint32()
			var want block
			a.add(&want, x)
			for _, start := range []block{{}, randomBlock(r), oneLess(want, r)} {
				got, ref := start, start
				wasPresent := a.test(&start, x)
				a.add(&ref, x)
				a.atomicAddBits(&got, x)
				if got != ref {
					t.Fatalf("k=%d x=%d: atomic add on %x gives %x, want %x", k, x, start, got, ref)
				}
				got = start
				if present := a.atomicAdd(&got, x); present != wasPresent || got != ref {
					t.Fatalf("k=%d x=%d: atomicAdd%d on %x: %x present=%v, want %x %v", k, x, k, start, got, present, ref, wasPresent)
				}
				if hasVector {
					v := a.core
					v.setVec(makeVecProbe(a.parts[:k]))
					got = start
					if present := probeAtomicAdd(&v, &got, x); present != wasPresent || got != ref {
						t.Fatalf("k=%d x=%d: probeAtomicAdd on %x: %x present=%v, want %x %v", k, x, start, got, present, ref, wasPresent)
					}
				}
			}
		}
	}
}

func randomBlock(r *rand.Rand) (b block) {
	for w := range b {
		b[w] = r.Uint64() & r.Uint64()
	}
	return b
}

// oneLess returns b with one of its set bits cleared.
func oneLess(b block, r *rand.Rand) block {
	w := r.IntN(blockWords)
	for b[w] == 0 {
		w = (w + 1) % blockWords
	}
	b[w] &= b[w] - 1
	return b
}

// TestAtomicAddAllocations: the hot paths of AtomicFilter allocate nothing.
func TestAtomicAddAllocations(t *testing.T) {
	a := NewAtomic(1000, 0.01)
	key := []byte("key")
	for name, op := range map[string]func(){
		"Add":        func() { a.Add(key) },
		"AddString":  func() { a.AddString("key") },
		"Test":       func() { a.Test(key) },
		"TestAndAdd": func() { a.TestAndAdd(key) },
	} {
		if n := testing.AllocsPerRun(100, op); n != 0 {
			t.Errorf("%s allocates %v times per call", name, n)
		}
	}
}
