package ohbloom

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// TestBulkLoadWithLiveStream is the start-up of the service this library
// exists for: a bulk load (AddParallel over one half of the keys, AddSeq
// over the other, fed by an iterator that reuses its buffer as a database
// cursor does) runs while a stream goroutine adds other keys one by one and
// readers test what has been added. Afterwards the filter must hold exactly
// the bits of a Filter built from all the keys on one goroutine, and every
// key must have been found by every test made after its Add returned.
func TestBulkLoadWithLiveStream(t *testing.T) {
	bulkN, streamN := 200_000, 20_000
	if testing.Short() {
		bulkN, streamN = 70_000, 2_000 // AddParallel still gets two workers
	}
	bulk := make([][]byte, bulkN)
	for i := range bulk {
		bulk[i] = fmt.Appendf(nil, "did:plc:%024d|did:plc:%024d", i, i*7)
	}
	streamKey := func(i int) string { return fmt.Sprintf("stream/%d", i) }
	a := NewAtomic(uint64(bulkN+streamN), 0.01)

	var streamed atomic.Int64 // stream keys [0, streamed) have been added
	var bulkDone atomic.Bool
	var misses atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { a.AddParallel(bulk[:bulkN/2]) })
	wg.Go(func() {
		buf := make([]byte, 0, 64)
		n := a.AddSeq(func(yield func([]byte) bool) {
			for _, k := range bulk[bulkN/2:] {
				buf = append(buf[:0], k...) // the same buffer every time
				if !yield(buf) {
					return
				}
			}
		})
		if n != uint64(bulkN-bulkN/2) {
			t.Errorf("AddSeq added %d keys, want %d", n, bulkN-bulkN/2)
		}
	})
	wg.Go(func() {
		for i := range streamN {
			k := streamKey(i)
			a.AddString(k)
			if !a.TestString(k) {
				misses.Add(1)
			}
			streamed.Store(int64(i + 1))
		}
	})
	var readers sync.WaitGroup
	stop := make(chan struct{})
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			upTo := int(streamed.Load())
			for i := max(0, upTo-100); i < upTo; i++ {
				if !a.TestString(streamKey(i)) {
					misses.Add(1)
				}
			}
			if bulkDone.Load() {
				for _, k := range bulk[:100] {
					if !a.Test(k) {
						misses.Add(1)
					}
				}
			}
		}
	})
	wg.Wait()
	bulkDone.Store(true)
	close(stop)
	readers.Wait()
	if m := misses.Load(); m > 0 {
		t.Fatalf("%d tests missed keys whose Add had returned", m)
	}

	ref := New(uint64(bulkN+streamN), 0.01)
	for _, k := range bulk {
		ref.Add(k)
	}
	for i := range streamN {
		ref.AddString(streamKey(i))
	}
	if !a.ToFilter().Equal(ref) {
		t.Fatal("after the concurrent load the filter differs from the sequential one")
	}
	results := make([]bool, len(bulk))
	a.TestBatch(bulk, results)
	if i := slices.Index(results, false); i >= 0 {
		t.Fatalf("bulk key %d not found", i)
	}
}

func TestAddParallelSmallAndEmpty(t *testing.T) {
	a := NewAtomic(1000, 0.01)
	a.AddParallel(nil)
	a.AddParallelStrings([]string{"x", "y"})
	if n := a.AddSeq(func(func([]byte) bool) {}); n != 0 {
		t.Fatalf("AddSeq of nothing = %d", n)
	}
	if !a.TestString("x") || !a.TestString("y") {
		t.Fatal("AddParallelStrings lost a key")
	}
	ref := New(1000, 0.01)
	ref.AddString("x")
	ref.AddString("y")
	if !a.ToFilter().Equal(ref) {
		t.Fatal("bits differ")
	}
}

// TestHugeFilter builds a 4 GiB filter (2^26 blocks), past where 32-bit
// block arithmetic would wrap, and checks keys land all over it and are
// found, one by one and in batches.
func TestHugeFilter(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocates 4 GiB")
	}
	a, err := NewAtomicWithConfig(Config{Blocks: 1 << 26, K: 7})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200_000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "huge/%d", i)
	}
	a.AddParallel(keys)
	var top uint64
	for _, k := range keys {
		i, _ := a.locate(a.Hash(k))
		top = max(top, i)
	}
	if top < 1<<26-1<<20 {
		t.Errorf("highest block used is %d of %d", top, uint64(1)<<26)
	}
	results := make([]bool, n)
	a.TestBatch(keys, results)
	for i, k := range keys {
		if !results[i] || !a.Test(k) {
			t.Fatalf("key %d not found", i)
		}
	}
}

