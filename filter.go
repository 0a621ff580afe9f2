package ohbloom

import (
	"fmt"
	"math"

	"github.com/zeebo/xxh3"
)

// Filter is a one-hash, cache-line-blocked Bloom filter. It is not safe for
// concurrent use: while one goroutine calls Add, no other may call any
// method. For concurrent use take an AtomicFilter, which has the same bits
// and converts to and from a Filter.
//
// The zero Filter is not usable; build one with New or NewWithConfig.
type Filter struct {
	core
}

// Rate is the type of the false positive rate p that New and its siblings
// take: a float64, or a type defined on one. It is a type parameter rather
// than a float64 parameter so that an integer in its place does not
// compile. New(1000, 4), bits-and-blooms' New(m bits, k hashes), would
// otherwise turn 4 into the rate 4.0 and panic when it runs; as it is, the
// compiler says "int does not satisfy ohbloom.Rate". So do New(n, 1) and
// New(n, 1/100), an integer division that is 0.
type Rate interface{ ~float64 }

// New returns a Filter sized to hold n distinct keys with a false positive
// rate of at most p, using the fixed DefaultSeed. p is a rate in (0, 1)
// (0.01 for 1%), not a number of hash functions (see Rate). It panics if n
// is 0, if p is not in (0, 1), or if the filter would not fit in MaxBlocks
// or in the machine's memory, as regexp.MustCompile does on a bad pattern:
// with constant arguments these are mistakes of the program, found the
// first time it runs. NewWithConfig returns them as errors, for sizes that
// come from input.
func New[P Rate](n uint64, p P) *Filter {
	f, err := NewWithConfig(Config{Capacity: n, FPR: float64(p)})
	if err != nil {
		panic(constructorPanic("New", n, float64(p), err))
	}
	return f
}

// constructorPanic is what New and its siblings panic with: the call, and
// why it cannot be built.
func constructorPanic(name string, n uint64, p float64, err error) error {
	hint := ""
	if p >= 1 && p == math.Trunc(p) {
		hint = " (the second argument is a false positive rate such as 0.01, not a number of hash functions)"
	}
	return fmt.Errorf("ohbloom.%s(%d, %v): %w%s", name, n, p, err, hint)
}

// NewWithConfig returns a Filter built as c describes, or an error wrapping
// ErrInvalidConfig or ErrTooLarge. Nothing is clamped: a value out of range is
// an error.
func NewWithConfig(c Config) (*Filter, error) {
	l, err := c.plan()
	if err != nil {
		return nil, err
	}
	l.blocks = alignedBlocks(l.nblocks)
	return &Filter{l}, nil
}

// Add inserts key.
func (f *Filter) Add(key []byte) {
	keyAdd(f.raw(), bytesData(key), len(key))
}

// AddString inserts key, without converting it to a byte slice.
func (f *Filter) AddString(key string) {
	keyAdd(f.raw(), stringData(key), len(key))
}

// Test reports whether key may be in the filter: false means it was
// certainly never added, true that it was added or is a false positive.
func (f *Filter) Test(key []byte) bool {
	return keyTest(f.raw(), bytesData(key), len(key))
}

// TestString is Test for a string key.
func (f *Filter) TestString(key string) bool {
	return keyTest(f.raw(), stringData(key), len(key))
}

// Add, AddString, Test and TestString make one call, which the compiler
// inlines into their callers: keyTest or keyAdd. Where the vector probe
// runs, that call hashes the key and probes its block (keyhash_amd64.s);
// elsewhere, and for keys longer than the vector code hashes, it is, or
// jumps to, testKey or addKey. Each call level between a loop and its
// key's cache miss holds back the next key's miss (BenchmarkLimitsPaired).

// testKey hashes the n bytes at p and tests them in l, with the Go hash.
func testKey(l *core, p *byte, n int) bool {
	h := xxh3.HashSeed(bytesAt(p, n), l.seed)
	return l.testBits(l.blockOf(h), residue(h))
}

// addKey hashes the n bytes at p and adds them to l, with the Go hash.
func addKey(l *core, p *byte, n int) {
	h := xxh3.HashSeed(bytesAt(p, n), l.seed)
	l.addBits(l.blockOf(h), residue(h))
}

// TestAndAdd adds key and reports whether it may have been present before,
// as bits-and-blooms' TestAndAdd does: it adds whatever the test says.
func (f *Filter) TestAndAdd(key []byte) bool {
	return f.testAndAddHash(xxh3.HashSeed(key, f.seed))
}

