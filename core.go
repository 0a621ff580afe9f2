package ohbloom

import (
	"math/bits"
	"sync/atomic"
)

const (
	blockBits  = 512 // one 64-byte cache line
	blockBytes = blockBits / 8
	blockWords = blockBits / 64

	minK = 2  // fewer partitions is a plain one-bit-per-key bitmap
	maxK = 16 // more only pays below p ≈ 1e-7, where the blocks cost more than they save

	// MaxBlocks is the largest number of blocks a filter may have: 2^32
	// blocks, 256 GiB. The 64-bit hash is split in two: its high bits pick
	// the block (fastrange) and its low 32 bits pick the bits inside it. Past
	// 2^32 blocks the two parts would overlap and the keys of one block would
	// no longer spread over its bits independently.
	MaxBlocks = 1 << 32

	// BlockBytes is the size of one block of a blocked filter: one cache line,
	// 512 bits. Encoded blocks (WriteTo, AppendBlocks) hold each block as its 8
	// words, little-endian, so bit b of a block is bit b%8 of byte b/8.
	BlockBytes = blockBytes

	// DefaultSeed is the hash seed of filters built without Config.Seed or
	// Config.RandomSeed. It is fixed and public, so that filters built anywhere
	// agree bit for bit and can be merged and stored; xxh3 with seed 0 is the
	// plain XXH3_64bits. Anyone who knows it can craft keys that all land in one
	// block; where keys come from untrusted users, set Config.RandomSeed.
	DefaultSeed uint64 = 0

	// DefaultGrowth is the Growth of a scalable filter whose Config leaves it
	// zero: each stage holds twice the keys of the one before, as with
	// RedisBloom's default EXPANSION 2 and in Almeida et al.'s "Scalable Bloom
	// Filters" (2007).
	DefaultGrowth = 2

	// A counting filter's block is the same cache line as 128 4-bit
	// counters. Its k stops at 8: no eight pairwise-coprime sizes near
	// 128/8 beyond those in the table sum to 128, and nine cannot.
	countersPerBlock = blockBits / 4
	maxCountingK     = 8
)

// block is one cache line of the filter: 512 bits as 8 little-endian-ordered
// words, bit b of the block being bit b%64 of word b/64.
type block [blockWords]uint64

// partition is one of the k bit ranges a block is split into. A key sets bit
// offset + x mod size, where x = residue(h), the low 32 bits of its hash.
type partition struct {
	size   uint32
	offset uint32
}

// partitionsFor lays out the k partitions of a block, one after the other.
func partitionsFor(k int) (parts [maxK]partition) {
	offset := uint32(0)
	for i, s := range partitionSizes[k] {
		parts[i] = partition{size: uint32(s), offset: offset}
		offset += uint32(s)
	}
	return parts
}

// core is what Filter, AtomicFilter and Snapshot share: the geometry, the
// seed, the bits, and the probes that map a hash to its block and bits.
// (Layout is the geometry and the seed alone, for bits kept elsewhere.)
type core struct {
	blocks  []block
	nblocks uint64 // len(blocks), kept as uint64 for the fastrange multiply
	seed    uint64
	k       int
	parts   [maxK]partition

	// The probes generated for this k (probes_table.go): constant sizes
	// and offsets make them several times cheaper than a loop over parts.
	test       func(*block, uint32) bool
	atomicTest func(*block, uint32) bool
	add        func(*block, uint32)
	atomicAdd  func(*block, uint32) bool
	mask       func(uint32) (m0, m1, m2, m3, m4, m5, m6, m7 uint64)

	// vec holds the constants of the vector probe (probe_amd64.go), nil
	// where the CPU has none; testBits and addBits then use the generated
	// probes. vec8 is vec where k ≤ 8 (one register of lanes), else nil:
	// the single-key assembly tests it first, which spares its common case
	// a second test of k. setVec sets both.
	vec, vec8 *vecProbe

	// secret is XXH3's secret with the seed folded in, for the assembly
	// hash of keyTest and keyAdd (keyhash_amd64.go). setGeometry sets it
	// with the seed, so that the two never disagree.
	secret hashSecret

	// What the filter was sized for; kept for Capacity, TargetFPR and the
	// file header, never used by a probe.
	capacity  uint64
	targetFPR float64
}

// setGeometry sets the seed, the block count and k, and everything made
// from them.
func (l *core) setGeometry(seed, nblocks uint64, k int) {
	l.seed = seed
	l.secret.fold(seed)
	l.nblocks, l.k, l.parts = nblocks, k, partitionsFor(k)
	l.test, l.atomicTest, l.add, l.atomicAdd, l.mask = testFuncs[k], atomicTestFuncs[k], addFuncs[k], atomicAddFuncs[k], maskFuncs[k]
	l.setVec(newVecProbe(l.parts[:k]))
}

// setVec sets l's vector probe, p or nil, with vec8.
func (l *core) setVec(p *vecProbe) {
	l.vec, l.vec8 = p, nil
	if l.k <= 8 {
		l.vec8 = p
	}
}

// blockOf returns the block of a hash: fastrange on its high bits (the high
// word of h·nblocks), so any block count works and no division is needed.
// The k bits inside it come from residue(h) modulo the partition sizes.
func (l *core) blockOf(h uint64) *block {
	i, _ := bits.Mul64(h, l.nblocks)
	return &l.blocks[i]
}

// The probes of one block, with the vector probe where the core has one
// and the generated probes otherwise. The choice is made in one place,
// the probe functions (probe_amd64.s, probe_other.go), inside the one call
// these make: they inline into their callers, so choosing costs no call
// level.

