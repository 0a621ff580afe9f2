package ohbloom

import (
	"sync/atomic"

	"github.com/zeebo/xxh3"
)

// AtomicFilter is a Filter that is safe for concurrent use by multiple
// goroutines: any number may Add and Test at once, without locks. Every
// word is read with an atomic load and set with an atomic OR, and a key whose
// bits are already set writes nothing, so re-adding hot keys does not bounce
// cache lines between cores. Once Add returns, Test of that key returns true
// in every goroutine.
//
// Methods that read the whole filter (FillRatio, EstimatedCount, Equal,
// WriteTo, ...) may run during Adds; they then see some of the concurrent
// keys and not others. Union, Intersect and Reset are safe to call
// concurrently too, word by word; UnmarshalBinary and ReadFrom replace the
// whole filter and must not run concurrently with anything.
//
// The zero AtomicFilter is not usable; build one with NewAtomic,
// NewAtomicWithConfig or Filter.ToAtomic.
type AtomicFilter struct {
	core
}

// NewAtomic is New for an AtomicFilter: sized for n keys at rate p, with the
// DefaultSeed, panicking on invalid parameters.
func NewAtomic[P Rate](n uint64, p P) *AtomicFilter {
	f, err := NewAtomicWithConfig(Config{Capacity: n, FPR: float64(p)})
	if err != nil {
		panic(constructorPanic("NewAtomic", n, float64(p), err))
	}
	return f
}

// NewAtomicWithConfig is NewWithConfig for an AtomicFilter.
func NewAtomicWithConfig(c Config) (*AtomicFilter, error) {
	f, err := NewWithConfig(c)
	if err != nil {
		return nil, err
	}
	return &AtomicFilter{f.core}, nil
}

// Add inserts key. A key whose bits are all set writes nothing. A new key
// costs atomic ORs, all issued after one read of its bits: each is a full
// fence on amd64, which holds back every later load, so a read between two
// of them would wait for the first. The vector probe issues one for each
// of the block's words that lacks a bit, the generated probes one per
// partition (see gen_probes.go). Add is one call, inlined into its caller,
// as Filter.Add is (keyAtomicAdd).
func (f *AtomicFilter) Add(key []byte) {
	keyAtomicAdd(f.raw(), bytesData(key), len(key))
}

// AddString inserts key, without converting it to a byte slice.
func (f *AtomicFilter) AddString(key string) {
	keyAtomicAdd(f.raw(), stringData(key), len(key))
}

// atomicAddKey hashes the n bytes at p and adds them to l, as addKey does
// for Filter.
func atomicAddKey(l *core, p *byte, n int) {
	h := xxh3.HashSeed(bytesAt(p, n), l.seed)
	l.atomicAddBits(l.blockOf(h), residue(h))
}

// Test reports whether key may be in the filter.
func (f *AtomicFilter) Test(key []byte) bool {
	h := xxh3.HashSeed(key, f.seed)
	return f.atomicTestBits(f.blockOf(h), residue(h))
}

// TestString is Test for a string key. It views the string's bytes,
// which Test only reads, and inlines into its caller.
func (f *AtomicFilter) TestString(key string) bool { return f.Test(stringBytes(key)) }

// HashTest is Test that also returns the key's Hash, in one call, for
// wrappers that sample or route by the hash (the metrics collector) and
// would otherwise pay a second call to get it.
func (f *AtomicFilter) HashTest(key []byte) (h uint64, present bool) {
	h = xxh3.HashSeed(key, f.seed)
	return h, f.atomicTestBits(f.blockOf(h), residue(h))
}

// HashTestString is HashTest for a string key, viewing its bytes as
// TestString does.
func (f *AtomicFilter) HashTestString(key string) (h uint64, present bool) {
	return f.HashTest(stringBytes(key))
}

// TestAndAdd adds key and reports whether it may have been present before,
// as Filter.TestAndAdd does. When several goroutines add the same new key at once, at least one of them
// gets false: a goroutine writes only when its read of the block found a
// bit missing, and then it returns false.
func (f *AtomicFilter) TestAndAdd(key []byte) bool {
	return f.testAndAddHash(xxh3.HashSeed(key, f.seed))
}

// TestAndAddString is TestAndAdd for a string key.
func (f *AtomicFilter) TestAndAddString(key string) bool {
	return f.testAndAddHash(xxh3.HashStringSeed(key, f.seed))
}

// orMissing sets the bits m in *p with at most one atomic OR, and none when
// they are all set already.
func orMissing(p *uint64, m uint64) {
	if atomic.LoadUint64(p)&m != m {
		atomic.OrUint64(p, m)
	}
}

// testAndAddHash adds the key whose hash is h. Either probe writes only
// when its read of the block found a bit missing, and then reports false.
func (f *AtomicFilter) testAndAddHash(h uint64) bool {
	return f.atomicAddBits(f.blockOf(h), residue(h))
}

// Union adds every key of other to f, word by word with atomic ORs, so it
// may run while other goroutines use f. The filters must have the same
// geometry and seed.
func (f *AtomicFilter) Union(other *AtomicFilter) error {
	if !f.compatible(&other.core) {
		return incompatible(&f.core, &other.core)
	}
	for i := range f.blocks {
		for w := range blockWords {
			if m := atomic.LoadUint64(&other.blocks[i][w]); m != 0 {
				atomic.OrUint64(&f.blocks[i][w], m)
			}
		}
	}
	return nil
}

// Intersect keeps in f only the bits also set in other, word by word with
// atomic ANDs. A key added to f concurrently may lose bits and so be
// forgotten: do not Add during Intersect.
func (f *AtomicFilter) Intersect(other *AtomicFilter) error {
	if !f.compatible(&other.core) {
		return incompatible(&f.core, &other.core)
	}
	for i := range f.blocks {
		for w := range blockWords {
			atomic.AndUint64(&f.blocks[i][w], atomic.LoadUint64(&other.blocks[i][w]))
		}
	}
	return nil
}

// Clone returns an independent copy of f. Keys added during the copy may or
// may not be in it.
func (f *AtomicFilter) Clone() *AtomicFilter { return &AtomicFilter{f.clone()} }

// Reset clears every bit, word by word with atomic stores. Keys added during
// a Reset may or may not survive it.
func (f *AtomicFilter) Reset() {
	for i := range f.blocks {
		for w := range blockWords {
			atomic.StoreUint64(&f.blocks[i][w], 0)
		}
	}
}

// Equal reports whether f and other have the same geometry, seed and bits.
func (f *AtomicFilter) Equal(other *AtomicFilter) bool { return f.equalBits(&other.core) }

// ToPlain returns a Filter holding a copy of f's bits, for single-goroutine
// use or for comparing against one. Keys added during the copy may or may
// not be in it.
func (f *AtomicFilter) ToPlain() *Filter { return &Filter{f.clone()} }
