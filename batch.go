package ohbloom

import "github.com/zeebo/xxh3"

// Once a filter outgrows the caches every key is a cache miss of 100-300
// ns, and a loop of single calls overlaps only the two or three misses that
// fit in the CPU's instruction window. The batched calls hash their keys a
// window of batchSize at a time, and while they probe key i they prefetch
// the block of key i+prefetchDistance (at most batchSize), prefetchStep
// keys per call to the prefetch routine: a steady stream of misses in
// flight, each block arriving about when its key is probed. The three
// constants depend on what a prefetch is (prefetch_amd64.go,
// prefetch_other.go).

// prefetchAhead reaches at most one window ahead: a prefetchDistance
// larger than batchSize does not compile.
const _ = uint(batchSize - prefetchDistance)

// Hash returns the hash of key that every filter of the given seed uses:
// XXH3_64bits seeded with it. Filters with the same Seed share hashes
// whatever their kind, size and k, so a key hashed once can be routed to
// and probed in several of them with AddHash and TestHash. As in
// hash/maphash's Bytes, the seed comes first.
func Hash(seed uint64, key []byte) uint64 { return xxh3.HashSeed(key, seed) }

// HashString is Hash for a string key.
func HashString(seed uint64, key string) uint64 { return xxh3.HashStringSeed(key, seed) }

func (l *core) hash(key []byte) uint64 { return xxh3.HashSeed(key, l.seed) }

func (l *core) hashString(key string) uint64 { return xxh3.HashStringSeed(key, l.seed) }

// AddHash adds the key whose Hash is h.
func (f *Filter) AddHash(h uint64) { f.addBits(f.blockOf(h), residue(h)) }

// TestHash tests the key whose Hash is h.
func (f *Filter) TestHash(h uint64) bool { return f.testBits(f.blockOf(h), residue(h)) }

// AddHash adds the key whose Hash is h.
func (f *AtomicFilter) AddHash(h uint64) { f.atomicAddBits(f.blockOf(h), residue(h)) }

// TestHash tests the key whose Hash is h.
func (f *AtomicFilter) TestHash(h uint64) bool { return f.atomicTestBits(f.blockOf(h), residue(h)) }

// TestAndAddHash is TestAndAdd for the key whose Hash is h.
func (f *Filter) TestAndAddHash(h uint64) bool { return f.testAndAddHash(h) }

// TestAndAddHash is TestAndAdd for the key whose Hash is h, with the same
// guarantee under concurrent adds.
func (f *AtomicFilter) TestAndAddHash(h uint64) bool { return f.testAndAddHash(h) }

// AddHashes adds the keys whose hashes are hs, keeping a batch of cache
// misses in flight at a time.
func (f *Filter) AddHashes(hs []uint64) { f.runHashes(hs, opAdd, nil) }

// AddHashes adds the keys whose hashes are hs, keeping a batch of cache
// misses in flight at a time.
func (f *AtomicFilter) AddHashes(hs []uint64) { f.runHashes(hs, opAtomicAdd, nil) }

// TestHashes tests the keys whose hashes are hs and writes the answers to
// results[i]. It panics if results is shorter than hs.
func (f *Filter) TestHashes(hs []uint64, results []bool) { f.runHashes(hs, opTest, results) }

// TestHashes tests the keys whose hashes are hs and writes the answers to
// results[i]. It panics if results is shorter than hs.
func (f *AtomicFilter) TestHashes(hs []uint64, results []bool) {
	f.runHashes(hs, opAtomicTest, results)
}

// AddBatch adds keys. Once the filter outgrows the caches it is several
// times faster than Add in a loop, because it keeps the cache misses of
// many keys in flight together.
func (f *Filter) AddBatch(keys [][]byte) { runKeys(&f.core, keys, opAdd, nil) }

// AddBatchStrings is AddBatch for string keys.
func (f *Filter) AddBatchStrings(keys []string) {
	runKeys(&f.core, keys, opAdd, nil)
}

