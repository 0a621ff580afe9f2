package ohbloom

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

// batchKeys returns keys of every shape, the empty key, and duplicates,
// in a shuffled order, as bytes and as strings.
func batchKeys(n int) ([][]byte, []string) {
	var keys [][]byte
	for _, shape := range keyShapes {
		for i := range uint64(n) {
			keys = append(keys, shape.key(nil, i))
		}
	}
	keys = append(keys, nil, []byte{}, []byte(""))
	keys = append(keys, keys[:n/2]...) // duplicates, some in the same batch
	r := rand.New(rand.NewPCG(5, 5))
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	strs := make([]string, len(keys))
	for i, k := range keys {
		strs[i] = string(k)
	}
	return keys, strs
}

// TestBatchMatchesSingle: batched adds set exactly the bits of single adds,
// and batched tests answer exactly as single tests, for both types, for
// every key shape, for lengths around the batch size.
func TestBatchMatchesSingle(t *testing.T) {
	keys, strs := batchKeys(300)
	half := len(keys) / 2
	for _, n := range []int{0, 1, batchSize - 1, batchSize, batchSize + 1, half} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ref := New(uint64(len(keys)), 0.01)
			for _, k := range keys[:n] {
				ref.Add(k)
			}
			f, fs := New(uint64(len(keys)), 0.01), New(uint64(len(keys)), 0.01)
			a, as := NewAtomic(uint64(len(keys)), 0.01), NewAtomic(uint64(len(keys)), 0.01)
			f.AddBatch(keys[:n])
			fs.AddBatchStrings(strs[:n])
			a.AddBatch(keys[:n])
			as.AddBatchStrings(strs[:n])
			hf, ha := New(uint64(len(keys)), 0.01), NewAtomic(uint64(len(keys)), 0.01)
			hs := make([]uint64, n)
			for i, k := range keys[:n] {
				hs[i] = Hash(hf.Seed(), k)
				if hs[i] != HashString(ha.Seed(), string(k)) {
					t.Fatal("Hash and HashString differ")
				}
			}
			hf.AddHashes(hs)
			ha.AddHashes(hs)
			for name, g := range map[string]*Filter{"Filter.AddBatch": f, "Filter.AddBatchStrings": fs,
				"AtomicFilter.AddBatch": a.ToPlain(), "AtomicFilter.AddBatchStrings": as.ToPlain(),
				"Filter.AddHashes": hf, "AtomicFilter.AddHashes": ha.ToPlain()} {
				if !g.Equal(ref) {
					t.Errorf("%s sets other bits than Add", name)
				}
			}

			// Test every key (added or not) both ways.
			want := make([]bool, len(keys))
			for i, k := range keys {
				want[i] = ref.Test(k)
			}
			all := make([]uint64, len(keys))
			for i, k := range keys {
				all[i] = Hash(ref.Seed(), k)
			}
			aref := ref.ToAtomic()
			got := make([]bool, len(keys)+3) // longer than needed is fine
			check := matchesSingle(t, want, got)
			check("Filter.TestBatch", func() { ref.TestBatch(keys, got) })
			check("Filter.TestBatchStrings", func() { ref.TestBatchStrings(strs, got) })
			check("Filter.TestHashes", func() { ref.TestHashes(all, got) })
			check("AtomicFilter.TestBatch", func() { aref.TestBatch(keys, got) })
			check("AtomicFilter.TestBatchStrings", func() { aref.TestBatchStrings(strs, got) })
			check("AtomicFilter.TestHashes", func() { aref.TestHashes(all, got) })
			for i, h := range all {
				if ref.TestHash(h) != want[i] || aref.TestHash(h) != want[i] {
					t.Fatalf("TestHash of key %d disagrees with Test", i)
				}
			}
		})
	}
}

func TestBatchShortResultsPanics(t *testing.T) {
	f := New(10, 0.1)
	defer func() {
		if recover() == nil {
			t.Error("TestBatch with a short results slice did not panic")
		}
	}()
	f.TestBatch(make([][]byte, 5), make([]bool, 4))
}

func TestBatchZeroAllocations(t *testing.T) {
	keys, strs := batchKeys(20)
	results := make([]bool, len(keys))
	hs := make([]uint64, len(keys))
	f, a := New(1000, 0.01), NewAtomic(1000, 0.01)
	ops := map[string]func(){
		"Filter.AddBatch":               func() { f.AddBatch(keys) },
		"Filter.AddBatchStrings":        func() { f.AddBatchStrings(strs) },
		"Filter.TestBatch":              func() { f.TestBatch(keys, results) },
		"Filter.TestBatchStrings":       func() { f.TestBatchStrings(strs, results) },
		"Filter.AddHashes":              func() { f.AddHashes(hs) },
		"Filter.TestHashes":             func() { f.TestHashes(hs, results) },
		"AtomicFilter.AddBatch":         func() { a.AddBatch(keys) },
		"AtomicFilter.AddBatchStrings":  func() { a.AddBatchStrings(strs) },
		"AtomicFilter.TestBatch":        func() { a.TestBatch(keys, results) },
		"AtomicFilter.TestBatchStrings": func() { a.TestBatchStrings(strs, results) },
		"AtomicFilter.AddHashes":        func() { a.AddHashes(hs) },
		"AtomicFilter.TestHashes":       func() { a.TestHashes(hs, results) },
		"Filter.AddHash":                func() { f.AddHash(12345) },
		"AtomicFilter.TestHash":         func() { a.TestHash(12345) },
	}
	for name, op := range ops {
		if n := testing.AllocsPerRun(20, op); n != 0 {
			t.Errorf("%s allocates %v times per call", name, n)
		}
	}
}

