package ohbloom

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ohbloom/ohbloom/internal/race"
	"github.com/ohbloom/ohbloom/internal/sysmem"
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
	if !a.ToPlain().Equal(ref) {
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
	a.AddParallel([][]byte{[]byte("x"), []byte("y")})
	if n := a.AddSeq(func(func([]byte) bool) {}); n != 0 {
		t.Fatalf("AddSeq of nothing = %d", n)
	}
	if !a.TestString("x") || !a.TestString("y") {
		t.Fatal("AddParallel lost a key")
	}
	ref := New(1000, 0.01)
	ref.AddString("x")
	ref.AddString("y")
	if !a.ToPlain().Equal(ref) {
		t.Fatal("bits differ")
	}
}

// TestHugeFilter builds a 4 GiB filter (2^26 blocks), past where 32-bit
// block arithmetic would wrap, and checks keys land all over it and are
// found, one by one and in batches.
func TestHugeFilter(t *testing.T) {
	if testing.Short() || race.Enabled {
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
		i, _ := a.locate(Hash(a.Seed(), k))
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

// TestPrivateBuild runs the private bulk loads (AddParallel and AddSeq past
// the filter's block count) in whole copies and in block ranges, with 2,
// 3 and 5 workers, so that neighbouring owners share a block, on a filter
// that already holds keys, while one goroutine adds other keys and another
// tests keys whose Add returned. AddSeq's keys include an empty one and
// long ones. Afterwards the filter must hold
// exactly the bits of a Filter built from all the keys on one goroutine.
func TestPrivateBuild(t *testing.T) { forEachAtomicWrite(t, testPrivateBuild) }

func testPrivateBuild(t *testing.T) {
	bulkN := 120_000
	if testing.Short() {
		bulkN = 70_000
	}
	bulk := make([]string, bulkN)
	for i := range bulk {
		bulk[i] = fmt.Sprintf("bulk/%d", i)
	}
	bulk[bulkN-3] = ""
	bulk[bulkN-2] = strings.Repeat("long/", 20_000)
	bulk[bulkN/2+1] = strings.Repeat("also long/", 500)
	for _, c := range []struct {
		workers int
		config  Config
		load    loadPlan
	}{
		{2, Config{Capacity: uint64(2 * bulkN), FPR: 0.01}, planCopies},
		{3, Config{Capacity: uint64(2 * bulkN), FPR: 0.01}, planCopies},
		{2, Config{Blocks: 20_000, K: 7}, planCopies},
		{2, Config{Capacity: uint64(2 * bulkN), FPR: 0.01}, planRanges},
		{3, Config{Capacity: uint64(2 * bulkN), FPR: 0.01}, planRanges},
		{5, Config{Capacity: uint64(2 * bulkN), FPR: 0.01}, planRanges},
		{2, Config{Blocks: 20_000, K: 7}, planRanges},
		{3, Config{Blocks: 20_000, K: 7}, planRanges},
		{2, Config{Blocks: 20_000, K: 7}, planShared},
	} {
		workers := c.workers
		t.Run(fmt.Sprintf("plan=%d/workers=%d/blocks=%d", c.load, workers, c.config.Blocks), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(workers))
			a, err := NewAtomicWithConfig(c.config)
			if err != nil {
				t.Fatal(err)
			}
			load := ParallelConfig{MaxMemory: map[loadPlan]uint64{
				planCopies: uint64(workers) * a.SizeBytes(),
				planRanges: 2*a.SizeBytes() - 1, // below two copies, above one
				planShared: a.SizeBytes() - 1,
			}[c.load]}
			if p := load.plan(&a.core, min(workers, bulkN/2/parallelMin), uint64(bulkN/2)); p != c.load {
				t.Fatalf("the load takes plan %d, want %d", p, c.load)
			}
			ref := a.ToPlain()
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
			views := make([][]byte, bulkN/2)
			for i := range views {
				views[i] = []byte(bulk[i])
			}
			a.AddParallelWith(views, load)
			n := a.AddSeqWith(func(yield func([]byte) bool) {
				buf := make([]byte, 0, 32)
				for _, k := range bulk[bulkN/2:] {
					buf = append(buf[:0], k...)
					if !yield(buf) {
						return
					}
				}
			}, load)
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
			if !a.ToPlain().Equal(ref) {
				t.Fatal("after the private build the filter differs from the sequential one")
			}
		})
	}
}

