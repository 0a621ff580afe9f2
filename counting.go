package ohbloom

import (
	"io"
	"math/bits"
	"sync/atomic"

	"github.com/zeebo/xxh3"
)

// maxCount is where a 4-bit counter sticks: once a counter reaches it, it is
// never decremented again, since it no longer knows how many keys it counts
// and a decrement could make a present key absent.
const maxCount = 15

// countingCore is what the two counting filters share: the geometry and
// the counters, 128 4-bit counters to a 64-byte block, counter c of a block
// in bits 4(c%16)..4(c%16)+3 of word c/16.
type countingCore struct {
	blocks  []block
	nblocks uint64
	seed    uint64
	k       int
	parts   [maxCountingK]countingPart

	capacity  uint64
	targetFPR float64
}

// countingPart is one partition of a block's counters. A key increments
// counter offset + x mod size, x being the low 32 bits of its hash.
type countingPart struct {
	magic  uint64 // ⌈2^64/size⌉: x mod size by two multiplies (Lemire)
	size   uint32
	offset uint32
}

func (l *countingCore) setGeometry(nblocks uint64, k int) {
	l.nblocks, l.k = nblocks, k
	offset := uint32(0)
	for i, s := range counterPartitionSizes[k] {
		l.parts[i] = countingPart{magic: ^uint64(0)/uint64(s) + 1, size: uint32(s), offset: offset}
		offset += uint32(s)
	}
}

// counters returns the block of a hash and the index of its k counters
// there, ascending.
func (l *countingCore) counters(h uint64) (*block, [maxCountingK]uint32) {
	i, _ := bits.Mul64(h, l.nblocks)
	x := residue(h)
	var c [maxCountingK]uint32
	for j, p := range l.parts[:l.k] {
		hi, _ := bits.Mul64(p.magic*uint64(x), uint64(p.size))
		c[j] = p.offset + uint32(hi)
	}
	return &l.blocks[i], c
}

func nibble(b *block, c uint32) uint64 { return atomic.LoadUint64(&b[c/16]) >> (4 * (c % 16)) & 0xF }

// newCountingLayout builds a counting filter's layout from c, sized with the
// counter partition tables.
func newCountingLayout(c Config) (countingCore, error) {
	nblocks, k, seed, err := c.geometry(counterTable)
	if err == nil {
		err = checkMemory(nblocks)
	}
	if err != nil {
		return countingCore{}, err
	}
	l := countingCore{seed: seed, capacity: c.Capacity, targetFPR: c.FPR}
	l.setGeometry(nblocks, k)
	l.blocks = alignedBlocks(nblocks)
	return l, nil
}

// CountingFilter is a one-hash blocked Bloom filter whose slots are 4-bit
// counters, so that keys can be removed. It costs four times the memory of
// a Filter of the same false positive rate, or a little more (128 counters
// to a cache line leave the blocks more uneven than 512 bits do). It is not
// safe for concurrent use; see AtomicCountingFilter.
//
// A counter that reaches 15 sticks there (Saturated counts them). Removing
// a key that was never added, but tests positive, decrements other keys'
// counters and can make them absent: a false negative. That is true of
// every counting filter; remove only keys you added.
type CountingFilter struct {
	countingCore
}

// NewCounting returns a CountingFilter for n keys at false positive rate p,
// sized like New by the exact rate of its block shape. It panics on invalid
// parameters; NewCountingWithConfig returns errors.
func NewCounting[P Rate](n uint64, p P) *CountingFilter {
	f, err := NewCountingWithConfig(Config{Capacity: n, FPR: float64(p)})
	if err != nil {
		panic(constructorPanic("NewCounting", n, float64(p), err))
	}
	return f
}

// NewCountingWithConfig returns a CountingFilter built as c describes (an
// explicit K is at most 8).
func NewCountingWithConfig(c Config) (*CountingFilter, error) {
	l, err := newCountingLayout(c)
	if err != nil {
		return nil, err
	}
	return &CountingFilter{l}, nil
}

// Add counts key in.
func (f *CountingFilter) Add(key []byte) { f.addHash(xxh3.HashSeed(key, f.seed)) }

