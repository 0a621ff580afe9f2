// Package classic reads, answers and writes the Bloom filters of two
// libraries whose filters many services already store, bit for bit:
// github.com/bits-and-blooms/bloom/v3 and Guava's BloomFilter (strategy
// MURMUR128_MITZ_64). Both are unblocked filters with double hashing on
// MurmurHash3, so a key costs k cache misses once a filter outgrows the
// caches; new filters should use package ohbloom's one-hash filters.
// Errors about sizes and bytes wrap the sentinels of package ohbloom
// (ohbloom.ErrInvalidConfig, ohbloom.ErrTooLarge, ohbloom.ErrCorrupt,
// ohbloom.ErrTruncated).
package classic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/internal/stream"
	"github.com/ohbloom/ohbloom/internal/sysmem"
)

// Strategy names a classic filter's hashing and byte format, each exactly
// that of a library whose filters are already stored in many services.
type Strategy int

const (
	// BitsAndBlooms is github.com/bits-and-blooms/bloom/v3: MurmurHash3
	// x64-128 of the key and of the key followed by 0x01 give h0..h3, and
	// hash i is (h[i%2] + i·h[2+((i+i%2)%4)/2]) mod m. WriteTo writes m, k
	// and the bitset's length as big-endian uint64s, then ⌈m/64⌉ big-endian
	// words, bit j in word j/64 at bit j%64.
	BitsAndBlooms Strategy = 1
	// Guava is Guava's BloomFilter with strategy
	// MURMUR128_MITZ_64: MurmurHash3 x64-128 of the funneled key gives
	// (h1, h2), and hash i is ((h1 + i·h2) & MaxInt64) mod m, m a multiple
	// of 64. writeTo writes the strategy's ordinal (1) and k as bytes, the
	// number of words as a big-endian int32, then the big-endian words.
	// Keys are the bytes Guava's funnels put: byteArrayFunnel the bytes,
	// stringFunnel(UTF_8) the UTF-8 of the string, longFunnel the 8
	// little-endian bytes of the long (AddUint64).
	Guava Strategy = 2
)

