package bench

import (
	"flag"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/classic"
	"github.com/zeebo/xxh3"
)

var (
	buildSizes  = flag.String("build.n", "50000000", "comma-separated key counts of BenchmarkBuild")
	buildRounds = flag.Int("build.rounds", 3, "interleaved rounds of BenchmarkBuild")
	buildPeers  = flag.Int("build.peers", 50_000_000, "largest n at which BenchmarkBuild runs the slow classic filters")
)

// kHashFilter is the textbook Bloom filter: m bits and k independent
// hashes, here XXH3 with seeds 0..k-1, each reduced to a bit by fastrange.
type kHashFilter struct {
	bits []uint64
	m, k uint64
}

func newKHash(n int, p float64) *kHashFilter {
	m := uint64(math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2)))
	k := uint64(math.Round(math.Ln2 * float64(m) / float64(n)))
	return &kHashFilter{bits: make([]uint64, (m+63)/64), m: m, k: k}
}

func (f *kHashFilter) Add(key []byte) {
	for i := range f.k {
		b, _ := bits.Mul64(xxh3.HashSeed(key, i), f.m)
		f.bits[b/64] |= 1 << (b % 64)
	}
}

func (f *kHashFilter) Test(key []byte) bool {
	for i := range f.k {
		b, _ := bits.Mul64(xxh3.HashSeed(key, i), f.m)
		if f.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// builder is one way to build a filter of n keys. build returns the test
// that verifies it.
type builder struct {
	name  string
	peer  bool // a slow classic filter, run only up to -build.peers
	build func(n int, keys Keys, views [][]byte, live *liveStreams) func([]byte) bool
}

var builders = []builder{
	{"khash-xxh3", true, func(n int, keys Keys, _ [][]byte, _ *liveStreams) func([]byte) bool {
		f := newKHash(n, 0.01)
		for i := range n {
			f.Add(keys.At(i))
		}
		return f.Test
	}},
	{"bitsandblooms", true, func(n int, keys Keys, _ [][]byte, _ *liveStreams) func([]byte) bool {
		f := bloom.NewWithEstimates(uint(n), 0.01)
		for i := range n {
			f.Add(keys.At(i))
		}
		return f.Test
	}},
	{"classic-guava", true, func(n int, keys Keys, _ [][]byte, _ *liveStreams) func([]byte) bool {
		f, err := classic.NewWithEstimates(classic.Guava, uint64(n), 0.01)
		if err != nil {
			panic(err)
		}
		for i := range n {
			f.Add(keys.At(i))
		}
		return f.Test
	}},
	{"filter-add", false, func(n int, keys Keys, _ [][]byte, _ *liveStreams) func([]byte) bool {
		f := ohbloom.New(uint64(n), 0.01)
		for i := range n {
			f.Add(keys.At(i))
		}
		return f.Test
	}},
	{"filter-addbatch", false, func(n int, _ Keys, views [][]byte, _ *liveStreams) func([]byte) bool {
		f := ohbloom.New(uint64(n), 0.01)
		f.AddBatch(views)
		return f.Test
	}},
	{"atomic-addbatch", false, func(n int, _ Keys, views [][]byte, _ *liveStreams) func([]byte) bool {
		f := ohbloom.NewAtomic(uint64(n), 0.01)
		f.AddBatch(views)
		return f.Test
	}},
	{"two-addbatch-ceiling", false, func(n int, _ Keys, views [][]byte, _ *liveStreams) func([]byte) bool {
		// Two independent single-core builds of half the keys each, at
		// once, into filters of their own: no sharing, no coordination.
		// It is what two cores give a build that splits its keys (each
		// half-filter is sized for all n, as the shared filter is, so its
		// misses are as costly). AddParallel's workers do the same into
		// private copies, plus the OR pass into the shared filter.
		f1, f2 := ohbloom.New(uint64(n), 0.01), ohbloom.New(uint64(n), 0.01)
		var wg sync.WaitGroup
		wg.Go(func() { f1.AddBatch(views[:n/2]) })
		wg.Go(func() { f2.AddBatch(views[n/2:]) })
		wg.Wait()
		return func(k []byte) bool { return f1.Test(k) || f2.Test(k) }
	}},
	{"atomic-addparallel+streams", false, func(n int, _ Keys, views [][]byte, live *liveStreams) func([]byte) bool {
		f := ohbloom.NewAtomic(uint64(n), 0.01)
		live.start(f)
		f.AddParallel(views)
		live.stop()
		return f.Test
	}},
	{"atomic-addparallel-ranges+streams", false, func(n int, _ Keys, views [][]byte, live *liveStreams) func([]byte) bool {
		// A budget of one filter: the block-range build.
		f := ohbloom.NewAtomic(uint64(n), 0.01)
		live.start(f)
		f.AddParallelWith(views, ohbloom.ParallelConfig{MaxMemory: f.SizeBytes()})
		live.stop()
		return f.Test
	}},
	{"atomic-addseq+streams", false, func(n int, keys Keys, _ [][]byte, live *liveStreams) func([]byte) bool {
		f := ohbloom.NewAtomic(uint64(n), 0.01)
		live.start(f)
		f.AddSeq(keySeq(keys, n))
		live.stop()
		return f.Test
	}},
	{"atomic-addseq-ranges+streams", false, func(n int, keys Keys, _ [][]byte, live *liveStreams) func([]byte) bool {
		f := ohbloom.NewAtomic(uint64(n), 0.01)
		live.start(f)
		f.AddSeqWith(keySeq(keys, n), ohbloom.ParallelConfig{MaxMemory: f.SizeBytes()})
		live.stop()
		return f.Test
	}},
}

// keySeq yields the first n keys, as a database cursor would.
func keySeq(keys Keys, n int) func(yield func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for i := range n {
			if !yield(keys.At(i)) {
				return
			}
		}
	}
}

// liveStreams are the traffic a service takes during its bulk load: one
// goroutine adds new keys at streamRate a second, another tests the keys
// already streamed at the same rate. Each catches up on every wake-up, so
// a busy machine delays it but does not thin it.
type liveStreams struct {
	keys   Keys
	f      *ohbloom.AtomicFilter
	added  atomic.Int64
	lost   atomic.Int64
	tested atomic.Int64
	done   chan struct{}
	wg     sync.WaitGroup
}

func (s *liveStreams) start(f *ohbloom.AtomicFilter) {
	s.f, s.done = f, make(chan struct{})
	s.added.Store(0)
	s.tested.Store(0)
	start := time.Now()
	tick := func(body func(due int)) {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			body(int(time.Since(start).Seconds() * streamRate))
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}
	s.wg.Go(func() {
		tick(func(due int) {
			for i := int(s.added.Load()); i < due; i++ {
				f.Add(s.keys.At(i % s.keys.Len()))
				s.added.Store(int64(i + 1))
			}
		})
	})
	s.wg.Go(func() {
		next := 0
		tick(func(due int) {
			for ; next < due; next++ {
				// A key whose Add has returned must be found.
				if upTo := int(s.added.Load()); upTo > 0 {
					if !f.Test(s.keys.At(next % upTo % s.keys.Len())) {
						s.lost.Add(1)
					}
					s.tested.Add(1)
				}
			}
		})
	})
}

func (s *liveStreams) stop() {
	close(s.done)
	s.wg.Wait()
}

// BenchmarkBuild is the build race: every way to build a filter of n
// 32-byte keys at p = 1%, on fresh memory (the allocation is timed too),
// in -build.rounds interleaved rounds. The parallel builds run with a live
// stream of adds and tests beside them (liveStreams), and every build is
// checked afterwards: every bulk key, every streamed key found. Reports
// s/build and ns/key, and the CPU others took meanwhile (otherCPU).
// "two-addbatch-ceiling" is the most two cores can do: two independent
// single-core builds side by side. The -ranges builds are AddParallel and
// AddSeq with a memory budget of one filter.
//
//	cd bench && go test -c -o build.test
//	flock /tmp/ohbloom-bench.lock ./build.test -test.run '^$' -test.bench Build -test.benchtime 1x -test.timeout 3h -build.n 50000000,100000000 > build.txt
//	go run ./cmd/limitstable < build.txt
func BenchmarkBuild(b *testing.B) {
	var sizes []int
	for _, s := range strings.Split(*buildSizes, ",") {
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			b.Fatal(err)
		}
		sizes = append(sizes, int(n))
	}
	for _, n := range sizes {
		if testing.Short() {
			n = min(n, 1<<20)
		}
		keys := NewKeys(n, 1)
		views := keys.Views(nil, 0, n)
		live := &liveStreams{keys: NewKeys(1<<20, 2)}
		for round := 1; round <= *buildRounds; round++ {
			for _, bl := range builders {
				if bl.peer && n > *buildPeers {
					continue
				}
				b.Run(fmt.Sprintf("n=%d/build=%s/round=%d", n, bl.name, round), func(b *testing.B) {
					for b.Loop() {
						b.StopTimer()
						runtime.GC()
						live.lost.Store(0)
						live.added.Store(0) // set by start, for the builds with streams
						b.StartTimer()
						start, others := time.Now(), otherCPU(b)
						test := bl.build(n, keys, views, live)
						took := time.Since(start)
						b.StopTimer()
						others()
						b.ReportMetric(took.Seconds(), "s/build")
						b.ReportMetric(float64(took.Nanoseconds())/float64(n), "ns/key")
						checkBuild(b, n, keys, test, live)
						b.StartTimer()
					}
				})
			}
		}
	}
}

// checkBuild fails b if a bulk key or a streamed key is missing.
func checkBuild(b *testing.B, n int, keys Keys, test func([]byte) bool, live *liveStreams) {
	if l := live.lost.Load(); l > 0 {
		b.Fatalf("%d streamed keys not found after their Add returned", l)
	}
	var missing atomic.Int64
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			for i := n * w / workers; i < n*(w+1)/workers; i++ {
				if !test(keys.At(i)) {
					missing.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if m := missing.Load(); m > 0 {
		b.Fatalf("%d of %d bulk keys not found", m, n)
	}
	for i := range min(int(live.added.Load()), live.keys.Len()) {
		if !test(live.keys.At(i)) {
			b.Fatalf("streamed key %d not found", i)
		}
	}
}