// TestBatch tests keys and writes the answers to results[i], without
// allocating. It panics if results is shorter than keys.
func (f *Filter) TestBatch(keys [][]byte, results []bool) {
	runKeys(&f.core, keys, opTest, results)
}

// TestBatchStrings is TestBatch for string keys.
func (f *Filter) TestBatchStrings(keys []string, results []bool) {
	runKeys(&f.core, keys, opTest, results)
}

// AddBatch adds keys, as Filter.AddBatch does, with atomic ORs.
func (f *AtomicFilter) AddBatch(keys [][]byte) {
	runKeys(&f.core, keys, opAtomicAdd, nil)
}

// AddBatchStrings is AddBatch for string keys.
func (f *AtomicFilter) AddBatchStrings(keys []string) {
	runKeys(&f.core, keys, opAtomicAdd, nil)
}

// TestBatch tests keys as Filter.TestBatch does.
func (f *AtomicFilter) TestBatch(keys [][]byte, results []bool) {
	runKeys(&f.core, keys, opAtomicTest, results)
}

// TestBatchStrings is TestBatch for string keys.
func (f *AtomicFilter) TestBatchStrings(keys []string, results []bool) {
	runKeys(&f.core, keys, opAtomicTest, results)
}

// op is what a batched call does to each key.
type op int

const (
	opAdd op = iota
	opAtomicAdd
	opTest
	opAtomicTest
)

// runKeys is the software pipeline behind the batched calls on keys. It
// probes window w of batchSize hashes while it prefetches prefetchDistance
// keys ahead and hashes window w+1, a step of prefetchStep keys at a time:
// hashing a whole window between two runs of probes would leave the memory
// idle meanwhile (docs/design.md, "Batches").
func runKeys[K []byte | string](l *core, keys []K, op op, results []bool) {
	if op == opTest || op == opAtomicTest {
		results = results[:len(keys)]
	}
	if len(keys) == 0 {
		return
	}
	var ring [2][batchSize]uint64
	cur := ring[0][:min(batchSize, len(keys))]
	hashWindow(l, cur, keys[:len(cur)])
	l.prefetch(cur[:min(prefetchDistance, len(cur))])
	for w := 0; len(cur) > 0; w++ {
		from := min(len(keys), (w+1)*batchSize)
		next := ring[(w+1)%2][:min(batchSize, len(keys)-from)]
		nextKeys := keys[from : from+len(next)]
		n := len(cur)
		for i := 0; i < n; i += prefetchStep {
			l.prefetchAhead(cur, next, i)
			// Hash the step of the next window that the prefetches
			// reach two steps from now.
			if i < len(next) {
				end := min(len(next), i+prefetchStep)
				hashWindow(l, next[i:end], nextKeys[i:end])
			}
			l.probeWindow(op, cur[i:min(n, i+prefetchStep)], results[min(len(results), w*batchSize+i):])
		}
		cur = next
	}
}

// prefetchAhead prefetches the blocks of the prefetchStep keys that come
// prefetchDistance after key i of cur, in cur and then in next.
func (l *core) prefetchAhead(cur, next []uint64, i int) {
	n := len(cur)
	ahead, end := i+prefetchDistance, i+prefetchDistance+prefetchStep
	if ahead < n {
		l.prefetch(cur[ahead:min(n, end)])
	}
	if lo, hi := min(len(next), max(0, ahead-n)), min(len(next), end-n); lo < hi {
		l.prefetch(next[lo:hi])
	}
}

// probeRolling probes the keys of cur, whose first prefetchDistance blocks
// are (being) fetched, prefetching as it goes.
func (l *core) probeRolling(op op, cur, next []uint64, results []bool) {
	for i := 0; i < len(cur); i += prefetchStep {
		l.prefetchAhead(cur, next, i)
		l.probeWindow(op, cur[i:min(len(cur), i+prefetchStep)], results[min(len(results), i):])
	}
}