// String names the strategy.
func (s Strategy) String() string {
	switch s {
	case BitsAndBlooms:
		return "bits-and-blooms"
	case Guava:
		return "guava MURMUR128_MITZ_64"
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// ErrUnknownStrategy is returned for a strategy this package does not
// implement, or a Guava stream that names one.
var ErrUnknownStrategy = errors.New("ohbloom: unknown classic filter strategy")

// maxBits bounds a classic filter: 2^40 bits, 128 GiB.
const maxBits = 1 << 40

// maxGuavaWords is Guava's limit: its LockFreeBitArray holds the bits in a
// long[] of at most 2^31−1 words, and writeTo records the count as an int.
const maxGuavaWords = math.MaxInt32

// maxK bounds k: bits-and-blooms accepts any k, but every Add costs
// k probes, and 2^32 is already over a minute each. Guava's k is a byte.
const maxK = 1 << 32

// checkGuavaWords refuses a Guava filter of more words than Guava holds, so
// that its header's word count can never wrap.
func checkGuavaWords(words uint64) error {
	if words > maxGuavaWords {
		return fmt.Errorf("%w: %d words, Guava holds at most %d (2^31−1)", ohbloom.ErrTooLarge, words, maxGuavaWords)
	}
	return nil
}

// Filter is an unblocked Bloom filter with double hashing whose bits,
// answers and bytes are exactly those of another library's filter (see
// Strategy), so that filters stored by bits-and-blooms/bloom or by Guava can
// be read, queried, extended and written back. Each key costs k cache
// misses once the filter outgrows the caches; for new filters, prefer
// ohbloom.Filter. It is not safe for concurrent use.
//
// A bits-and-blooms filter keeps its bits in a bitset whose length need
// not be m (bloom.FromWithM gives one of 64 bits per word, bloom.New(0, k)
// one of 0 bits with m = 1): a position at or past the length tests clear,
// and adding it extends the bitset to it, as the bitset package does. The
// length is written back as read.
type Filter struct {
	strategy Strategy
	m, k     uint64
	length   uint64 // the bitset's length in bits; len(words) = ⌈length/64⌉
	words    []uint64
}

// New returns an empty classic filter of m bits and k hashes. For
// Guava, m is rounded up to a multiple of 64, as Guava does,
// and may not exceed Guava's 2^31−1 words (ohbloom.ErrTooLarge); k is at most 255.
func New(s Strategy, m, k uint64) (*Filter, error) {
	if s != BitsAndBlooms && s != Guava {
		return nil, fmt.Errorf("%w: %v", ErrUnknownStrategy, s)
	}
	if m == 0 || m > maxBits {
		return nil, fmt.Errorf("%w: m = %d bits, want 1 to %d", ohbloom.ErrInvalidConfig, m, uint64(maxBits))
	}
	if k == 0 || s == Guava && k > 255 || k > maxK {
		return nil, fmt.Errorf("%w: k = %d", ohbloom.ErrInvalidConfig, k)
	}
	words := (m + 63) / 64
	if s == Guava {
		if err := checkGuavaWords(words); err != nil {
			return nil, err
		}
		m = words * 64
	}
	if mem := sysmem.RAMPlusSwap(); words*8 > mem {
		return nil, fmt.Errorf("%w: %d bits, the machine has %d bytes", ohbloom.ErrTooLarge, m, mem)
	}
	return &Filter{strategy: s, m: m, k: k, length: m, words: make([]uint64, words)}, nil
}

// NewWithEstimates sizes a classic filter for n keys at rate p the
// way its library does: bits-and-blooms' EstimateParameters (m = ⌈−n ln p /
// ln²2⌉, k = ⌈ln 2 · m/n⌉), or Guava's BloomFilter.create (m = ⌊−n ln p /
// ln²2⌋ rounded up to 64, k = round(m/n · ln 2)). For 5,000,000 keys at 1%
// Guava 31.1 computes m = 47,925,291 bits (47,925,312 stored in 748,833
// words) and k = 7, checked against the real Guava; the figure 47,962,029
// that circulates for this example is not what Guava computes. Guava takes
// n = 0 as 1, and so does this for Guava; bits-and-blooms'
// k is undefined for n = 0 (a NaN converted to an integer), which is
// refused.
func NewWithEstimates(s Strategy, n uint64, p float64) (*Filter, error) {
	if n == 0 && s == Guava {
		n = 1
	}
	if n == 0 || !(p > 0 && p < 1) {
		return nil, fmt.Errorf("%w: n = %d, p = %v", ohbloom.ErrInvalidConfig, n, p)
	}
	nf := float64(n)
	bitsNeeded := -nf * math.Log(p) / (math.Ln2 * math.Ln2)
	if bitsNeeded > maxBits {
		return nil, fmt.Errorf("%w: %.0f bits", ohbloom.ErrTooLarge, bitsNeeded)
	}
	var m, k uint64
	switch s {
	case BitsAndBlooms:
		m = uint64(math.Ceil(bitsNeeded))
		k = uint64(math.Ceil(math.Ln2 * float64(m) / nf))
	case Guava:
		m = uint64(bitsNeeded)
		k = uint64(max(1, math.Round(float64(m)/nf*math.Ln2)))
	default:
		return nil, fmt.Errorf("%w: %v", ErrUnknownStrategy, s)
	}
	return New(s, m, k)
}

// Strategy returns the filter's strategy.
func (f *Filter) Strategy() Strategy { return f.strategy }

// Bits returns the number of bits.
func (f *Filter) Bits() uint64 { return f.m }

// Hashes returns the number of hashes per key.
func (f *Filter) Hashes() uint64 { return f.k }

// Add inserts key.
func (f *Filter) Add(key []byte) { f.probe(key, true) }

// AddString inserts key (for Guava, as stringFunnel(UTF_8) puts it).
func (f *Filter) AddString(key string) { f.probe([]byte(key), true) }

// AddUint64 inserts v as Guava's longFunnel puts a long: its 8
// little-endian bytes.
func (f *Filter) AddUint64(v uint64) {
	f.probe(binary.LittleEndian.AppendUint64(make([]byte, 0, 8), v), true)
}

// Test reports whether key may be in the filter, as the library would.
func (f *Filter) Test(key []byte) bool { return f.probe(key, false) }

// TestString is Test for a string key.
func (f *Filter) TestString(key string) bool { return f.probe([]byte(key), false) }

// TestUint64 is Test for a long put by Guava's longFunnel.
func (f *Filter) TestUint64(v uint64) bool {
	return f.probe(binary.LittleEndian.AppendUint64(make([]byte, 0, 8), v), false)
}

// probe sets (add) or tests the key's k bits and reports whether they were
// all set. A test stops at the first clear bit, as both libraries do.
func (f *Filter) probe(key []byte, add bool) bool {
	present := true
	switch f.strategy {
	case BitsAndBlooms:
		var h [4]uint64
		h[0], h[1], h[2], h[3] = murmur3Pair(key)
		for i := range f.k {
			bit := (h[i%2] + i*h[2+((i+i%2)%4)/2]) % f.m
			if bit >= f.length {
				if present = false; !add {
					break
				}
				f.extend(bit + 1)
			}
			if w, mask := bit/64, uint64(1)<<(bit%64); f.words[w]&mask == 0 {
				if present = false; !add {
					break
				}
				f.words[w] |= mask
			}
		}
	case Guava:
		h1, h2 := murmur3(key)
		for range f.k {
			bit := (h1 & math.MaxInt64) % f.m
			if w, mask := bit/64, uint64(1)<<(bit%64); f.words[w]&mask == 0 {
				if present = false; !add {
					break
				}
				f.words[w] |= mask
			}
			h1 += h2
		}
	}
	return present
}

// extend grows a bits-and-blooms bitset to length bits, as the bitset
// package's Set does past its length: the new words are zero, and bits
// beyond the old length in its last word, which the stream may have had
// set, come into view.
func (f *Filter) extend(length uint64) {
	f.length = length
	if words := (length + 63) / 64; words > uint64(len(f.words)) {
		f.words = append(f.words, make([]uint64, words-uint64(len(f.words)))...)
	}
}

// FillRatio returns the fraction of the m bits set, counting only the
// bits that tests can see: those below m and the bitset's length.
func (f *Filter) FillRatio() float64 {
	end := min(f.m, f.length)
	n := 0
	for i, w := range f.words[:(end+63)/64] {
		if rest := end - uint64(i)*64; rest < 64 {
			w &= 1<<rest - 1
		}
		n += bits.OnesCount64(w)
	}
	return float64(n) / float64(f.m)
}

// Equal reports whether two classic filters have the same strategy, size, k,
// bitset length and bits.
func (f *Filter) Equal(o *Filter) bool {
	if f.strategy != o.strategy || f.m != o.m || f.k != o.k || f.length != o.length {
		return false
	}
	for i, w := range f.words {
		if o.words[i] != w {
			return false
		}
	}
	return true
}

// WriteTo writes the filter in its library's format (see Strategy). A
// Guava filter beyond Guava's 2^31−1 words is refused with ohbloom.ErrTooLarge
// before anything is written.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	var head []byte
	switch f.strategy {
	case BitsAndBlooms:
		head = binary.BigEndian.AppendUint64(head, f.m)
		head = binary.BigEndian.AppendUint64(head, f.k)
		head = binary.BigEndian.AppendUint64(head, f.length)
	case Guava:
		if err := checkGuavaWords(uint64(len(f.words))); err != nil {
			return 0, err
		}
		head = append(head, 1, byte(f.k))
		head = binary.BigEndian.AppendUint32(head, uint32(len(f.words)))
	}
	n, err := w.Write(head)
	written := int64(n)
	if err != nil {
		return written, err
	}
	buf := make([]byte, 0, stream.Chunk)
	for i := 0; i < len(f.words); {
		buf = buf[:0]
		for ; i < len(f.words) && len(buf) < stream.Chunk; i++ {
			buf = binary.BigEndian.AppendUint64(buf, f.words[i])
		}
		n, err := w.Write(buf)
		written += int64(n)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// Read reads a filter written by the library of strategy s (or by
// WriteTo), reading exactly its bytes. It reads what that library's own
// reader reads, with the same answers: for bits-and-blooms a bitset length
// other than m, k up to 2^32 (k = 0 tests every key present, as there);
// for Guava 1 to 2^31−1 words and k from 1 to 255. It refuses m = 0, which
// bits-and-blooms reads and then divides by, and a bitset shorter than m
// whose growth to m bits the machine could not hold. Its memory grows with
// the data that arrives, never with what a header claims: each allocation
// is at most 16 times the bytes received, so a valid stream peaks at 1/16
// over the filter's size.
func Read(r io.Reader, s Strategy) (*Filter, int64, error) {
	in := &stream.Reader{R: r, Short: ohbloom.ErrTruncated}
	fill := in.Fill
	var m, k, length uint64
	switch s {
	case BitsAndBlooms:
		var head [24]byte
		if err := fill(head[:]); err != nil {
			return nil, in.N, err
		}
		m, k = binary.BigEndian.Uint64(head[:]), binary.BigEndian.Uint64(head[8:])
		length = binary.BigEndian.Uint64(head[16:])
		if m == 0 || m > maxBits || k > maxK {
			return nil, in.N, fmt.Errorf("%w: m = %d bits, k = %d", ohbloom.ErrCorrupt, m, k)
		}
		if mem := sysmem.RAMPlusSwap(); length < m && (m+63)/64*8 > mem {
			return nil, in.N, fmt.Errorf("%w: %w: a bitset of %d bits may grow to m = %d, the machine has %d bytes", ohbloom.ErrCorrupt, ohbloom.ErrTooLarge, length, m, mem)
		}
	case Guava:
		var head [6]byte
		if err := fill(head[:]); err != nil {
			return nil, in.N, err
		}
		if head[0] != 1 {
			return nil, in.N, fmt.Errorf("%w: Guava strategy ordinal %d, only 1 (MURMUR128_MITZ_64) is supported", ErrUnknownStrategy, head[0])
		}
		k = uint64(head[1])
		n := int32(binary.BigEndian.Uint32(head[2:]))
		if n <= 0 || k == 0 {
			return nil, in.N, fmt.Errorf("%w: %d words, k = %d", ohbloom.ErrCorrupt, n, k)
		}
		m = uint64(n) * 64
		length = m
	default:
		return nil, 0, fmt.Errorf("%w: %v", ErrUnknownStrategy, s)
	}
	f := &Filter{strategy: s, m: m, k: k, length: length}
	words := length/64 + min(1, length%64)
	buf := make([]byte, stream.Chunk)
	for done := uint64(0); done < words; {
		if done == uint64(len(f.words)) {
			grown := make([]uint64, stream.NextAlloc(done, words, stream.FirstAlloc/8))
			copy(grown, f.words)
			f.words = grown
		}
		n := min(uint64(len(f.words))-done, stream.Chunk/8)
		chunk := buf[:n*8]
		if err := fill(chunk); err != nil {
			return nil, in.N, err
		}
		for i := range n {
			f.words[done+i] = binary.BigEndian.Uint64(chunk[i*8:])
		}
		done += n
	}
	return f, in.N, nil
}

// MarshalBinary returns the filter in its library's format.
func (f *Filter) MarshalBinary() ([]byte, error) {
	var b writerBuffer
	_, err := f.WriteTo(&b)
	return b, err
}

// writerBuffer is an io.Writer appending to a slice.
type writerBuffer []byte

func (w *writerBuffer) Write(p []byte) (int, error) {
	*w = append(*w, p...)
	return len(p), nil
}