// TestAndAddString is TestAndAdd for a string key.
func (f *Filter) TestAndAddString(key string) bool {
	return f.testAndAddHash(xxh3.HashStringSeed(key, f.seed))
}

func (f *Filter) testAndAddHash(h uint64) bool {
	return f.testAndAddBits(f.blockOf(h), residue(h))
}

// Bits returns the number of bits in the filter, a multiple of 512.
func (l *core) Bits() uint64 { return l.nblocks * blockBits }

// K returns the number of bits each key sets: one per partition of a block.
func (l *core) K() int { return l.k }

// Blocks returns the number of 64-byte blocks.
func (l *core) Blocks() uint64 { return l.nblocks }

// Seed returns the hash seed.
func (l *core) Seed() uint64 { return l.seed }

// Capacity returns the number of keys the filter was sized for, or 0 when it
// was built from an explicit geometry.
func (l *core) Capacity() uint64 { return l.capacity }

// TargetFPR returns the false positive rate the filter was sized for, or 0
// when it was built from an explicit geometry.
func (l *core) TargetFPR() float64 { return l.targetFPR }

// FillRatio returns the fraction of bits that are set.
func (l *core) FillRatio() float64 {
	if l.nblocks == 0 {
		return 0
	}
	return float64(l.popcount()) / float64(l.Bits())
}

// EstimatedCount estimates the number of distinct keys added, from the number
// of set bits (not from a count of calls, so re-adding a key does not move
// it, and a union counts each key once). It returns math.MaxUint64 when
// every bit is set.
func (l *core) EstimatedCount() uint64 { return bitTable.estimateCount(l.popcount(), l.nblocks, l.k) }

// EstimatedFPR returns the probability that a key never added tests positive
// now. It is computed exactly from the bits: a key picks a block uniformly
// and a bit in each of its partitions, so the rate is the average over
// blocks of the product of the partitions' fill ratios. It reads every
// block.
func (l *core) EstimatedFPR() float64 { return l.exactFPR() }

// SizeBytes returns the memory the filter's bits occupy.
func (l *core) SizeBytes() uint64 { return l.nblocks * blockBytes }

func incompatible(a, b *core) error {
	return fmt.Errorf("%w: %d blocks k=%d seed=%#x vs %d blocks k=%d seed=%#x",
		ErrIncompatible, a.nblocks, a.k, a.seed, b.nblocks, b.k, b.seed)
}

// Union adds every key of other to f: f then answers true for any key either
// answered true for. The filters must have the same geometry and seed.
func (f *Filter) Union(other *Filter) error {
	if !f.compatible(&other.core) {
		return incompatible(&f.core, &other.core)
	}
	for i := range f.blocks {
		for w := range blockWords {
			f.blocks[i][w] |= other.blocks[i][w]
		}
	}
	return nil
}

// Intersect keeps in f only the bits also set in other. Every key added to
// both still tests positive; keys added to one only may or may not. The
// filters must have the same geometry and seed.
func (f *Filter) Intersect(other *Filter) error {
	if !f.compatible(&other.core) {
		return incompatible(&f.core, &other.core)
	}
	for i := range f.blocks {
		for w := range blockWords {
			f.blocks[i][w] &= other.blocks[i][w]
		}
	}
	return nil
}

// Clone returns an independent copy of f.
func (f *Filter) Clone() *Filter { return &Filter{f.clone()} }

// Reset clears every bit, keeping the geometry and the seed.
func (f *Filter) Reset() { clear(f.blocks) }

// Equal reports whether f and other have the same geometry, seed and bits,
// and so answer every Test alike. What they were sized for is not compared.
func (f *Filter) Equal(other *Filter) bool { return f.equalBits(&other.core) }

// ToAtomic returns an AtomicFilter holding a copy of f's bits. It costs one
// pass over f and as much memory again; build a Filter on one goroutine,
// then publish it with ToAtomic for concurrent use.
func (f *Filter) ToAtomic() *AtomicFilter { return &AtomicFilter{f.clone()} }

// bitsPerKey is the memory cost of the filter at its capacity.
func (l *core) bitsPerKey() float64 {
	if l.capacity == 0 {
		return math.NaN()
	}
	return float64(l.Bits()) / float64(l.capacity)
}