// TestLoadPlan: whole copies while they fit the budget and the workers
// are few, block ranges while one filter fits, atomic adds otherwise and
// for loads smaller than the block count or on one core.
func TestLoadPlan(t *testing.T) {
	a := NewAtomic(1_000_000, 0.01)
	size, keys := a.SizeBytes(), a.Blocks()
	for _, c := range []struct {
		memory  uint64
		workers int
		keys    uint64
		want    loadPlan
	}{
		{2 * size, 2, keys, planCopies},
		{4 * size, 4, keys, planCopies},
		{2*size - 1, 2, keys, planRanges},
		{1 << 50, maxCopies + 1, keys, planRanges},
		{size, 2, keys, planRanges},
		{size - 1, 2, keys, planShared},
		{1 << 50, 2, keys - 1, planShared},
		{1 << 50, 1, keys, planShared},
	} {
		if got := (ParallelConfig{MaxMemory: c.memory}).plan(&a.core, c.workers, c.keys); got != c.want {
			t.Errorf("%d bytes, %d workers, %d keys: plan %d, want %d", c.memory, c.workers, c.keys, got, c.want)
		}
	}
	if m := defaultLoadMemory(); m == 0 || m > sysmem.RAMPlusSwap() {
		t.Errorf("default load memory %d of %d", m, sysmem.RAMPlusSwap())
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

// TestAddSeqIteratorPanics: when the iterator panics, AddSeq passes the
// panic on after every key yielded before it is in the filter, whichever
// way it builds.
func TestAddSeqIteratorPanics(t *testing.T) {
	const n = 50_000
	for _, load := range []loadPlan{planCopies, planRanges, planShared} {
		t.Run(fmt.Sprint("plan=", load), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
			a, err := NewAtomicWithConfig(Config{Blocks: 10_000, K: 7})
			if err != nil {
				t.Fatal(err)
			}
			c := ParallelConfig{MaxMemory: map[loadPlan]uint64{planCopies: 1 << 40, planRanges: a.SizeBytes(), planShared: 1}[load]}
			if p := c.plan(&a.core, 2, a.Blocks()); p != load {
				t.Fatalf("plan %d, want %d", p, load)
			}
			func() {
				defer func() {
					if r := recover(); r != "cursor broke" {
						t.Errorf("recovered %v, want the iterator's panic", r)
					}
				}()
				a.AddSeqWith(func(yield func([]byte) bool) {
					for i := range n {
						if !yield(fmt.Appendf(nil, "key/%d", i)) {
							return
						}
					}
					panic("cursor broke")
				}, c)
			}()
			for i := range n {
				if !a.Test(fmt.Appendf(nil, "key/%d", i)) {
					t.Fatalf("key %d, yielded before the panic, is missing", i)
				}
			}
		})
	}
}

// TestOrCopies holds the OR pass of a whole-copy build to a plain OR, for
// one to four copies, on a range that starts inside the copies, with
// blocks that hold their bits already, blocks that lack some and empty
// ones.
func TestOrCopies(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for ncopies := 1; ncopies <= 4; ncopies++ {
		const nblocks, lo, n = 40, 7, 25
		copies := make([][]block, ncopies)
		for c := range copies {
			copies[c] = make([]block, nblocks)
			for i := range copies[c] {
				if r.IntN(4) > 0 {
					copies[c][i] = randomBlock(r)
				}
			}
		}
		dst := make([]block, n)
		want := make([]block, n)
		for i := range dst {
			if r.IntN(3) == 0 {
				dst[i] = randomBlock(r)
			}
			want[i] = dst[i]
			for _, c := range copies {
				for w := range blockWords {
					want[i][w] |= c[lo+i][w]
				}
			}
			if r.IntN(5) == 0 { // a block that holds its bits already
				dst[i] = want[i]
			}
		}
		orCopies(dst, copies, lo)
		for i := range dst {
			if dst[i] != want[i] {
				t.Fatalf("%d copies: block %d is %x, want %x", ncopies, i, dst[i], want[i])
			}
		}
	}
}

// TestOrCopiesBesideAdds runs the OR pass while another goroutine ORs
// bits into the same words atomically, as AtomicFilter.Add does during a
// load: at the end every bit of both must be there. The blocks are few, so
// that the other goroutine often writes a word between the pass's check
// of it and its OR.
func TestOrCopiesBesideAdds(t *testing.T) {
	const n, rounds = 64, 300
	r := rand.New(rand.NewPCG(15, 16))
	copies := [][]block{make([]block, n), make([]block, n)}
	for _, c := range copies {
		for i := range c {
			c[i] = randomBlock(r)
		}
	}
	for round := range rounds {
		dst := make([]block, n)
		added := make([]block, n) // what the other goroutine ORed in
		started, done, stopped := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			r := rand.New(rand.NewPCG(17, uint64(round)))
			for j := 0; ; j++ {
				if j == 1 {
					close(started)
				}
				select {
				case <-done:
					return
				default:
				}
				i, w, bit := r.IntN(n), r.IntN(blockWords), uint64(1)<<r.IntN(64)
				atomic.OrUint64(&dst[i][w], bit)
				added[i][w] |= bit
			}
		}()
		<-started
		orCopies(dst, copies, 0)
		close(done)
		<-stopped
		for i := range dst {
			for w := range blockWords {
				want := copies[0][i][w] | copies[1][i][w] | added[i][w]
				if got := atomic.LoadUint64(&dst[i][w]); got != want {
					t.Fatalf("round %d, block %d word %d: %#x, want %#x", round, i, w, got, want)
				}
			}
		}
	}
}
