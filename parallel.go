package ohbloom

import (
	"iter"
	"runtime"
	"sync"

	"github.com/zeebo/xxh3"
)

// AddParallel adds keys using every core: GOMAXPROCS goroutines each add a
// contiguous share with AddBatch, and AddParallel returns when all are in.
// Other goroutines may Add and Test meanwhile (a live stream during a bulk
// load): every word is set with an atomic OR, so nothing is lost.
//
// The workers share the filter's cache lines rather than owning block
// ranges: on a filter larger than the caches two workers rarely touch the
// same line at once, and routing keys to their owners costs a pass over the
// keys that plain atomic ORs do not (see BenchmarkStartup in bench/).
func (f *AtomicFilter) AddParallel(keys [][]byte) {
	inParallel(len(keys), func(from, to int) { f.AddBatch(keys[from:to]) })
}

// AddParallelStrings is AddParallel for string keys.
func (f *AtomicFilter) AddParallelStrings(keys []string) {
	inParallel(len(keys), func(from, to int) { f.AddBatchStrings(keys[from:to]) })
}

// parallelMin is the fewest keys worth a goroutine: below it the start-up
// cost of the goroutines outweighs what they save.
const parallelMin = 1 << 14

// inParallel splits [0, n) into one contiguous range per core and runs fn
// on each in its own goroutine.
func inParallel(n int, fn func(from, to int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/parallelMin))
	if workers == 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		from, to := n*w/workers, n*(w+1)/workers
		wg.Go(func() { fn(from, to) })
	}
	wg.Wait()
}

// seqBatch is how many hashes AddSeq hands a worker at a time.
const seqBatch = 4096

// AddSeq adds every key keys yields, and returns how many it added. It is
// meant for keys that stream in, from a database cursor or a channel: the
// calling goroutine pulls and hashes the keys (so a key's bytes may be
// reused as soon as the iterator yields the next one, as database/sql's
// RawBytes are), and GOMAXPROCS workers add the hashes in batches. Like
// AddParallel, it may run while other goroutines Add and Test.
//
// A channel becomes an iterator with a three-line function:
//
//	func(yield func([]byte) bool) {
//		for k := range ch {
//			if !yield(k) {
//				return
//			}
//		}
//	}
func (f *AtomicFilter) AddSeq(keys iter.Seq[[]byte]) uint64 {
	workers := runtime.GOMAXPROCS(0)
	full := make(chan []uint64, workers)
	free := make(chan []uint64, workers+1)
	for range workers + 1 {
		free <- make([]uint64, 0, seqBatch)
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for hs := range full {
				f.AddHashes(hs)
				free <- hs[:0]
			}
		})
	}
	// Deferred so that the workers stop even if the iterator panics.
	defer func() {
		close(full)
		wg.Wait()
	}()
	var n uint64
	hs := <-free
	for k := range keys {
		hs = append(hs, xxh3.HashSeed(k, f.seed))
		if len(hs) == seqBatch {
			full <- hs
			hs = <-free
		}
		n++
	}
	f.AddHashes(hs)
	return n
}
