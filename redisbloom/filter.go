package redisbloom

import (
	"fmt"

	"github.com/ohbloom/ohbloom/internal/sysmem"
)

// Filter is RedisBloom's scalable Bloom filter (its SBChain), bit for
// bit: it answers every test as RedisBloom does, false positives included,
// grows when and as RedisBloom grows, counts items and reports BF.INFO as
// it does, and reads and writes RedisBloom's BF.SCANDUMP chunks byte for
// byte. Use it to take over filters dumped from RedisBloom and to give
// them back; for new filters, ohbloom.Filter and ohbloom.ScalableFilter
// use less memory and one cache miss per key.
//
// # Chain
//
// A chain is a list of classic Bloom filters ("links"), oldest first, and
// options: Force64|NoRound for every chain RedisBloom
// creates, plus NoScaling for NONSCALING. Its first filter is
// sized for the reserved capacity at half the error rate (all of it when
// NONSCALING). Test answers yes if any filter has all the item's bits,
// newest first. Add does nothing for an item that tests present, and it is
// not counted; otherwise, if the newest filter holds as many items as its
// capacity, the chain grows (NONSCALING: ErrFull) by a filter of
// expansion times the newest one's capacity at half its error rate. The
// item's bits go to the newest filter, and it counts if one was clear.
//
// # Hashing and bits
//
// An item hashes once to (a, b) = (MurmurHash64A(item, 0xc6a4a7935bd1e995),
// MurmurHash64A(item, a)); without Force64 (old chains) the two
// are 32-bit MurmurHash2 with seeds 0x9747b28c and a; a chain whose header
// carries bf-hash-seed's configuration uses XXH3_64 with seeds s and
// s + 0x9e3779b97f4a7c15. A filter of m bits and k hashes probes
//
//	x_i = ((a + i·b) mod 2^64) mod m'    for i < k
//
// where m' = 2^n2 for a filter rounded to a power of two, else m' = m.
// Bit x is bit x mod 8 of byte x/8 of the filter's bytes.
//
// # Sizing
//
// A filter for n items at error rate e (bloom_init), in IEEE doubles:
//
//	bpe    = |ln(e) / 0.480453013918201|      (ln correctly rounded)
//	k      = ⌈0.693147180559945 · bpe⌉
//	m      = max(1, ⌊n · bpe⌋)                with NoRound, else
//	m      = 2^n2, n2 = logb(n·bpe) + 1, and the capacity grows by
//	         ⌊⌊m − n·bpe⌋ / bpe⌋
//	bytes  = ⌈m / 64⌉ · 8, and m becomes 8 · bytes
//
// # Dump
//
// BF.SCANDUMP iterator 0 returns iterator 1 and the header chunk; iterator
// i ≥ 1 returns up to MaxChunk bytes of the filters' bytes
// concatenated, from position i − 1, never crossing from one filter into
// the next, and iterator i + their length; past the end, iterator 0 and no
// bytes. BF.LOADCHUNK of a header creates the chain
// (NewFromHeader); of data, writes it so that it ends at position
// iterator − 2 (LoadChunk). The header chunk is RedisBloom's packed C
// structs, little-endian:
//
//	offset    size  field
//	     0       8  items in the chain (uint64), the sum of the filters'
//	     8       4  number of filters n (uint32, ≥ 1)
//	    12       4  options (uint32)
//	    16       4  expansion (uint32)
//	    20    53·n  per filter, oldest first:
//	                  +0  8  bytes (uint64)
//	                  +8  8  bits, 8 · bytes (uint64)
//	                 +16  8  items counted in it (uint64)
//	                 +24  8  error rate (float64)
//	                 +32  8  bits per entry, bpe (float64)
//	                 +40  4  hashes k (uint32)
//	                 +44  8  capacity (uint64)
//	                 +52  1  n2 (uint8), 0 unless a power of two
//	20+53·n     16  only with bf-hash-seed: version 1, seed (uint64 each)
//
// BF.INFO reports Capacity = Σ capacities, Size = 32 + Σ (64 + bytes),
// Number of filters, Number of items inserted, and Expansion rate (nil when
// NONSCALING).
//
// Each filter's bits are allocated when first written (by a chunk or an
// add), so a header alone costs no more memory than its own bytes.
//
// It is not safe for concurrent use; see AtomicFilter.
type Filter struct {
	bfChain
	links []bfLink
}

