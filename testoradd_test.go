package ohbloom

import (
	"fmt"
	"sync"
	"testing"
)

// The names mean what they mean in bits-and-blooms/bloom/v3: TestAndAdd
// adds whatever the test says, TestOrAdd only when it says absent; both
// return the test's answer. A Bloom filter cannot tell them apart; a
// counting filter can.
func TestTestOrAddMeansBitsAndBlooms(t *testing.T) {
	// Filter and AtomicFilter: the two calls are one, with every spelling.
	f, g := New(1000, 0.01), NewAtomic(1000, 0.01)
	ref := New(1000, 0.01)
	for i := range 300 {
		k := fmt.Sprint("key-", i)
		ref.AddString(k)
		calls := []func() bool{
			func() bool { return f.TestOrAdd([]byte(k)) },
			func() bool { return f.TestOrAddString(k) },
			func() bool { return f.TestOrAddHash(f.Hash([]byte(k))) },
			func() bool { return g.TestOrAdd([]byte(k)) },
			func() bool { return g.TestOrAddString(k) },
			func() bool { return g.TestOrAddHash(g.Hash([]byte(k))) },
		}
		for j, call := range calls {
			// The first call of each filter adds the key (a false
			// positive is possible, but at 1% in a filter this empty
			// it would be a rare accident with these fixed keys).
			if got, want := call(), j%3 != 0; got != want {
				t.Fatalf("key %d, call %d: %v, want %v", i, j, got, want)
			}
		}
	}
	if !f.Equal(ref) || !g.ToPlain().Equal(ref) {
		t.Fatal("TestOrAdd set other bits than Add")
	}

	for _, name := range []string{"CountingFilter", "AtomicCountingFilter"} {
		type counting interface {
			TestAndAdd([]byte) bool
			TestAndAddString(string) bool
			TestAndAddHash(uint64) bool
			TestOrAdd([]byte) bool
			TestOrAddString(string) bool
			TestOrAddHash(uint64) bool
			Remove([]byte) error
			Test([]byte) bool
			Count([]byte) uint8
			Hash([]byte) uint64
		}
		var c counting = NewCounting(1000, 0.001)
		if name == "AtomicCountingFilter" {
			c = NewAtomicCounting(1000, 0.001)
		}
		spellings := []struct {
			and, or func(string) bool
		}{
			{func(k string) bool { return c.TestAndAdd([]byte(k)) }, func(k string) bool { return c.TestOrAdd([]byte(k)) }},
			{c.TestAndAddString, c.TestOrAddString},
			{func(k string) bool { return c.TestAndAddHash(c.Hash([]byte(k))) },
				func(k string) bool { return c.TestOrAddHash(c.Hash([]byte(k))) }},
		}
		for s, sp := range spellings {
			// TestAndAdd counts a key in every time: three adds, three
			// removes.
			k := fmt.Sprintf("and-%d", s)
			if sp.and(k) || !sp.and(k) || !sp.and(k) {
				t.Fatalf("%s, spelling %d: TestAndAdd answers wrong", name, s)
			}
			if n := c.Count([]byte(k)); n != 3 {
				t.Fatalf("%s, spelling %d: three TestAndAdds count %d", name, s, n)
			}
			// TestOrAdd counts it in once: one Remove takes it out.
			k = fmt.Sprintf("or-%d", s)
			if sp.or(k) || !sp.or(k) || !sp.or(k) {
				t.Fatalf("%s, spelling %d: TestOrAdd answers wrong", name, s)
			}
			if n := c.Count([]byte(k)); n != 1 {
				t.Fatalf("%s, spelling %d: three TestOrAdds count %d", name, s, n)
			}
			if err := c.Remove([]byte(k)); err != nil || c.Test([]byte(k)) {
				t.Fatalf("%s, spelling %d: one Remove after TestOrAdds: %v, still present: %v", name, s, err, c.Test([]byte(k)))
			}
		}
	}
}

// A counter stuck at 15 stays there under TestAndAdd, and counts as
// present.
func TestCountingTestAndAddSaturates(t *testing.T) {
	for _, c := range []interface {
		TestAndAdd([]byte) bool
		Count([]byte) uint8
	}{NewCounting(100, 0.01), NewAtomicCounting(100, 0.01)} {
		for i := range 20 {
			if present := c.TestAndAdd([]byte("hot")); present != (i > 0) {
				t.Fatalf("%T: add %d of a key reports present %v", c, i, present)
			}
		}
		if n := c.Count([]byte("hot")); n != maxCount {
			t.Fatalf("%T: 20 adds count %d, want %d", c, n, maxCount)
		}
	}
}

// Goroutines that add the same new keys at once: each key is reported new
// by at least one of them. TestAndAdd counts every add in; TestOrAdd
// counts the key in at least once.
func TestAtomicCountingTestOrAddConcurrent(t *testing.T) {
	const keys, workers = 2000, 4
	and, or := NewAtomicCounting(keys*2, 0.001), NewAtomicCounting(keys*2, 0.001)
	newAnd, newOr := make([][]bool, workers), make([][]bool, workers)
	var wg sync.WaitGroup
	for w := range workers {
		newAnd[w], newOr[w] = make([]bool, keys), make([]bool, keys)
		wg.Go(func() {
			for i := range keys {
				k := fmt.Sprint(i)
				newAnd[w][i] = !and.TestAndAddString(k)
				newOr[w][i] = !or.TestOrAddString(k)
			}
		})
	}
	wg.Wait()
	for i := range keys {
		reportedAnd, reportedOr := false, false
		for w := range workers {
			reportedAnd = reportedAnd || newAnd[w][i]
			reportedOr = reportedOr || newOr[w][i]
		}
		k := []byte(fmt.Sprint(i))
		if !reportedAnd || !reportedOr {
			t.Fatalf("key %d reported new by no goroutine (TestAndAdd %v, TestOrAdd %v)", i, reportedAnd, reportedOr)
		}
		if n := and.Count(k); n < workers {
			t.Fatalf("key %d: %d TestAndAdds count %d", i, workers, n)
		}
		if n := or.Count(k); n < 1 {
			t.Fatalf("key %d: TestOrAdds count %d", i, n)
		}
	}
}
