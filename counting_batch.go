package ohbloom

// The counting filters' batched calls run the pipeline of Filter's
// (batch.go): windows of keys hashed with the single-key calls' hash, the
// blocks of the keys ahead prefetched while the current ones are probed.
// A counting filter's block is one cache line, picked by the same
// multiply, so the same prefetch serves; only the probe differs.

// AddBatch counts keys in, as Add does each: once the filter outgrows the
// caches it is several times faster than Add in a loop, as
// Filter.AddBatch is.
func (f *CountingFilter) AddBatch(keys [][]byte) { runCountingKeys(&f.countingCore, keys, opAdd, nil) }

// AddBatchStrings is AddBatch for string keys.
func (f *CountingFilter) AddBatchStrings(keys []string) {
	runCountingKeys(&f.countingCore, keys, opAdd, nil)
}

// TestBatch tests keys and writes the answers to results[i], without
// allocating. It panics if results is shorter than keys.
func (f *CountingFilter) TestBatch(keys [][]byte, results []bool) {
	runCountingKeys(&f.countingCore, keys, opTest, results)
}

// TestBatchStrings is TestBatch for string keys.
func (f *CountingFilter) TestBatchStrings(keys []string, results []bool) {
	runCountingKeys(&f.countingCore, keys, opTest, results)
}

// AddBatch counts keys in, as Add does each, with compare-and-swaps.
func (f *AtomicCountingFilter) AddBatch(keys [][]byte) {
	runCountingKeys(&f.countingCore, keys, opAtomicAdd, nil)
}

// AddBatchStrings is AddBatch for string keys.
func (f *AtomicCountingFilter) AddBatchStrings(keys []string) {
	runCountingKeys(&f.countingCore, keys, opAtomicAdd, nil)
}

// TestBatch tests keys as CountingFilter.TestBatch does.
func (f *AtomicCountingFilter) TestBatch(keys [][]byte, results []bool) {
	runCountingKeys(&f.countingCore, keys, opAtomicTest, results)
}

// TestBatchStrings is TestBatch for string keys.
func (f *AtomicCountingFilter) TestBatchStrings(keys []string, results []bool) {
	runCountingKeys(&f.countingCore, keys, opAtomicTest, results)
}

// runCountingKeys is runKeys for a counting filter, step for step.
func runCountingKeys[K []byte | string](l *countingCore, keys []K, op op, results []bool) {
	if op == opTest || op == opAtomicTest {
		results = results[:len(keys)]
	}
	if len(keys) == 0 {
		return
	}
	// The hash of Filter's batches reads the seed, folded into XXH3's
	// secret, from a core: this one holds nothing else.
	var hasher core
	hasher.seed = l.seed
	hasher.secret.fold(l.seed)
	var ring [2][batchSize]uint64
	cur := ring[0][:min(batchSize, len(keys))]
	hashWindow(&hasher, cur, keys[:len(cur)])
	l.prefetch(cur[:min(prefetchDistance, len(cur))])
	for w := 0; len(cur) > 0; w++ {
		from := min(len(keys), (w+1)*batchSize)
		next := ring[(w+1)%2][:min(batchSize, len(keys)-from)]
		nextKeys := keys[from : from+len(next)]
		n := len(cur)
		for i := 0; i < n; i += prefetchStep {
			l.prefetchAhead(cur, next, i)
			if i < len(next) {
				end := min(len(next), i+prefetchStep)
				hashWindow(&hasher, next[i:end], nextKeys[i:end])
			}
			l.probeWindow(op, cur[i:min(n, i+prefetchStep)], results[min(len(results), w*batchSize+i):])
		}
		cur = next
	}
}

// prefetchAhead is core.prefetchAhead for a counting filter's blocks.
func (l *countingCore) prefetchAhead(cur, next []uint64, i int) {
	n := len(cur)
	ahead, end := i+prefetchDistance, i+prefetchDistance+prefetchStep
	if ahead < n {
		l.prefetch(cur[ahead:min(n, end)])
	}
	if lo, hi := min(len(next), max(0, ahead-n)), min(len(next), end-n); lo < hi {
		l.prefetch(next[lo:hi])
	}
}

// probeWindow applies op to the keys of hs, whose blocks are (being)
// fetched, writing results[i] for the tests. A test reads the counters
// with atomic loads, which serve both twins.
func (l *countingCore) probeWindow(op op, hs []uint64, results []bool) {
	switch op {
	case opAdd:
		for _, h := range hs {
			l.plainAdd(h)
		}
	case opAtomicAdd:
		for _, h := range hs {
			l.atomicAdd(h)
		}
	case opTest, opAtomicTest:
		results = results[:len(hs)]
		for i, h := range hs {
			results[i] = l.testHash(h)
		}
	}
}