// AddString is Add for a string key.
func (f *CountingFilter) AddString(key string) { f.addHash(xxh3.HashStringSeed(key, f.seed)) }

func (f *CountingFilter) addHash(h uint64) { f.plainAdd(h) }

// plainAdd is CountingFilter's add, on the core for the batched calls.
func (l *countingCore) plainAdd(h uint64) {
	b, cs := l.counters(h)
	for _, c := range cs[:l.k] {
		if shift := 4 * (c % 16); b[c/16]>>shift&0xF < maxCount {
			b[c/16] += 1 << shift
		}
	}
}

// Remove counts key out. If the filter says key is absent it returns an
// error wrapping ErrNotPresent and changes nothing. Counters stuck at 15
// stay there.
func (f *CountingFilter) Remove(key []byte) error { return f.removeHash(xxh3.HashSeed(key, f.seed)) }

// RemoveString is Remove for a string key.
func (f *CountingFilter) RemoveString(key string) error {
	return f.removeHash(xxh3.HashStringSeed(key, f.seed))
}

func (f *CountingFilter) removeHash(h uint64) error {
	if !f.testHash(h) {
		return ErrNotPresent
	}
	b, cs := f.counters(h)
	for _, c := range cs[:f.k] {
		if shift := 4 * (c % 16); b[c/16]>>shift&0xF < maxCount {
			b[c/16] -= 1 << shift
		}
	}
	return nil
}

// Seed returns the hash seed.
func (l *countingCore) Seed() uint64 { return l.seed }

// CountHash is Count for the key whose Hash is h.
func (l *countingCore) CountHash(h uint64) uint8 { return l.countHash(h) }

// AddHash counts in the key whose Hash is h.
func (f *CountingFilter) AddHash(h uint64) { f.addHash(h) }

// RemoveHash counts out the key whose Hash is h, as Remove does.
func (f *CountingFilter) RemoveHash(h uint64) error { return f.removeHash(h) }

// Test reports whether key may be in the filter.
func (f *CountingFilter) Test(key []byte) bool { return f.testHash(xxh3.HashSeed(key, f.seed)) }

// TestString is Test for a string key.
func (f *CountingFilter) TestString(key string) bool {
	return f.testHash(xxh3.HashStringSeed(key, f.seed))
}

func (l *countingCore) testHash(h uint64) bool { return l.countHash(h) > 0 }

// Count estimates how many times key was added (minus removed): the
// smallest of its counters, an upper bound, and 15 at most.
func (l *countingCore) Count(key []byte) uint8 { return l.countHash(xxh3.HashSeed(key, l.seed)) }

func (l *countingCore) countHash(h uint64) uint8 {
	b, cs := l.counters(h)
	least := uint64(maxCount)
	for _, c := range cs[:l.k] {
		least = min(least, nibble(b, c))
	}
	return uint8(least)
}

// K returns the number of counters each key increments.
func (l *countingCore) K() int { return l.k }

// Blocks returns the number of 64-byte blocks.
func (l *countingCore) Blocks() uint64 { return l.nblocks }

// Counters returns the number of counters.
func (l *countingCore) Counters() uint64 { return l.nblocks * countersPerBlock }

// SizeBytes returns the memory the counters occupy.
func (l *countingCore) SizeBytes() uint64 { return l.nblocks * blockBytes }

// Capacity returns the number of keys the filter was sized for.
func (l *countingCore) Capacity() uint64 { return l.capacity }

// countNibbles returns the number of counters that are not zero and the
// number stuck at 15.
func (l *countingCore) countNibbles() (nonzero, saturated uint64) {
	const low = 0x1111111111111111
	for i := range l.blocks {
		for w := range blockWords {
			v := atomic.LoadUint64(&l.blocks[i][w])
			any := (v | v>>1 | v>>2 | v>>3) & low
			all := v & (v >> 1) & (v >> 2) & (v >> 3) & low
			nonzero += uint64(bits.OnesCount64(any))
			saturated += uint64(bits.OnesCount64(all))
		}
	}
	return nonzero, saturated
}

