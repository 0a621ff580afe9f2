package ohbloom

import "github.com/zeebo/xxh3"

// batchSize is how many keys a batched call keeps in flight. Once a filter
// outgrows the caches every key is a cache miss of 100-300 ns, and a loop of
// single calls overlaps only the two or three misses that fit in the CPU's
// instruction window. A batch hashes its keys first, then prefetches the
// blocks of the next batchSize keys while it probes the current ones.
// Measured on a 1.25 GB filter (10^8 keys), TestHashes took 25-29 ns a key
// with windows of 16, 28-30 with 32 and 21-27 with 64, against 90-100 for
// TestHash in a loop; the floor, one independent load a key, was 21.
const batchSize = 64

// Hash returns the filter's hash of key: XXH3_64bits seeded with the
// filter's seed. Filters with the same Seed share hashes whatever their size
// and k, so a key hashed once can be routed to and probed in several of them
// with AddHash and TestHash.
func (l *layout) Hash(key []byte) uint64 { return xxh3.HashSeed(key, l.seed) }

// HashString is Hash for a string key.
func (l *layout) HashString(key string) uint64 { return xxh3.HashStringSeed(key, l.seed) }

// AddHash adds the key whose Hash is h.
func (f *Filter) AddHash(h uint64) { f.add(f.blockOf(h), residue(h)) }

// TestHash tests the key whose Hash is h.
func (f *Filter) TestHash(h uint64) bool { return f.test(f.blockOf(h), residue(h)) }

// AddHash adds the key whose Hash is h.
func (f *AtomicFilter) AddHash(h uint64) { f.atomicAdd(f.blockOf(h), residue(h)) }

// TestHash tests the key whose Hash is h.
func (f *AtomicFilter) TestHash(h uint64) bool { return f.atomicTest(f.blockOf(h), residue(h)) }

// AddHashes adds the keys whose hashes are hs, keeping a batch of cache
// misses in flight at a time.
func (f *Filter) AddHashes(hs []uint64) { f.addHashes(hs, f.add) }

// AddHashes adds the keys whose hashes are hs, keeping a batch of cache
// misses in flight at a time.
func (f *AtomicFilter) AddHashes(hs []uint64) { f.addHashes(hs, f.atomicAdd) }

// TestHashes tests the keys whose hashes are hs and writes the answers to
// results[i]. It panics if results is shorter than hs.
func (f *Filter) TestHashes(hs []uint64, results []bool) { f.testHashes(hs, results, f.test) }

// TestHashes tests the keys whose hashes are hs and writes the answers to
// results[i]. It panics if results is shorter than hs.
func (f *AtomicFilter) TestHashes(hs []uint64, results []bool) {
	f.testHashes(hs, results, f.atomicTest)
}

// AddBatch adds keys. Once the filter outgrows the caches it is several
// times faster than Add in a loop, because it keeps the cache misses of
// many keys in flight together.
func (f *Filter) AddBatch(keys [][]byte) {
	var hs [hashChunk]uint64
	for at := 0; at < len(keys); at += hashChunk {
		f.addHashes(hashKeys(&hs, keys[at:], xxh3.HashSeed, f.seed), f.add)
	}
}

// AddBatchStrings is AddBatch for string keys.
func (f *Filter) AddBatchStrings(keys []string) {
	var hs [hashChunk]uint64
	for at := 0; at < len(keys); at += hashChunk {
		f.addHashes(hashKeys(&hs, keys[at:], xxh3.HashStringSeed, f.seed), f.add)
	}
}

// TestBatch tests keys and writes the answers to results[i], without
// allocating. It panics if results is shorter than keys.
func (f *Filter) TestBatch(keys [][]byte, results []bool) {
	results = results[:len(keys)]
	var hs [hashChunk]uint64
	for at := 0; at < len(keys); at += hashChunk {
		f.testHashes(hashKeys(&hs, keys[at:], xxh3.HashSeed, f.seed), results[at:], f.test)
	}
}