// bfLink is one filter of a chain.
type bfLink struct {
	bfParams
	items uint64   // SBLink.size
	words []uint64 // nil until first written
}

// New returns an empty chain as BF.RESERVE makes it.
func New(c Config) (*Filter, error) {
	ch, p, err := newBFChain(c)
	if err != nil {
		return nil, err
	}
	return &Filter{bfChain: ch, links: []bfLink{{bfParams: p, words: make([]uint64, p.words())}}}, nil
}

// NewFromHeader returns the chain a BF.LOADCHUNK of a header
// chunk (iterator 1) creates on an empty key, its bits all clear until the
// data chunks arrive through LoadChunk. It refuses a header that
// RedisBloom refuses (ErrBadData), and one whose filters would
// take more than maxBytes together (0: the machine's RAM plus swap), which
// also wraps ohbloom.ErrTooLarge; maxBytes then bounds the chain's growth too. It
// allocates nothing for the filters' bits.
func NewFromHeader(header []byte, maxBytes uint64) (*Filter, error) {
	h, err := decodeBFHeader(header, maxBytes)
	if err != nil {
		return nil, err
	}
	f := &Filter{bfChain: h.bfChain, links: make([]bfLink, len(h.params))}
	for i := range f.links {
		f.links[i] = bfLink{bfParams: h.params[i], items: h.items[i]}
	}
	return f, nil
}

// Add adds item as BF.ADD does and reports whether it was new (BF.ADD's 1):
// false for an item that tests present, which is not counted. It fails
// with ErrFull or ErrCannotGrow when the item needs a
// new filter that the chain cannot have; the chain is then unchanged.
func (f *Filter) Add(item []byte) (bool, error) {
	a, b := f.hasher.hash(item)
	return f.addHash(a, b)
}

// AddString is Add for a string item.
func (f *Filter) AddString(item string) (bool, error) {
	return f.Add(stringBytes(item))
}

// Hash returns the chain's hashes of item, the pair (a, b) every filter
// of the chain probes with. They depend on the chain's options and hash
// configuration, never on its filters, so they stay valid as it grows.
func (f *Filter) Hash(item []byte) (a, b uint64) { return f.hasher.hash(item) }

// AddHash is Add for the item whose Hash is (a, b). Replaying the pairs of
// a sequence of adds reaches the same bits, counts and growth as the adds.
func (f *Filter) AddHash(a, b uint64) (bool, error) { return f.addHash(a, b) }

// TestHash is Test for the item whose Hash is (a, b).
func (f *Filter) TestHash(a, b uint64) bool { return f.testHash(a, b) }

// addHash is SBChain_Add in one pass over the newest filter when it has
// room: the older filters are tested, then the item's bits are set in the
// newest, and it was present there exactly when none was clear, which
// changed nothing. That is RedisBloom's test-every-filter-then-add, without
// the newest filter's test, whose first cache miss would otherwise be
// waited out before the add's.
func (f *Filter) addHash(a, b uint64) (bool, error) {
	n := len(f.links)
	cur := &f.links[n-1]
	if cur.items >= cur.entries {
		if f.testHash(a, b) {
			return false, nil
		}
		next, err := f.nextLink(&cur.bfParams, n, f.totalBytes())
		if err != nil {
			return false, err
		}
		f.links = append(f.links, bfLink{bfParams: next, words: make([]uint64, next.words())})
		cur = &f.links[n]
	} else {
		for i := n - 2; i >= 0; i-- {
			if l := &f.links[i]; l.test(l.words, a, b) {
				return false, nil
			}
		}
		if cur.words == nil {
			if cur.test(nil, a, b) {
				return false, nil
			}
			cur.words = make([]uint64, cur.bfParams.words())
		}
	}
	if cur.add(cur.words, a, b) {
		cur.items++
		return true, nil
	}
	return false, nil
}

// Test reports whether item may be in the chain, as BF.EXISTS does.
func (f *Filter) Test(item []byte) bool {
	a, b := f.hasher.hash(item)
	return f.testHash(a, b)
}

