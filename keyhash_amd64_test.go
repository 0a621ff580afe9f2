//go:build !purego

package ohbloom

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// seededCore returns a core with seed and nothing else that keyHash
// reads.
func seededCore(seed uint64) *core {
	l := new(core)
	l.setGeometry(seed, 1, minK)
	return l
}

// TestKeyHashMatchesXXH3 holds the vector code's hash to zeebo/xxh3's
// HashSeed at every length it takes, each of its branches' edges, and
// seeds whose halves carry and borrow.
func TestKeyHashMatchesXXH3(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 200)
	seeds := []uint64{0, 1, DefaultSeed, math.MaxUint64, 0xffffffff, 1 << 32, 0x8000000080000000}
	for range 20 {
		seeds = append(seeds, r.Uint64())
	}
	for n := 0; n <= 160; n++ {
		for _, seed := range seeds {
			for range 8 {
				for i := range buf {
					buf[i] = byte(r.Uint32())
				}
				key := bytes.Clone(buf[:n])
				got, ok := keyHash(seededCore(seed), unsafe.SliceData(key), len(key))
				if n > 128 {
					if ok {
						t.Fatalf("keyHash took a key of %d bytes; it hashes up to 128", n)
					}
					continue
				}
				if want := xxh3.HashSeed(key, seed); !ok || got != want {
					t.Fatalf("keyHash(%x, seed %#x) = %#x, %v; xxh3 gives %#x", key, seed, got, ok, want)
				}
			}
		}
	}
}

// FuzzKeyHash compares the vector code's hash with xxh3's on any key.
func FuzzKeyHash(f *testing.F) {
	for _, n := range []int{0, 1, 3, 4, 8, 9, 16, 17, 32, 33, 64, 65, 96, 97, 128, 129} {
		f.Add(bytes.Repeat([]byte{0xa5}, n), uint64(n))
	}
	f.Fuzz(func(t *testing.T, key []byte, seed uint64) {
		got, ok := keyHash(seededCore(seed), unsafe.SliceData(key), len(key))
		if ok != (len(key) <= 128) {
			t.Fatalf("keyHash of %d bytes: ok %v", len(key), ok)
		}
		if want := xxh3.HashSeed(key, seed); ok && got != want {
			t.Fatalf("keyHash = %#x, xxh3 gives %#x", got, want)
		}
	})
}

// TestSingleKeyCallsAgreeWithBatches checks Add, AddString, Test and
// TestString, and AtomicFilter's Add and AddString, whose vector code
// hashes the key itself, against the batched calls, which hash in Go:
// keys of every length the vector code takes and beyond, with the
// default seed and another, with the vector probe and without it (where
// the assembly calls back into Go), for k ≤ 8 and k > 8 (vec8 and WIDE),
// and with each way AtomicFilter writes.
func TestSingleKeyCallsAgreeWithBatches(t *testing.T) {
	if !hasVector {
		t.Skip("no vector probe on this CPU")
	}
	forEachAtomicWrite(t, testSingleKeyCallsAgreeWithBatches)
}

func testSingleKeyCallsAgreeWithBatches(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var keys [][]byte
	for n := 0; n <= 200; n++ {
		for range 20 {
			k := make([]byte, n)
			for i := range k {
				k[i] = byte(r.Uint32())
			}
			keys = append(keys, k)
		}
	}
	for _, vector := range []bool{true, false} {
		// k: one half of the lanes, and two; the seed: the default and
		// one whose halves carry and borrow (the batches hash in Go,
		// the single-key calls with the core's hashSecret).
		for _, c := range []struct {
			k    int
			seed uint64
		}{{6, DefaultSeed}, {12, DefaultSeed}, {6, 0x8000000080000001}} {
			k := c.k
			t.Run(fmt.Sprintf("vector=%v/k=%d/seed=%#x", vector, k, c.seed), func(t *testing.T) {
				newFilter := func() *Filter {
					f, err := NewWithConfig(Config{Blocks: 1024, K: k, Seed: c.seed})
					if err != nil {
						t.Fatal(err)
					}
					if !vector {
						f.setVec(nil)
					}
					return f
				}
				batched, single := newFilter(), newFilter()
				for i, key := range keys {
					if i%2 == 0 {
						single.Add(key)
					} else {
						single.AddString(string(key))
					}
				}
				batched.AddBatch(keys)
				if !slices.Equal(batched.blocks, single.blocks) {
					t.Fatal("Add and AddString set other bits than AddBatch")
				}
				atomicFilter := &AtomicFilter{newFilter().core}
				for i, key := range keys {
					if i%2 == 0 {
						atomicFilter.Add(key)
					} else {
						atomicFilter.AddString(string(key))
					}
				}
				if !slices.Equal(batched.blocks, atomicFilter.blocks) {
					t.Fatal("AtomicFilter.Add and AddString set other bits than AddBatch")
				}
				other := rand.New(rand.NewPCG(5, 6))
				results := make([]bool, 1)
				for i := range 20000 {
					key := keys[i%len(keys)]
					if i >= len(keys) { // keys never added, of the same lengths
						key = bytes.Clone(key)
						for j := range key {
							key[j] = byte(other.Uint32())
						}
					}
					batched.TestBatch([][]byte{key}, results)
					if got := single.Test(key); got != results[0] {
						t.Fatalf("Test(%x) = %v, TestBatch says %v", key, got, results[0])
					}
					if got := single.TestString(string(key)); got != results[0] {
						t.Fatalf("TestString(%x) = %v, TestBatch says %v", key, got, results[0])
					}
				}
			})
		}
	}
}

// TestSingleKeyFallbackGrowsTheStack calls the single-key calls' way back
// into Go (no vector probe) from goroutines whose stacks must grow inside
// it, with keys on those stacks: the assembly's frame must let the
// runtime move it.
func TestSingleKeyFallbackGrowsTheStack(t *testing.T) {
	f, a := New(1000, 0.01), NewAtomic(1000, 0.01)
	f.setVec(nil)
	a.setVec(nil)
	var recurse func(depth int) bool
	recurse = func(depth int) bool {
		var key [20]byte
		key[0] = byte(depth)
		if depth == 0 {
			f.Add(key[:])
			a.Add(key[:])
			return f.Test(key[:]) && a.Test(key[:])
		}
		return recurse(depth-1) && key[0] == byte(depth)
	}
	for depth := range 200 {
		done := make(chan bool)
		go func() { done <- recurse(depth) }()
		if !<-done {
			t.Fatalf("depth %d: a key added was not found", depth)
		}
	}
}