// goHashWindow hashes keys into hs with xxh3, where hashWindow has no
// assembly hash (probe_other.go) and for the keys too long for it
// (keyhash_amd64.go). The type switch, once a window, lets the loops call
// xxh3 directly, where a function value would cost a call per key.
func goHashWindow[K []byte | string](hs []uint64, keys []K, seed uint64) {
	switch ks := any(keys).(type) {
	case [][]byte:
		for i := range hs {
			hs[i] = xxh3.HashSeed(ks[i], seed)
		}
	case []string:
		for i := range hs {
			hs[i] = xxh3.HashStringSeed(ks[i], seed)
		}
	}
}

// runHashes is runKeys for keys already hashed.
func (l *core) runHashes(hs []uint64, op op, results []bool) {
	if op == opTest || op == opAtomicTest {
		results = results[:len(hs)]
	}
	l.prefetch(hs[:min(len(hs), prefetchDistance)])
	for at := 0; at < len(hs); at += batchSize {
		cur := hs[at:min(len(hs), at+batchSize)]
		next := hs[at+len(cur) : min(len(hs), at+len(cur)+batchSize)]
		l.probeRolling(op, cur, next, results[min(len(results), at):])
	}
}

// probeWindow applies op to the keys of hs, whose blocks are (being)
// fetched, writing results[i] for the tests.
func (l *core) probeWindow(op op, hs []uint64, results []bool) {
	if l.vec != nil {
		// One assembly call for the step (vecTestHashes): the vector
		// probe reads each word whole, as an atomic load does, so it
		// serves AtomicFilter's tests too.
		switch op {
		case opAdd:
			l.vecAddWindow(hs)
			return
		case opTest, opAtomicTest:
			l.vecTestWindow(hs, results)
			return
		}
	}
	switch op {
	case opAdd:
		for _, h := range hs {
			l.addBits(l.blockOf(h), residue(h))
		}
	case opAtomicAdd:
		for _, h := range hs {
			l.atomicAddBits(l.blockOf(h), residue(h))
		}
	case opTest:
		results = results[:len(hs)]
		for i, h := range hs {
			results[i] = l.testBits(l.blockOf(h), residue(h))
		}
	case opAtomicTest:
		results = results[:len(hs)]
		for i, h := range hs {
			results[i] = l.atomicTestBits(l.blockOf(h), residue(h))
		}
	}
}

// The counting filters' batched calls run the pipeline of Filter's
// (batch.go): windows of keys hashed with the single-key calls' hash, the
// blocks of the keys ahead prefetched while the current ones are probed.
// A counting filter's block is one cache line, picked by the same
// multiply, so the same prefetch serves; only the probe differs.

// TestBatch tests keys and writes the answers to results[i], without
// allocating. It panics if results is shorter than keys.
func (f *CountingFilter) TestBatch(keys [][]byte, results []bool) {
	testCountingKeys(&f.countingCore, keys, results)
}

// TestBatchStrings is TestBatch for string keys.
func (f *CountingFilter) TestBatchStrings(keys []string, results []bool) {
	testCountingKeys(&f.countingCore, keys, results)
}

// TestBatch tests keys as CountingFilter.TestBatch does.
func (f *AtomicCountingFilter) TestBatch(keys [][]byte, results []bool) {
	testCountingKeys(&f.countingCore, keys, results)
}

// TestBatchStrings is TestBatch for string keys.
func (f *AtomicCountingFilter) TestBatchStrings(keys []string, results []bool) {
	testCountingKeys(&f.countingCore, keys, results)
}

// testCountingKeys is runKeys's test for a counting filter, step for
// step. A counting filter's tests read the counters with atomic loads, so
// that the plain and the atomic filter share it.
func testCountingKeys[K []byte | string](l *countingCore, keys []K, results []bool) {
	results = results[:len(keys)]
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
			l.probeWindow(cur[i:min(n, i+prefetchStep)], results[min(len(results), w*batchSize+i):])
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

// probeWindow tests the keys of hs, whose blocks are (being) fetched,
// writing results[i]. It reads the counters with atomic loads, which serve
// both twins.
func (l *countingCore) probeWindow(hs []uint64, results []bool) {
	results = results[:len(hs)]
	for i, h := range hs {
		results[i] = l.testHash(h)
	}
}
