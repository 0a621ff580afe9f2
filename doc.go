// Package ohbloom provides one-hash, cache-line-blocked Bloom filters: sets
// that answer "is this key in?" with "certainly not" or "probably", at a
// false positive rate that, measured at the capacity asked for, is at most
// the rate asked for.
//
// # Design
//
// A filter is an array of 512-bit blocks, each aligned to a 64-byte cache
// line. A key is hashed once, with XXH3 and the filter's seed. The high bits
// of the hash pick the block by a multiply (fastrange), so the block count
// need not be a power of two; the low 32 bits, taken modulo k pairwise-coprime
// partition sizes that split the block, pick one bit in each partition (Lu et
// al., "One-Hashing Bloom Filter"). Because the sizes are coprime, the k
// residues of one hash are independent, as k hashes would be. Every Add and
// every Test therefore costs one hash and touches one cache line, where a
// classic filter computes k positions spread over the whole array and misses
// the cache k times once the array outgrows it.
//
// On amd64 CPUs whose AVX-512 runs at full clock (AMD Zen 4 and later, Intel
// Ice Lake and later) the k bit positions of a key are computed and tested in
// one 512-bit register of eight lanes, and in two registers when k > 8.
// Elsewhere, with the purego build tag, or with OHBLOOM_PROBE=scalar in the
// environment (read once at start), generated scalar code does the same.
// Both set and test the same bits, so filters move freely between machines.
//
// # Sizing
//
// Keys do not spread evenly over blocks, and a crowded block answers more
// false positives, so a blocked filter needs more bits than the textbook
// m = −n·ln p / ln²2 (9.59 bits per key at 1%); sized by that formula it
// misses its target (about 1.2% at 1%, by the model below and as
// docs/charts.md measures). New(n, p) and Geometry instead use the exact rate
// of a blocked one-hash filter, a Poisson mixture over the keys per block
// (ExpectedFPR): for each k they find the largest load whose rate is at
// most 0.98·p, take the k with the fewest bits per key, and then add
// blocks until the rate plus two standard deviations of one filter's
// spread is still at most 0.98·p, which matters only for small filters.
// EstimatedFPR gives the rate of a filter as filled, from its bits.
//
// # Memory against false positive rate
//
// Filters of 10^6 keys built by New, measured on 10^7 absent random keys
// (3·10^7 for p ≤ 10^-4; go run gen_fprtable.go):
//
//	target p   k  bits/key  expected FPR  measured FPR
//	0.1        3     4.897       0.09758        0.0973
//	0.05       4     6.389       0.04872       0.04872
//	0.01       6    10.034      0.009716       0.00967
//	0.005      7    11.662      0.004851      0.004807
//	0.001      9    15.775     0.0009666     0.0009439
//	0.0001    11    22.573     9.611e-05      9.36e-05
//	1e-05     13    31.077     9.526e-06       9.6e-06
//
// # The filters
//
// Every filter comes as a pair of twins with the same bits and answers: X
// for one goroutine, the fastest, and AtomicX, safe for concurrent use by
// multiple goroutines without locks. Filter.ToAtomic and
// AtomicFilter.ToPlain (and CountingFilter's likewise) copy one into the
// other, so a filter can be bulk-built on one goroutine and then
// published.
//
//   - Filter and AtomicFilter: a set of keys sized for n keys at rate p
//     (New, NewAtomic; NewWithConfig for a seed, a geometry or a memory
//     bound).
//   - CountingFilter and AtomicCountingFilter keep 4-bit counters, so that
//     keys can be removed, at four times the memory or more
//     (docs/how-it-works.md).
//   - ScalableFilter and AtomicScalableFilter grow for an unknown number of
//     keys, a chain of stages whose rates sum to p (docs/sizing.md).
//   - Snapshot probes a saved Filter in place, from a mapped file.
//   - Layout places keys without holding the bits, for filters whose blocks
//     live elsewhere (tools/redisfilter keeps them in Redis).
//
// New and its siblings take n keys and a false positive rate p in (0, 1).
// The rate is a type parameter (Rate) that an integer does not satisfy, so
// bits-and-blooms' New(m bits, k hashes) habit, New(1000, 4), is a compile
// error rather than a panic at run time.
//
// TestAndAdd and TestOrAdd mean what they mean in bits-and-blooms: both
// report whether the key may have been present; TestAndAdd adds it
// whatever the answer, TestOrAdd only when absent. A Filter has
// TestAndAdd, which is both (setting bits already set changes nothing); a
// scalable filter has TestOrAdd, as adding a key it holds would take room
// in its newest stage.
//
// AtomicFilter sets words with atomic ORs, and only when a bit is missing,
// so re-adding a present key writes nothing. On Intel CPUs with TSX (RTM)
// the vector code sets a new key's bits in one hardware transaction
// instead, falling back to the atomic ORs when it aborts; OHBLOOM_RTM=off
// in the environment keeps the ORs.
//
// # Batches and bulk loads
//
// Past the caches every key costs a cache miss, and throughput depends on
// how many are in flight at once. AddBatch, TestBatch, AddHashes and
// TestHashes prefetch the blocks of the keys ahead while they probe the
// current ones; the counting and scalable filters have AddBatch and
// TestBatch too (a scalable filter's test each stage in turn, with the
// keys the newer stages did not find). AtomicFilter.AddParallel and AddSeq load keys on every core
// while other goroutines keep adding and testing; nothing is lost, but Test
// may not find keys of the load before the call returns. A load with at
// least as many keys as the filter has blocks builds in private copies of
// the blocks and ORs them in at the end, so it holds memory for one more
// filter until it returns (ParallelConfig bounds it). docs/limits.md
// measures each call against the cost of one hash and one cache-line read,
// and docs/build.md the builds.
//
// # Persistence
//
// Filters encode to a documented, checksummed, versioned format
// (Filter.WriteTo; docs/format.md) whose header records the kind of
// filter, the hash, the seed and the geometry. Every filter persists the
// same way: Save writes it to a file crash-safely (temporary file, fsync,
// rename, directory fsync; SaveFile for any encoder), and the Load
// function of its type reads the file back whole (Load, LoadAtomic,
// LoadCounting, LoadAtomicCounting, LoadScalable, LoadAtomicScalable).
// Open maps a Filter's file, checks its checksum and probes it in place;
// OpenUnverified skips the check and reads no data. Inspect says what a
// file holds (kind, version, geometry, key count), and a file read as the
// wrong kind is an error that says which call reads it. Replace a mapped
// file only by renaming a new one over it: truncating or rewriting it in
// place changes what the mapping answers, or kills the process with SIGBUS
// (docs/operations.md).
//
// The default seed is fixed (DefaultSeed) so that filters built by
// different processes agree and can be merged; Config.RandomSeed gives a
// filter a secret seed where keys come from untrusted users.
//
// # Errors
//
// Errors of building and decoding a filter wrap the package's sentinels:
// ErrInvalidConfig and ErrTooLarge for what cannot be built, ErrFull for a
// scalable filter that cannot grow, ErrIncompatible and ErrBlockRange for
// filters and blocks that do not fit together, ErrNotPresent for a
// counting filter's Remove, and ErrNotFilter, ErrVersion, ErrChecksum,
// ErrTruncated, ErrCorrupt and their kin for bytes that do not decode. The
// module's other packages wrap them too.
//
// # Other packages
//
// The filters of other libraries, bit for bit, live in packages of their
// own; they cost k cache misses per key, and new filters should use this
// package's:
//
//   - github.com/ohbloom/ohbloom/redisbloom: RedisBloom's scalable Bloom
//     filter, loaded from and dumped to its BF.SCANDUMP chunks.
//   - github.com/ohbloom/ohbloom/classic: the filters of
//     bits-and-blooms/bloom/v3 and Guava.
package ohbloom