// TestBatchEveryK: for every k (the vector probe takes two halves past
// k = 8), batched adds set the bits single adds set, and batched tests
// answer as single tests, on a half-full filter.
func TestBatchEveryK(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for k := minK; k <= maxK; k++ {
		cfg := Config{Blocks: 500, K: k}
		f, _ := NewWithConfig(cfg)
		ref, _ := NewWithConfig(cfg)
		hs := make([]uint64, 3000)
		for i := range hs {
			hs[i] = r.Uint64()
		}
		f.AddHashes(hs[:1500])
		for _, h := range hs[:1500] {
			ref.AddHash(h)
		}
		if !f.Equal(ref) {
			t.Fatalf("k=%d: AddHashes sets other bits than AddHash", k)
		}
		got := make([]bool, len(hs))
		for name, g := range map[string]func(){
			"Filter.TestHashes":       func() { f.TestHashes(hs, got) },
			"AtomicFilter.TestHashes": func() { f.ToAtomic().TestHashes(hs, got) },
		} {
			clear(got)
			g()
			for i, h := range hs {
				if got[i] != ref.TestHash(h) {
					t.Fatalf("k=%d: %s of hash %d: %v, TestHash %v", k, name, i, got[i], !got[i])
				}
			}
		}
	}
}

// TestHashWindowIsXXH3: the batched calls' hash of a window is XXH3 with
// the filter's seed for every key, of every length from 0 to 300 bytes
// (past the assembly hash's 128, whose longer keys go to xxh3 in the
// middle of a window), as bytes and as strings, for several seeds.
func TestHashWindowIsXXH3(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	data := make([]byte, 300)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	var keys [][]byte
	for n := range len(data) + 1 {
		keys = append(keys, data[r.IntN(len(data)-n+1):][:n])
	}
	keys = append(keys, nil)
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	strs := make([]string, len(keys))
	for i, k := range keys {
		strs[i] = string(k)
	}
	for _, seed := range []uint64{0, DefaultSeed, 1 << 63, 0x8000000080000001} {
		f, err := NewWithConfig(Config{Capacity: 1000, FPR: 0.01, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		for _, window := range []int{1, 7, batchSize, len(keys)} {
			hs, hstr := make([]uint64, len(keys)), make([]uint64, len(keys))
			for at := 0; at < len(keys); at += window {
				end := min(len(keys), at+window)
				hashWindow(&f.core, hs[at:end], keys[at:end])
				hashWindow(&f.core, hstr[at:end], strs[at:end])
			}
			for i, k := range keys {
				want := xxh3.HashSeed(k, seed)
				if hs[i] != want || hstr[i] != want {
					t.Fatalf("seed %#x, window %d: key of %d bytes hashed to %#x (bytes) and %#x (string); xxh3 gives %#x",
						seed, window, len(k), hs[i], hstr[i], want)
				}
			}
		}
	}
}

// TestHandOver: handOver copies every word of src, at any length and
// from any offset of dst's memory, returns exactly those words, and leaves
// the memory past them as it was.
func TestHandOver(t *testing.T) {
	src := make([]uint64, 2100)
	for i := range src {
		src[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
	}
	for _, from := range []int{0, 1, 7, 8, 100} {
		for _, n := range []int{0, 1, 7, 8, 9, 1024, 2000} {
			mem := make([]uint64, 2200)
			for i := range mem {
				mem[i] = ^uint64(i)
			}
			got := handOver(mem[from:from:from+n+5], src[3:3+n])
			if len(got) != n || (n > 0 && &got[0] != &mem[from]) {
				t.Fatalf("from %d, n %d: got %d words at another address", from, n, len(got))
			}
			for i := range mem {
				want := ^uint64(i)
				if i >= from && i < from+n {
					want = src[3+i-from]
				}
				if mem[i] != want {
					t.Fatalf("from %d, n %d: word %d is %#x, want %#x", from, n, i, mem[i], want)
				}
			}
		}
	}
}

// matchesSingle returns a check that a batched call writing into got
// answers want[i] for every key, as the single-key Test did.
func matchesSingle(t *testing.T, want, got []bool) func(name string, run func()) {
	return func(name string, run func()) {
		t.Helper()
		clear(got)
		run()
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: key %d: %v, single Test %v", name, i, got[i], want[i])
			}
		}
	}
}