// Saturated returns the number of counters stuck at 15.
func (l *countingCore) Saturated() uint64 {
	_, s := l.countNibbles()
	return s
}

// FillRatio returns the fraction of counters that are not zero.
func (l *countingCore) FillRatio() float64 {
	n, _ := l.countNibbles()
	return float64(n) / float64(l.Counters())
}

// EstimatedCount estimates the number of distinct keys in the filter from
// the counters that are not zero.
func (l *countingCore) EstimatedCount() uint64 {
	n, _ := l.countNibbles()
	return counterTable.estimateCount(n, l.nblocks, l.k)
}

// EstimatedFPR returns the probability that a key not in the filter tests
// positive now, computed from the counters as Filter.EstimatedFPR is.
func (l *countingCore) EstimatedFPR() float64 {
	sum := 0.0
	for i := range l.blocks {
		prod := 1.0
		for _, p := range l.parts[:l.k] {
			n := 0
			for c := p.offset; c < p.offset+p.size; c++ {
				if nibble(&l.blocks[i], c) != 0 {
					n++
				}
			}
			prod *= float64(n) / float64(p.size)
		}
		sum += prod
	}
	return sum / float64(max(1, l.nblocks))
}

func (l *countingCore) header() header {
	return header{kind: kindCounting, hash: hashXXH3, k: l.k, seed: l.seed,
		nblocks: l.nblocks, capacity: l.capacity, targetFPR: l.targetFPR}
}

func (h header) countingCore(blocks []block) countingCore {
	l := countingCore{seed: h.seed, capacity: h.capacity, targetFPR: h.targetFPR, blocks: blocks}
	l.setGeometry(h.nblocks, h.k)
	return l
}

// equal reports whether two counting filters have the same geometry, seed
// and counters.
func (l *countingCore) equal(o *countingCore) bool {
	return l.nblocks == o.nblocks && l.k == o.k && l.seed == o.seed && equalBlocks(l.blocks, o.blocks)
}

// Equal reports whether f and other have the same geometry, seed and
// counters.
func (f *CountingFilter) Equal(other *CountingFilter) bool { return f.equal(&other.countingCore) }

// WriteTo writes the filter in the format of Filter.WriteTo, with filter
// kind 2 and the counter partition sizes in the header; each block holds
// 128 counters as 8 little-endian words of 16 counters, counter c in bits
// 4(c%16)..4(c%16)+3 of word c/16.
func (f *CountingFilter) WriteTo(w io.Writer) (int64, error) {
	return writeBlocks(w, f.header(), f.blocks)
}

// ReadFrom replaces f with a counting filter read from r, as
// Filter.ReadFrom does.
func (f *CountingFilter) ReadFrom(r io.Reader) (int64, error) {
	h, blocks, n, err := readBlocks(r, kindCounting)
	if err == nil {
		f.countingCore = h.countingCore(blocks)
	}
	return n, err
}

// MarshalBinary returns the filter in the format of WriteTo.
func (f *CountingFilter) MarshalBinary() ([]byte, error) {
	return marshalBlocks(f.header(), f.blocks), nil
}

// UnmarshalBinary replaces f with the counting filter encoded in data. On
// error f is unchanged.
func (f *CountingFilter) UnmarshalBinary(data []byte) error {
	h, blocks, err := unmarshalBlocks(data, kindCounting)
	if err == nil {
		f.countingCore = h.countingCore(blocks)
	}
	return err
}

// ToAtomic returns an AtomicCountingFilter holding a copy of f's counters.
func (f *CountingFilter) ToAtomic() *AtomicCountingFilter {
	c := f.countingCore
	c.blocks = alignedBlocks(f.nblocks)
	copy(c.blocks, f.blocks)
	return &AtomicCountingFilter{c}
}

// CountingGeometry is Geometry for a counting filter: the blocks and k that
// NewCounting uses for n keys at false positive rate p.
func CountingGeometry(n uint64, p float64) (blocks uint64, k int, err error) {
	return counterTable.size(n, p)
}
