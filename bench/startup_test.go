package bench

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/ohbloom/ohbloom"
)

var startupN = flag.Int("startup.n", 100_000_000, "keys BenchmarkStartup bulk-loads")

// streamRate is the live stream of BenchmarkStartup: new block relations
// per second, added while the bulk load runs.
const streamRate = 10_000

// loader is one way to fill a filter at start-up while a stream adds to it.
type loader struct {
	name string
	// start builds an empty filter for n keys and returns the bulk load,
	// the stream's add, the test that verifies, and the filter's size.
	// views are the keys as slices, built once outside the measurements,
	// as a caller holding its keys in memory would have them.
	start func(n int, keys Keys, views [][]byte) (bulk func(), add func([]byte), test func([]byte) bool, bytes uint64)
}

var loaders = []loader{
	{"ohbloom-addbatch-1core", func(n int, keys Keys, views [][]byte) (func(), func([]byte), func([]byte) bool, uint64) {
		// The fastest build on one goroutine: a plain Filter and AddBatch.
		// A Filter cannot take the stream's adds during the load, so they
		// wait in a buffer and go in after it, before the filter is ready.
		// Once it is ready the stream adds to it directly, under the lock
		// (the stream runs until the load has returned).
		f := ohbloom.New(uint64(n), 0.01)
		var mu sync.Mutex
		var pending [][]byte
		ready := false
		return func() {
				f.AddBatch(views)
				mu.Lock()
				f.AddBatch(pending)
				pending, ready = nil, true
				mu.Unlock()
			}, func(k []byte) {
				mu.Lock()
				if ready {
					f.Add(k)
				} else {
					pending = append(pending, k)
				}
				mu.Unlock()
			}, func(k []byte) bool {
				mu.Lock()
				defer mu.Unlock()
				return f.Test(k)
			}, f.SizeBytes()
	}},
	{"bitsandblooms-mutex", func(n int, keys Keys, _ [][]byte) (func(), func([]byte), func([]byte) bool, uint64) {
		m := &mutexBloom{f: bloom.NewWithEstimates(uint(n), 0.01)}
		return func() {
			for i := range n {
				m.Add(keys.At(i))
			}
		}, m.Add, m.Test, uint64(m.f.Cap() / 8)
	}},
	{"ohbloom-atomic-add-loop", func(n int, keys Keys, _ [][]byte) (func(), func([]byte), func([]byte) bool, uint64) {
		f := ohbloom.NewAtomic(uint64(n), 0.01)
		return func() {
			for i := range n {
				f.Add(keys.At(i))
			}
		}, f.Add, f.Test, f.SizeBytes()
	}},
	{"ohbloom-addparallel", func(n int, _ Keys, views [][]byte) (func(), func([]byte), func([]byte) bool, uint64) {
		f := ohbloom.NewAtomic(uint64(n), 0.01)
		return func() { f.AddParallel(views) }, f.Add, f.Test, f.SizeBytes()
	}},
	{"ohbloom-addseq", func(n int, keys Keys, _ [][]byte) (func(), func([]byte), func([]byte) bool, uint64) {
		f := ohbloom.NewAtomic(uint64(n), 0.01)
		return func() {
			f.AddSeq(func(yield func([]byte) bool) {
				for i := range n {
					if !yield(keys.At(i)) {
						return
					}
				}
			})
		}, f.Add, f.Test, f.SizeBytes()
	}},
}

// heapBytes reads the bytes of live heap objects.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkStartup mirrors the start-up of a service that keeps "does X
// block Y?" in a filter: it bulk-loads n block relations
// ("did:plc:<24>|did:plc:<24>") while a stream adds 10,000 new ones a
// second, and reports the time until the filter is ready, ns per bulk key,
// the peak heap the load added beyond the keys (and their slices), and
// the filter's size. The loaders: a plain Filter.AddBatch on one
// goroutine (the stream buffered until it is done), bits-and-blooms behind
// a mutex, AtomicFilter.Add one key at a time, AtomicFilter.AddParallel
// and AtomicFilter.AddSeq.
// Afterwards every bulk key and every streamed key must test positive.
//
//	go test -run '^$' -bench Startup -benchtime 1x -count 3 -timeout 1h ./bench/
//	go test -run '^$' -bench Startup -benchtime 1x ./bench/ -startup.n 10000000
func BenchmarkStartup(b *testing.B) {
	n := *startupN
	keys := NewPairs(n, 1)
	views := keys.Views(nil, 0, n)
	stream := NewPairs(1<<20, 2)
	for _, l := range loaders {
		b.Run(fmt.Sprintf("n=%d/loader=%s", n, l.name), func(b *testing.B) {
			for b.Loop() {
				runtime.GC()
				base := heapBytes()
				var peak atomic.Uint64
				bulk, add, test, size := l.start(n, keys, views)

				// The stream and a sampler of the heap run until ready. The
				// stream catches up on every wake-up with the keys due by
				// then, so a busy machine delays it but does not thin it.
				done := make(chan struct{})
				var streamed int
				var bg sync.WaitGroup
				start := time.Now()
				bg.Go(func() {
					tick := time.NewTicker(time.Millisecond)
					defer tick.Stop()
					for {
						due := int(time.Since(start).Seconds() * streamRate)
						for ; streamed < due; streamed++ {
							add(stream.At(streamed % stream.Len()))
						}
						select {
						case <-done:
							return
						case <-tick.C:
						}
					}
				})
				bg.Go(func() {
					tick := time.NewTicker(10 * time.Millisecond)
					defer tick.Stop()
					for {
						peak.Store(max(peak.Load(), heapBytes()))
						select {
						case <-done:
							return
						case <-tick.C:
						}
					}
				})
				bulk()
				ready := time.Since(start)
				close(done)
				bg.Wait()

				b.ReportMetric(ready.Seconds(), "s-to-ready")
				b.ReportMetric(float64(ready.Nanoseconds())/float64(n), "ns/key")
				b.ReportMetric(float64(peak.Load()-min(peak.Load(), base))/1e6, "peak-heap-MB")
				b.ReportMetric(float64(size)/1e6, "filter-MB")
				b.ReportMetric(float64(streamed), "streamed-keys")
				for i := range min(streamed, stream.Len()) {
					if !test(stream.At(i)) {
						b.Fatalf("streamed key %d lost", i)
					}
				}
				for i := 0; i < n; i += 97 {
					if !test(keys.At(i)) {
						b.Fatalf("bulk key %d lost", i)
					}
				}
			}
		})
	}
}