// TestString is Test for a string item.
func (f *Filter) TestString(item string) bool { return f.Test(stringBytes(item)) }

func (f *Filter) testHash(a, b uint64) bool {
	for i := len(f.links) - 1; i >= 0; i-- {
		if l := &f.links[i]; l.test(l.words, a, b) {
			return true
		}
	}
	return false
}

func (f *Filter) totalBytes() uint64 {
	var n uint64
	for i := range f.links {
		n += f.links[i].bytes
	}
	return n
}

func (f *Filter) link(i int) (*bfParams, uint64) {
	return &f.links[i].bfParams, f.links[i].items
}

func (f *Filter) bytesOf(i int) uint64 { return f.links[i].bytes }

// Info returns what BF.INFO reports.
func (f *Filter) Info() Info { return f.infoOf(len(f.links), f.link) }

// Link returns filter i of the chain, oldest first (i < Info().Filters),
// as BF.DEBUG shows it.
func (f *Filter) Link(i int) Link { return f.links[i].info(f.links[i].items) }

// Options returns the chain's option bits (NoRound etc.).
func (f *Filter) Options() uint32 { return f.options }

// SetMaxBytes bounds the bytes of all the chain's filters from now on:
// growth past it fails. 0 means the machine's RAM plus swap.
func (f *Filter) SetMaxBytes(n uint64) {
	if n == 0 {
		n = sysmem.RAMPlusSwap()
	}
	f.maxBytes = n
}

// ScanDump is BF.SCANDUMP: for iterator iter it appends the chunk's bytes
// to dst and returns the next iterator and the extended slice. Iterator 0
// gives the header and 1; the last chunk is followed by iterator 0 and no
// bytes.
func (f *Filter) ScanDump(iter int64, dst []byte) (int64, []byte) {
	if iter == 0 {
		return 1, encodeBFHeader(dst, &f.bfChain, len(f.links), f.link)
	}
	if iter < 1 {
		return 0, dst
	}
	i, off, ok := findBFLink(len(f.links), f.bytesOf, uint64(iter)-1)
	if !ok {
		return 0, dst
	}
	l := &f.links[i]
	n := min(MaxChunk, l.bytes-off)
	return iter + int64(n), appendWordBytes(dst, l.words, off, n)
}

// LoadChunk is BF.LOADCHUNK of a data chunk into an existing chain: data
// replaces the bytes ending at position iter−2 of the filters' bits. It
// fails, changing nothing, as RedisBloom does: ErrBadData when
// iter ≤ 0 or iter < len(data), ErrNoLink when the chunk starts
// past the filters, ErrChunkTooBig when it runs past the end of
// the filter it starts in. A header chunk (iterator 1) for an existing key
// goes here too, and fails as it does in RedisBloom.
func (f *Filter) LoadChunk(iter int64, data []byte) error {
	i, off, err := chunkTarget(len(f.links), f.bytesOf, iter, len(data))
	if err != nil || len(data) == 0 {
		return err
	}
	l := &f.links[i]
	if l.words == nil {
		l.words = make([]uint64, l.bfParams.words())
	}
	storeWordBytes(l.words, off, data)
	return nil
}

// Equal reports whether two chains have the same options, growth, hash,
// filters, counts and bits: whether their dumps are the same bytes.
func (f *Filter) Equal(o *Filter) bool {
	if f.options != o.options || f.growth != o.growth || f.hasher != o.hasher || len(f.links) != len(o.links) {
		return false
	}
	for i := range f.links {
		a, b := &f.links[i], &o.links[i]
		if a.bfParams != b.bfParams || a.items != b.items || !equalBFWords(a.words, b.words) {
			return false
		}
	}
	return true
}

// equalBFWords compares two filters' words, nil being all zeros.
func equalBFWords(a, b []uint64) bool {
	if a == nil {
		a, b = b, a
	}
	for i, w := range a {
		var v uint64
		if b != nil {
			v = b[i]
		}
		if w != v {
			return false
		}
	}
	return true
}

// String describes the chain briefly.
func (f *Filter) String() string {
	in := f.Info()
	return fmt.Sprintf("RedisBloom chain: %d filters, %d items, capacity %d, %d bytes", in.Filters, in.Items, in.Capacity, in.Size)
}
