package ohbloom

import (
	"io"
	"sync/atomic"

	"github.com/zeebo/xxh3"
)

// AtomicCountingFilter is a CountingFilter safe for concurrent use by
// multiple goroutines, without locks: each 64-bit word of counters changes
// by compare-and-swap, one CAS per touched word, and never past 15 or below
// 0. Adds and Removes of different keys, and Adds of the same key, commute:
// run concurrently they leave the counters a sequential run would (while no
// counter saturates). A Remove checks the key is present, then decrements;
// two concurrent Removes of a key added once may both pass the check, and
// the second then decrements counters other keys share, as removing a key
// that was never added does.
type AtomicCountingFilter struct {
	countingCore
}

// NewAtomicCounting is NewCounting for an AtomicCountingFilter.
func NewAtomicCounting[P Rate](n uint64, p P) *AtomicCountingFilter {
	f, err := NewAtomicCountingWithConfig(Config{Capacity: n, FPR: float64(p)})
	if err != nil {
		panic(constructorPanic("NewAtomicCounting", n, float64(p), err))
	}
	return f
}

// NewAtomicCountingWithConfig is NewCountingWithConfig for an
// AtomicCountingFilter.
func NewAtomicCountingWithConfig(c Config) (*AtomicCountingFilter, error) {
	l, err := newCountingLayout(c)
	if err != nil {
		return nil, err
	}
	return &AtomicCountingFilter{l}, nil
}

// wordMasks returns, for each word of the block, the low bit of each of
// the hash's counters in it.
func (l *countingCore) wordMasks(h uint64) (*block, block) {
	b, cs := l.counters(h)
	var m block
	for _, c := range cs[:l.k] {
		m[c/16] |= 1 << (4 * (c % 16))
	}
	return b, m
}

// step adds delta (+1 or −1) to the counters of p marked in ones, skipping
// counters at 15 and, for −1, at 0; one CAS, retried on contention. It
// returns the word as it was just before its change.
func step(p *uint64, ones uint64, up bool) (was uint64) {
	for {
		old := atomic.LoadUint64(p)
		const low = 0x1111111111111111
		full := old & (old >> 1) & (old >> 2) & (old >> 3) & low
		live := ones &^ full
		var next uint64
		if up {
			next = old + live
		} else {
			empty := ^(old | old>>1 | old>>2 | old>>3) & low
			next = old - (live &^ empty)
		}
		if next == old || atomic.CompareAndSwapUint64(p, old, next) {
			return old
		}
	}
}

// Add counts key in.
func (f *AtomicCountingFilter) Add(key []byte) { f.addHash(xxh3.HashSeed(key, f.seed)) }

// AddString is Add for a string key.
func (f *AtomicCountingFilter) AddString(key string) {
	f.addHash(xxh3.HashStringSeed(key, f.seed))
}

func (f *AtomicCountingFilter) addHash(h uint64) { f.atomicAdd(h) }

// atomicAdd is AtomicCountingFilter's add, on the core for the batched
// calls.
func (l *countingCore) atomicAdd(h uint64) {
	b, m := l.wordMasks(h)
	for w, ones := range m {
		if ones != 0 {
			step(&b[w], ones, true)
		}
	}
}

// Remove counts key out, as CountingFilter.Remove does.
func (f *AtomicCountingFilter) Remove(key []byte) error {
	return f.removeHash(xxh3.HashSeed(key, f.seed))
}

// RemoveString is Remove for a string key.
func (f *AtomicCountingFilter) RemoveString(key string) error {
	return f.removeHash(xxh3.HashStringSeed(key, f.seed))
}

func (f *AtomicCountingFilter) removeHash(h uint64) error {
	if !f.testHash(h) {
		return ErrNotPresent
	}
	b, m := f.wordMasks(h)
	for w, ones := range m {
		if ones != 0 {
			step(&b[w], ones, false)
		}
	}
	return nil
}

// AddHash counts in the key whose Hash is h.
func (f *AtomicCountingFilter) AddHash(h uint64) { f.addHash(h) }

// RemoveHash counts out the key whose Hash is h, as Remove does.
func (f *AtomicCountingFilter) RemoveHash(h uint64) error { return f.removeHash(h) }

// Test reports whether key may be in the filter.
func (f *AtomicCountingFilter) Test(key []byte) bool {
	return f.testHash(xxh3.HashSeed(key, f.seed))
}

// TestString is Test for a string key.
func (f *AtomicCountingFilter) TestString(key string) bool {
	return f.testHash(xxh3.HashStringSeed(key, f.seed))
}

// Equal reports whether f and other have the same geometry, seed and
// counters.
func (f *AtomicCountingFilter) Equal(other *AtomicCountingFilter) bool {
	return f.equal(&other.countingCore)
}

// ToPlain returns a CountingFilter holding a copy of f's counters.
func (f *AtomicCountingFilter) ToPlain() *CountingFilter {
	c := f.countingCore
	c.blocks = alignedBlocks(f.nblocks)
	for i := range f.blocks {
		for w := range blockWords {
			c.blocks[i][w] = atomic.LoadUint64(&f.blocks[i][w])
		}
	}
	return &CountingFilter{c}
}

// WriteTo writes the filter as CountingFilter.WriteTo does.
func (f *AtomicCountingFilter) WriteTo(w io.Writer) (int64, error) {
	return writeBlocks(w, f.header(), f.blocks)
}

// ReadFrom replaces f as CountingFilter.ReadFrom does; it must not run
// concurrently with any other method.
func (f *AtomicCountingFilter) ReadFrom(r io.Reader) (int64, error) {
	h, blocks, n, err := readBlocks(r, kindCounting)
	if err == nil {
		f.countingCore = h.countingCore(blocks)
	}
	return n, err
}