// TestBatchStrings is TestBatch for string keys.
func (f *Filter) TestBatchStrings(keys []string, results []bool) {
	results = results[:len(keys)]
	var hs [hashChunk]uint64
	for at := 0; at < len(keys); at += hashChunk {
		f.testHashes(hashKeys(&hs, keys[at:], xxh3.HashStringSeed, f.seed), results[at:], f.test)
	}
}

// AddBatch adds keys, as Filter.AddBatch does, with atomic ORs.
func (f *AtomicFilter) AddBatch(keys [][]byte) {
	var hs [hashChunk]uint64
	for at := 0; at < len(keys); at += hashChunk {
		f.addHashes(hashKeys(&hs, keys[at:], xxh3.HashSeed, f.seed), f.atomicAdd)
	}
}

// AddBatchStrings is AddBatch for string keys.
func (f *AtomicFilter) AddBatchStrings(keys []string) {
	var hs [hashChunk]uint64
	for at := 0; at < len(keys); at += hashChunk {
		f.addHashes(hashKeys(&hs, keys[at:], xxh3.HashStringSeed, f.seed), f.atomicAdd)
	}
}

// TestBatch tests keys as Filter.TestBatch does.
func (f *AtomicFilter) TestBatch(keys [][]byte, results []bool) {
	results = results[:len(keys)]
	var hs [hashChunk]uint64
	for at := 0; at < len(keys); at += hashChunk {
		f.testHashes(hashKeys(&hs, keys[at:], xxh3.HashSeed, f.seed), results[at:], f.atomicTest)
	}
}

// TestBatchStrings is TestBatch for string keys.
func (f *AtomicFilter) TestBatchStrings(keys []string, results []bool) {
	results = results[:len(keys)]
	var hs [hashChunk]uint64
	for at := 0; at < len(keys); at += hashChunk {
		f.testHashes(hashKeys(&hs, keys[at:], xxh3.HashStringSeed, f.seed), results[at:], f.atomicTest)
	}
}

// hashChunk is how many keys the batched calls hash before probing them: 2
// KiB of stack. Only the first window of a chunk waits for its blocks (the
// pipeline below starts afresh), one miss per 256 keys.
const hashChunk = 256

// hashKeys hashes up to hashChunk keys into hs and returns the hashes.
func hashKeys[K []byte | string](hs *[hashChunk]uint64, keys []K, hash func(K, uint64) uint64, seed uint64) []uint64 {
	keys = keys[:min(len(keys), hashChunk)]
	for i, k := range keys {
		hs[i] = hash(k, seed)
	}
	return hs[:len(keys)]
}

// addHashes and testHashes run a software pipeline: the blocks of the next
// batchSize hashes are prefetched before the current ones are probed, so the
// memory system fetches one window while the CPU probes the other. (A
// version that also hashed keys window by window, through closures, was
// 5-7 ns a key slower on a 1.25 GB filter.)
func (l *layout) addHashes(hs []uint64, add func(*block, uint32)) {
	l.prefetch(hs[:min(len(hs), batchSize)])
	for at := 0; at < len(hs); at += batchSize {
		next := min(len(hs), at+batchSize)
		l.prefetch(hs[next:min(len(hs), next+batchSize)])
		for _, h := range hs[at:next] {
			add(l.blockOf(h), residue(h))
		}
	}
}

func (l *layout) testHashes(hs []uint64, results []bool, test func(*block, uint32) bool) {
	results = results[:len(hs)]
	l.prefetch(hs[:min(len(hs), batchSize)])
	for at := 0; at < len(hs); at += batchSize {
		next := min(len(hs), at+batchSize)
		l.prefetch(hs[next:min(len(hs), next+batchSize)])
		for i, h := range hs[at:next] {
			results[at+i] = test(l.blockOf(h), residue(h))
		}
	}
}
