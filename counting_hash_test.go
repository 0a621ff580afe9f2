package ohbloom

import (
	"errors"
	"strconv"
	"testing"
)

// The hash-level calls change the counters exactly as the key-level calls
// do, so that a key logged as its hash replays to the same filter.
func TestCountingHashCallsMatchKeyCalls(t *testing.T) {
	byKey := NewAtomicCounting(1000, 0.01)
	byHash := NewAtomicCounting(1000, 0.01)
	plainKey := NewCounting(1000, 0.01)
	plainHash := NewCounting(1000, 0.01)
	for i := range 500 {
		k := []byte(strconv.Itoa(i % 300))
		byKey.Add(k)
		byHash.AddHash(Hash(byHash.Seed(), k))
		plainKey.Add(k)
		plainHash.AddHash(Hash(plainHash.Seed(), k))
		if i%3 == 0 {
			k := []byte(strconv.Itoa(i / 2))
			e1, e2 := byKey.Remove(k), byHash.RemoveHash(Hash(byHash.Seed(), k))
			if (e1 == nil) != (e2 == nil) {
				t.Fatalf("Remove %v, RemoveHash %v", e1, e2)
			}
			plainKey.Remove(k)
			plainHash.RemoveHash(Hash(plainHash.Seed(), k))
		}
	}
	if !byKey.Equal(byHash) || !plainKey.Equal(plainHash) {
		t.Fatal("hash-level calls left other counters than key-level calls")
	}
	k := []byte("7")
	if got, want := byHash.CountHash(Hash(byHash.Seed(), k)), byKey.Count(k); got != want {
		t.Fatalf("CountHash %d, Count %d", got, want)
	}
	if byHash.Seed() != DefaultSeed {
		t.Fatalf("Seed %d", byHash.Seed())
	}
	absent := []byte("never added")
	if byHash.Test(absent) {
		t.Fatal("a false positive where the test expects none")
	}
	if err := byHash.RemoveHash(Hash(byHash.Seed(), absent)); !errors.Is(err, ErrNotPresent) {
		t.Fatalf("RemoveHash of an absent key: %v", err)
	}
}