// TestPrivateBuild runs the private bulk load (AddParallel and AddSeq past
// the filter's block count) with 2, 3 and 5 owners, so that neighbouring
// owners share a block, on a filter that already holds keys, while one
// goroutine adds other keys and another tests keys whose Add returned.
// Afterwards the filter must hold exactly the bits of a Filter built from
// all the keys on one goroutine.
func TestPrivateBuild(t *testing.T) {
	bulkN := 120_000
	if testing.Short() {
		bulkN = 70_000
	}
	bulk := make([]string, bulkN)
	for i := range bulk {
		bulk[i] = fmt.Sprintf("bulk/%d", i)
	}
	// The 20,000-block filter gives each owner more than one bucket of
	// blocks to sort its entries into; the sized one fewer.
	for _, c := range []struct {
		workers int
		config  Config
	}{
		{2, Config{Capacity: uint64(2 * bulkN), FPR: 0.01}},
		{3, Config{Capacity: uint64(2 * bulkN), FPR: 0.01}},
		{5, Config{Capacity: uint64(2 * bulkN), FPR: 0.01}},
		{2, Config{Blocks: 20_000, K: 7}},
		{3, Config{Blocks: 20_000, K: 7}},
	} {
		workers := c.workers
		t.Run(fmt.Sprintf("workers=%d/blocks=%d", workers, c.config.Blocks), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(workers))
			a, err := NewAtomicWithConfig(c.config)
			if err != nil {
				t.Fatal(err)
			}
			ref := a.ToFilter()
			for i := range 1000 { // already there before the load
				a.AddString(fmt.Sprint("old/", i))
				ref.AddString(fmt.Sprint("old/", i))
			}
			if uint64(bulkN/2) < a.Blocks() || bulkN/2/parallelMin < 2 {
				t.Fatalf("%d keys do not take the private path of a %d-block filter", bulkN/2, a.Blocks())
			}
			var added atomic.Int64
			var lost atomic.Int64
			stop := make(chan struct{})
			var streams sync.WaitGroup
			streams.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					a.AddString(fmt.Sprint("stream/", i))
					added.Store(int64(i + 1))
				}
			})
			streams.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					for i := max(0, int(added.Load())-50); i < int(added.Load()); i++ {
						if !a.TestString(fmt.Sprint("stream/", i)) {
							lost.Add(1)
						}
					}
				}
			})
			a.AddParallelStrings(bulk[:bulkN/2])
			n := a.AddSeq(func(yield func([]byte) bool) {
				buf := make([]byte, 0, 32)
				for _, k := range bulk[bulkN/2:] {
					buf = append(buf[:0], k...)
					if !yield(buf) {
						return
					}
				}
			})
			close(stop)
			streams.Wait()
			if n != uint64(bulkN-bulkN/2) {
				t.Fatalf("AddSeq added %d keys, want %d", n, bulkN-bulkN/2)
			}
			if l := lost.Load(); l > 0 {
				t.Fatalf("%d streamed keys not found after their Add", l)
			}
			for _, k := range bulk {
				ref.AddString(k)
			}
			for i := range int(added.Load()) {
				ref.AddString(fmt.Sprint("stream/", i))
			}
			if !a.ToFilter().Equal(ref) {
				t.Fatal("after the private build the filter differs from the sequential one")
			}
		})
	}
}

// TestBuildOwnersCoverBlocks: the block of every hash lies in the part of
// the owner ownerOf names, at the edges of the parts and at random, for
// several block counts and owner counts.
func TestBuildOwnersCoverBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, nblocks := range []uint64{1, 2, 3, 7, 1000, 1<<32 - 1} {
		for _, workers := range []int{1, 2, 3, 5, 64} {
			hs := []uint64{0, 1, ^uint64(0), ^uint64(0) - 1}
			for w := range workers {
				b, _ := bits.Div64(uint64(w), 0, uint64(workers))
				hs = append(hs, b-1, b, b+1)
			}
			for range 1000 {
				hs = append(hs, r.Uint64())
			}
			for _, h := range hs {
				o := ownerOf(h, workers)
				first, last := partOf(nblocks, workers, o)
				if i, _ := bits.Mul64(h, nblocks); i < first || i > last {
					t.Fatalf("nblocks %d, workers %d: hash %#x (block %d) is owner %d's, whose part is [%d, %d]",
						nblocks, workers, h, i, o, first, last)
				}
			}
		}
	}
}