// testBits reports whether every bit of x is set in b, for Filter.
func (l *core) testBits(b *block, x uint32) bool { return probeTest(l, b, x) }

// atomicTestBits is testBits for AtomicFilter. The vector probe serves it
// too: its load reads each aligned word whole, as atomic.LoadUint64 does on
// amd64, and bits are only ever set, so a key whose Add has returned is
// found whatever Adds run meanwhile.
func (l *core) atomicTestBits(b *block, x uint32) bool { return probeAtomicTest(l, b, x) }

// addBits sets the bits of x in b, for Filter.
func (l *core) addBits(b *block, x uint32) { probeAdd(l, b, x) }

// testAndAddBits sets the bits of x in b and reports whether they were
// all set already; then it writes nothing.
func (l *core) testAndAddBits(b *block, x uint32) bool { return probeTestAndAdd(l, b, x) }

// atomicAddBits is testAndAddBits for AtomicFilter: nothing is written
// when the bits are all set already, and otherwise atomic ORs (one per
// word that lacks a bit with the vector probe, one per partition with the
// generated ones).
func (l *core) atomicAddBits(b *block, x uint32) bool { return probeAtomicAdd(l, b, x) }

// The generated probes with the arguments of the probe functions: where
// the core has no vector probe, probe_amd64.s jumps to them, and
// probe_other.go calls them.
func scalarTest(l *core, b *block, x uint32) bool       { return l.test(b, x) }
func scalarAtomicTest(l *core, b *block, x uint32) bool { return l.atomicTest(b, x) }
func scalarAdd(l *core, b *block, x uint32)             { l.add(b, x) }
func scalarAtomicAdd(l *core, b *block, x uint32) bool  { return l.atomicAdd(b, x) }

func scalarTestAndAdd(l *core, b *block, x uint32) bool {
	if l.test(b, x) {
		return true
	}
	l.add(b, x)
	return false
}

// residue returns the part of a hash that picks the bits inside its block:
// its low 32 bits. Fewer would be cheaper to reduce (with 23 bits, x mod
// size is exact by 32-bit multiplies), but then an absent key shares all
// its residues with one of the λ keys of its block with probability λ/2^23,
// 4% of the whole rate at p = 10^-4: measured, and rejected. With 32 bits
// that share is below 0.01% down to p = 10^-6.
func residue(h uint64) uint32 { return uint32(h) }

// locate maps a hash to its block index and the bits it owns there, with a
// loop over the partition table and plain %. It defines the layout; the
// generated probes must agree with it (TestProbesMatchLayout), and tests use
// it to look at bits directly.
func (l *core) locate(h uint64) (index uint64, mask block) {
	index, _ = bits.Mul64(h, l.nblocks)
	x := residue(h)
	for _, p := range l.parts[:l.k] {
		bit := p.offset + x%p.size
		mask[bit/64] |= 1 << (bit % 64)
	}
	return index, mask
}

// compatible reports whether two cores put every key on the same bits.
func (l *core) compatible(o *core) bool {
	return l.nblocks == o.nblocks && l.k == o.k && l.seed == o.seed
}

// The functions below read and write the bits of a whole filter. They load
// words atomically for both types: on amd64 and arm64 an atomic load is an
// ordinary load, and it lets AtomicFilter run them while other goroutines add.

// popcount returns the number of set bits.
func (l *core) popcount() uint64 {
	n := 0
	for i := range l.blocks {
		b := &l.blocks[i]
		for w := range b {
			n += bits.OnesCount64(atomic.LoadUint64(&b[w]))
		}
	}
	return uint64(n)
}

// rangeCount returns the number of set bits of b in [from, from+size).
func rangeCount(b *block, from, size uint32) int {
	n := 0
	for size > 0 {
		w, shift := from/64, from%64
		take := min(64-shift, size)
		word := atomic.LoadUint64(&b[w]) >> shift
		if take < 64 {
			word &= 1<<take - 1
		}
		n += bits.OnesCount64(word)
		from += take
		size -= take
	}
	return n
}

// exactFPR is the probability that a key not in the filter tests positive,
// computed from the bits themselves: a random key picks a block uniformly and
// one bit uniformly in each partition, so the rate is the average over blocks
// of the product of the partitions' fill ratios.
func (l *core) exactFPR() float64 {
	if l.nblocks == 0 {
		return 0
	}
	sum := 0.0
	for i := range l.blocks {
		prod := 1.0
		for _, p := range l.parts[:l.k] {
			prod *= float64(rangeCount(&l.blocks[i], p.offset, p.size)) / float64(p.size)
			if prod == 0 {
				break
			}
		}
		sum += prod
	}
	return sum / float64(l.nblocks)
}

// equalBits reports whether two filters of the same geometry hold the same
// bits.
func (l *core) equalBits(o *core) bool {
	return l.compatible(o) && equalBlocks(l.blocks, o.blocks)
}

// equalBlocks reports whether two equally long block arrays hold the same
// words, loading them atomically so that either may be in use.
func equalBlocks(a, b []block) bool {
	for i := range a {
		for w := range blockWords {
			if atomic.LoadUint64(&a[i][w]) != atomic.LoadUint64(&b[i][w]) {
				return false
			}
		}
	}
	return true
}

// clone copies the core with fresh, aligned storage.
func (l *core) clone() core {
	c := *l
	c.blocks = alignedBlocks(l.nblocks)
	for i := range l.blocks {
		for w := range blockWords {
			c.blocks[i][w] = atomic.LoadUint64(&l.blocks[i][w])
		}
	}
	return c
}
