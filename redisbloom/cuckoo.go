package redisbloom

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/ohbloom/ohbloom/internal/sysmem"
)

// RedisBloom's limits and defaults for cuckoo filters (cuckoo.h, rebloom.c).
const (
	// CuckooDefaultCapacity is the capacity of a filter that CF.ADD or
	// CF.INSERT creates without a reservation (CFDefaultInitCapacity).
	CuckooDefaultCapacity = 1024
	// CuckooDefaultBucketSize is CF.RESERVE's default BUCKETSIZE.
	CuckooDefaultBucketSize = 2
	// CuckooDefaultMaxIterations is CF.RESERVE's default MAXITERATIONS.
	CuckooDefaultMaxIterations = 20
	// CuckooDefaultExpansion is CF.RESERVE's default EXPANSION.
	CuckooDefaultExpansion = 1
	// CuckooDefaultMaxExpansions is RedisBloom's cf_max_expansions: CF.ADD,
	// CF.ADDNX, CF.INSERT and CF.INSERTNX refuse a filter that has this many
	// sub-filters ("Maximum expansions reached"). The filter types here do
	// not apply it; a server checks Info().Filters before adding.
	CuckooDefaultMaxExpansions = 32

	CuckooMaxBucketSize        = 255                // BUCKETSIZE is 1 to this
	CuckooMaxIterations        = 65535              // MAXITERATIONS is 1 to this
	CuckooMaxExpansion         = 32768              // EXPANSION is 0 to this
	CuckooMaxFilters           = 65535              // sub-filters of one filter
	CuckooMaxBuckets           = 1<<56 - 1          // buckets of one sub-filter
	CuckooHeaderSize           = 38                 // bytes of a CF.SCANDUMP header chunk
	CuckooMaxChunk             = 16 << 20           // most data bytes of one CF.SCANDUMP chunk (MAX_SCANDUMP_SIZE)
	CuckooRDBEncVer            = 4                  // the encoding version RedisBloom registers MBbloomCF with
	CuckooRDBTypeName          = "MBbloomCF"        // the RDB module type's name
	CuckooRDBModuleID          = 0x3016e5a289821404 // the RDB module id of MBbloomCF at encoding version 4
	cfAltMul                   = 0x5bd1e995         // the alternate bucket's multiplier (getAltHash)
	cfStructSize               = 40                 // sizeof(CuckooFilter) in RedisBloom's 64-bit build
	cfSubStructSize            = 16                 // sizeof(SubCF)
	cfCompactRatio             = 0.10               // a delete compacts when deletes exceed this share of the items
	cfOnes              uint64 = 0x0101010101010101
	cfLow7              uint64 = 0x7f7f7f7f7f7f7f7f
)

// Errors of cuckoo filters. Each says which reply RedisBloom gives in that
// case, so that a server can answer as it does.
var (
	// ErrCuckooFull: no room for the item, even after kick-outs, and the
	// filter does not grow (expansion 0). RedisBloom replies "Filter is
	// full" (CF.ADD) or -1 (CF.INSERT).
	ErrCuckooFull = errors.New("redisbloom: cuckoo filter is full")
	// ErrCuckooCannotGrow: no room for the item and the sub-filter it needs
	// cannot be made: 65,535 sub-filters already, more than 2^56 − 1
	// buckets, or past the filter's byte limit. RedisBloom replies "ERR
	// Insufficient memory" (its CuckooInsert_MemAllocFailed).
	ErrCuckooCannotGrow = errors.New("redisbloom: cuckoo filter cannot grow")
	// ErrCuckooConfig: a CuckooConfig outside RedisBloom's bounds.
	ErrCuckooConfig = errors.New("redisbloom: invalid cuckoo filter configuration")
	// ErrCuckooTooLarge: a filter, or a sub-filter to add, past a byte limit
	// or past RedisBloom's bucket count limit. RedisBloom replies "ERR
	// Insufficient memory to create filter" to such a CF.RESERVE.
	ErrCuckooTooLarge = errors.New("redisbloom: cuckoo filter too large")
	// ErrCuckooHeaderSize: a header chunk that is not CuckooHeaderSize
	// bytes. RedisBloom replies "Invalid header".
	ErrCuckooHeaderSize = errors.New("redisbloom: cuckoo filter header of the wrong size")
	// ErrCuckooBadHeader: a header chunk that describes no filter
	// RedisBloom makes, or one larger than the caller's limit (which also
	// wraps ErrCuckooTooLarge). RedisBloom replies "Couldn't create filter!".
	ErrCuckooBadHeader = errors.New("redisbloom: invalid cuckoo filter header")
	// ErrCuckooBadChunk: a data chunk that is empty or does not fit where
	// its iterator puts it. RedisBloom replies "Couldn't load chunk!".
	ErrCuckooBadChunk = errors.New("redisbloom: invalid cuckoo filter chunk")
	// ErrCuckooBadRDB: an MBbloomCF RDB value that is truncated, corrupt,
	// of an unknown encoding version, or larger than the caller's limit
	// (which also wraps ErrCuckooTooLarge).
	ErrCuckooBadRDB = errors.New("redisbloom: invalid MBbloomCF RDB value")
)

// CuckooConfig is what CF.RESERVE gives a new cuckoo filter. Every field
// must be set: DefaultCuckooConfig gives RedisBloom's defaults.
type CuckooConfig struct {
	// Capacity sets the first sub-filter's bucket count: Capacity /
	// BucketSize rounded up to a power of two. At least 2·BucketSize.
	Capacity uint64
	// BucketSize is the number of one-byte slots of a bucket, 1 to 255.
	BucketSize uint16
	// MaxIterations is how many kick-outs an add tries before the filter
	// grows (or is full), 1 to 65535.
	MaxIterations uint16
	// Expansion is 0 (the filter never grows) to 32768, and is rounded up to
	// a power of two as RedisBloom rounds it: sub-filter i has
	// Expansion^i times the first one's buckets.
	Expansion uint16
	// MaxBytes bounds the filter's size as CF.INFO reports it (Info().Size:
	// its bucket bytes and 40 + 16 per sub-filter): a new filter past it
	// fails with ErrCuckooTooLarge, growth past it with ErrCuckooCannotGrow.
	// 0 means the machine's RAM plus swap.
	MaxBytes uint64
	_        struct{}
}

// DefaultCuckooConfig returns RedisBloom's defaults for a filter of the
// given capacity: bucket size 2, 20 iterations, expansion 1.
func DefaultCuckooConfig(capacity uint64) CuckooConfig {
	return CuckooConfig{Capacity: capacity, BucketSize: CuckooDefaultBucketSize,
		MaxIterations: CuckooDefaultMaxIterations, Expansion: CuckooDefaultExpansion}
}

// CuckooInfo is what CF.INFO reports, computed as RedisBloom computes it.
type CuckooInfo struct {
	// Size is RedisBloom's memory figure: 40 bytes for the filter, and per
	// sub-filter 16 bytes plus its buckets' bytes.
	Size uint64
	// Buckets is the first sub-filter's bucket count ("Number of buckets").
	Buckets uint64
	// Filters is the number of sub-filters.
	Filters uint64
	// Items is the number of fingerprints stored ("Number of items
	// inserted"): adds minus deletes.
	Items uint64
	// Deleted counts deletes since the last compaction ("Number of items
	// deleted").
	Deleted uint64
	// BucketSize is the slots of a bucket.
	BucketSize uint64
	// Expansion is the growth factor (a power of two, or 0).
	Expansion uint64
	// MaxIterations is the kick-out limit.
	MaxIterations uint64
}

// CuckooHash is the hash a cuckoo filter takes of an item: MurmurHash64A
// with seed 0. The *Hash methods take it, so that a caller can hash outside
// a lock or once for several filters.
func CuckooHash(item []byte) uint64 { return murmur64A(item, 0) }

// cfKey derives an item's fingerprint and alternate hash from its hash
// (getLookupParams): the fingerprint is never 0, which marks an empty slot.
func cfKey(h uint64) (h2 uint64, fp uint8) {
	fp = uint8(h%255 + 1)
	return h ^ uint64(fp)*cfAltMul, fp
}

// cfLoc is the byte position of the bucket a hash picks in a sub-filter
// (SubCF_GetIndex). RedisBloom returns it as a uint32: in a sub-filter of
// more than 4 GiB, lookups, inserts into free slots and deletes wrap
// around the first 4 GiB, while kick-outs and compaction do not. Both are
// kept, so that such a filter answers as RedisBloom's does.
func cfLoc(h, mask, bucketSize uint64) uint64 {
	return uint64(uint32((h & mask) * bucketSize))
}

// cfSub is one sub-filter: numBuckets buckets of the filter's bucket size,
// their bytes packed 8 to a little-endian word, so that the concurrent
// filter can read and write them with 64-bit atomics and a bucket of 1, 2,
// 4 or 8 slots is one load.
type cfSub struct {
	words      []uint64 // nil until first written, for a filter made from a header
	numBuckets uint64   // a power of two
	mask       uint64   // numBuckets − 1
}

func newCFSub(numBuckets, bucketSize uint64, allocate bool) cfSub {
	s := cfSub{numBuckets: numBuckets, mask: numBuckets - 1}
	if allocate {
		s.words = cfMakeWords(numBuckets * bucketSize)
	}
	return s
}

// cfMakeWords allocates the words of a sub-filter of n bytes, on huge
// pages when large.
func cfMakeWords(n uint64) []uint64 {
	w := make([]uint64, cfWords(n))
	cfAdviseHugePages(w)
	return w
}

// cfWords is the number of words that hold n bytes.
func cfWords(n uint64) uint64 { return n/8 + min(n%8, 1) }

// cfView is what a concurrent reader needs: the sub-filters and the bucket
// size, published together.
type cfView struct {
	subs       []cfSub
	bucketSize uint64
}

// cfShared is the state an AtomicCuckooFilter's readers share with its
// writer. seq is a sequence lock: odd while a writer moves fingerprints
// (kick-outs, deletes, compaction, loads), when a reader could miss an
// item that is present throughout.
type cfShared struct {
	seq  atomic.Uint64
	view atomic.Pointer[cfView]
}

// cfTable is a cuckoo filter's state and its writers' algorithms, shared by
// CuckooFilter and, under its lock, AtomicCuckooFilter. Every algorithm
// follows RedisBloom's src/cuckoo.c step for step: which bucket, which slot
// and which sub-filter it looks at first decide where fingerprints land,
// which the dumps show.
type cfTable struct {
	numBuckets    uint64 // of the first sub-filter
	numItems      uint64
	numDeletes    uint64
	bucketSize    uint64 // 1 to 255
	maxIterations uint64 // 1 to 65535
	expansion     uint64 // 0 or a power of two up to 32768
	maxBytes      uint64
	subs          []cfSub
	lazy          bool      // some sub-filter has no words yet
	shared        *cfShared // for AtomicCuckooFilter: atomic stores, moves under seq, published views
}

// newCFTable makes an empty filter as CuckooFilter_Init does, after the
// checks of CF.RESERVE.
func newCFTable(c CuckooConfig) (cfTable, error) {
	if c.BucketSize < 1 || c.BucketSize > CuckooMaxBucketSize {
		return cfTable{}, fmt.Errorf("%w: bucket size %d, must be 1 to %d", ErrCuckooConfig, c.BucketSize, CuckooMaxBucketSize)
	}
	if c.MaxIterations < 1 {
		return cfTable{}, fmt.Errorf("%w: max iterations 0, must be 1 to %d", ErrCuckooConfig, CuckooMaxIterations)
	}
	if c.Expansion > CuckooMaxExpansion {
		return cfTable{}, fmt.Errorf("%w: expansion %d, must be 0 to %d", ErrCuckooConfig, c.Expansion, CuckooMaxExpansion)
	}
	bs := uint64(c.BucketSize)
	if c.Capacity < 2*bs {
		return cfTable{}, fmt.Errorf("%w: capacity %d, must be at least 2·bucket size", ErrCuckooConfig, c.Capacity)
	}
	nb := cfNextPow2(c.Capacity / bs)
	if nb == 0 || nb > CuckooMaxBuckets {
		return cfTable{}, fmt.Errorf("%w: capacity %d needs more than 2^56 − 1 buckets", ErrCuckooTooLarge, c.Capacity)
	}
	t := cfTable{numBuckets: nb, bucketSize: bs, maxIterations: uint64(c.MaxIterations),
		expansion: cfNextPow2(uint64(c.Expansion)), maxBytes: cfMaxBytes(c.MaxBytes)}
	if size := cfStructSize + cfSubStructSize + nb*bs; size > t.maxBytes {
		return cfTable{}, fmt.Errorf("%w: %d bytes, the limit is %d", ErrCuckooTooLarge, size, t.maxBytes)
	}
	t.subs = []cfSub{newCFSub(nb, bs, true)}
	return t, nil
}

func cfMaxBytes(n uint64) uint64 {
	if n == 0 {
		return sysmem.RAMPlusSwap()
	}
	return n
}

// cfNextPow2 rounds up to a power of two as getNextN2 does: 0 stays 0, and
// so does anything above 2^63.
func cfNextPow2(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	return 1 << (64 - bits.LeadingZeros64(n-1))
}

// growth returns expansion^i, the factor of sub-filter i's buckets, and
// false if it exceeds what a sub-filter can have.
func (t *cfTable) growth(i int) (uint64, bool) {
	switch {
	case i == 0 || t.expansion == 1:
		return 1, true
	case t.expansion == 0:
		return 0, false
	}
	shift := uint64(bits.TrailingZeros64(t.expansion)) * uint64(i)
	if shift >= 64 {
		return 0, false
	}
	g := uint64(1) << shift
	return g, g <= CuckooMaxBuckets/t.numBuckets
}

func (t *cfTable) totalBytes() uint64 {
	var n uint64
	for i := range t.subs {
		n += t.subs[i].numBuckets * t.bucketSize
	}
	return n
}

// publish gives concurrent readers the current sub-filters: a fresh copy,
// since the writer's slice may later be cut and appended to, without the
// sub-filters that have no words yet (they are empty).
func (t *cfTable) publish() {
	if t.shared != nil {
		t.shared.view.Store(&cfView{subs: cfLoaded(t.subs), bucketSize: t.bucketSize})
	}
}

// beginMove and endMove bracket changes during which a concurrent reader
// could miss an item that is present throughout.
func (t *cfTable) beginMove() {
	if t.shared != nil {
		t.shared.seq.Add(1)
	}
}

func (t *cfTable) endMove() {
	if t.shared != nil {
		t.shared.seq.Add(1)
	}
}

// materialize allocates the words of sub-filters made from a header and
// never written, before anything writes to them.
func (t *cfTable) materialize() {
	if !t.lazy {
		return
	}
	for i := range t.subs {
		if t.subs[i].words == nil {
			t.subs[i].words = cfMakeWords(t.subs[i].numBuckets * t.bucketSize)
		}
	}
	t.lazy = false
	t.publish()
}

func cfGet(words []uint64, pos uint64) uint8 { return uint8(words[pos>>3] >> (pos & 7 * 8)) }

func (t *cfTable) set(s *cfSub, pos uint64, v uint8) {
	w, sh := &s.words[pos>>3], pos&7*8
	t.store(w, *w&^(0xff<<sh)|uint64(v)<<sh)
}

// cfEqualBytes has bit 7 of each byte of w set that equals the byte
// pattern pat, and no other bit: exact for every byte, unlike the cheaper
// has-zero-byte test, so that its lowest bit finds the first match and its
// population counts them.
func cfEqualBytes(w, pat uint64) uint64 {
	x := w ^ pat
	y := (x & cfLow7) + cfLow7
	return ^(y | x | cfLow7)
}

// cfByteRange has bit 7 of bytes lo to hi−1 of a word set.
func cfByteRange(lo, hi uint64) uint64 {
	return (^uint64(0) << (lo * 8)) & (^uint64(0) >> (64 - hi*8)) & (cfOnes << 7)
}

// cfFirst returns the position of the first byte equal to v among the n
// bytes from pos (Bucket_Find, Bucket_FindAvailable).
func cfFirst(words []uint64, pos, n uint64, v uint8) (uint64, bool) {
	pat, end := uint64(v)*cfOnes, pos+n
	for w := pos >> 3; w<<3 < end; w++ {
		base := w << 3
		m := cfEqualBytes(words[w], pat) & cfByteRange(max(pos, base)-base, min(end, base+8)-base)
		if m != 0 {
			return base + uint64(bits.TrailingZeros64(m)>>3), true
		}
	}
	return 0, false
}

// cfFirstInWord is cfFirst for a bucket of 1, 2, 4 or 8 slots, which
// lies within one word.
func cfFirstInWord(words []uint64, pos, n uint64, v uint8) (uint64, bool) {
	w := words[pos>>3] >> (pos & 7 * 8)
	m := cfEqualBytes(w, uint64(v)*cfOnes) & (cfOnes << 7 >> (64 - n*8))
	return pos + uint64(bits.TrailingZeros64(m)>>3), m != 0
}

// cfWordBuckets reports whether a bucket size keeps every bucket within
// one word.
func cfWordBuckets(bs uint64) bool { return bs <= 8 && bs&(bs-1) == 0 }

// cfCount returns how many of the n bytes from pos equal v (bucketCount).
func cfCount(words []uint64, pos, n uint64, v uint8) uint64 {
	pat, end := uint64(v)*cfOnes, pos+n
	var c int
	for w := pos >> 3; w<<3 < end; w++ {
		base := w << 3
		c += bits.OnesCount64(cfEqualBytes(words[w], pat) & cfByteRange(max(pos, base)-base, min(end, base+8)-base))
	}
	return uint64(c)
}

// cfTestSubs answers whether any sub-filter holds fp in either of its
// buckets (CuckooFilter_CheckFP), reading with plain loads. Bucket sizes
// 1, 2, 4 and 8 read each bucket as one piece of a word, and both buckets'
// loads go out before either is compared, so that their cache misses
// overlap.
func cfTestSubs(subs []cfSub, bs, h1, h2 uint64, fp uint8) bool {
	pat := uint64(fp) * cfOnes
	switch bs {
	case 1:
		for i := range subs {
			s := &subs[i]
			l1, l2 := uint64(uint32(h1&s.mask)), uint64(uint32(h2&s.mask))
			if cfGet(s.words, l1) == fp || cfGet(s.words, l2) == fp {
				return true
			}
		}
	case 2:
		for i := range subs {
			s := &subs[i]
			l1, l2 := uint64(uint32((h1&s.mask)<<1)), uint64(uint32((h2&s.mask)<<1))
			w1, w2 := s.words[l1>>3], s.words[l2>>3]
			b := (w1>>(l1&7*8))&0xffff | (w2>>(l2&7*8))&0xffff<<16
			if cfEqualBytes(b, pat)&0x80808080 != 0 {
				return true
			}
		}
	case 4:
		for i := range subs {
			s := &subs[i]
			l1, l2 := uint64(uint32((h1&s.mask)<<2)), uint64(uint32((h2&s.mask)<<2))
			w1, w2 := s.words[l1>>3], s.words[l2>>3]
			if cfEqualBytes(uint64(uint32(w1>>(l1&7*8)))|uint64(uint32(w2>>(l2&7*8)))<<32, pat) != 0 {
				return true
			}
		}
	case 8:
		for i := range subs {
			s := &subs[i]
			l1, l2 := uint64(uint32((h1&s.mask)<<3)), uint64(uint32((h2&s.mask)<<3))
			if cfEqualBytes(s.words[l1>>3], pat)|cfEqualBytes(s.words[l2>>3], pat) != 0 {
				return true
			}
		}
	default:
		for i := range subs {
			s := &subs[i]
			if s.words == nil {
				continue
			}
			if _, ok := cfFirst(s.words, cfLoc(h1, s.mask, bs), bs, fp); ok {
				return true
			}
			if _, ok := cfFirst(s.words, cfLoc(h2, s.mask, bs), bs, fp); ok {
				return true
			}
		}
	}
	return false
}

// test is CuckooFilter_Check for a writer or a filter not shared.
func (t *cfTable) test(h1 uint64) bool {
	h2, fp := cfKey(h1)
	if t.lazy {
		return cfTestSubs(cfLoaded(t.subs), t.bucketSize, h1, h2, fp)
	}
	return cfTestSubs(t.subs, t.bucketSize, h1, h2, fp)
}

// cfLoaded returns the sub-filters that have words: the others are empty.
func cfLoaded(subs []cfSub) []cfSub {
	out := make([]cfSub, 0, len(subs))
	for _, s := range subs {
		if s.words != nil {
			out = append(out, s)
		}
	}
	return out
}

// count is CuckooFilter_Count: the fingerprint's copies in both buckets of
// every sub-filter, a bucket counted twice when both hashes pick it.
func (t *cfTable) count(h1 uint64) uint64 {
	h2, fp := cfKey(h1)
	var n uint64
	for i := range t.subs {
		s := &t.subs[i]
		if s.words != nil {
			n += cfCount(s.words, cfLoc(h1, s.mask, t.bucketSize), t.bucketSize, fp) +
				cfCount(s.words, cfLoc(h2, s.mask, t.bucketSize), t.bucketSize, fp)
		}
	}
	return n
}

// findAvailable returns the first empty slot of h1's bucket, else of h2's
// (Filter_FindAvailable).
func (t *cfTable) findAvailable(s *cfSub, h1, h2 uint64) (uint64, bool) {
	if bs := t.bucketSize; cfWordBuckets(bs) {
		if p, ok := cfFirstInWord(s.words, cfLoc(h1, s.mask, bs), bs, 0); ok {
			return p, true
		}
		return cfFirstInWord(s.words, cfLoc(h2, s.mask, bs), bs, 0)
	}
	if p, ok := cfFirst(s.words, cfLoc(h1, s.mask, t.bucketSize), t.bucketSize, 0); ok {
		return p, true
	}
	return cfFirst(s.words, cfLoc(h2, s.mask, t.bucketSize), t.bucketSize, 0)
}

// insert is CuckooFilter_Insert (CF.ADD): it stores the item's fingerprint
// whether or not it is there already.
func (t *cfTable) insert(h1 uint64) error {
	if t.lazy {
		t.materialize()
	}
	h2, fp := cfKey(h1)
	return t.insertKey(h1, h2, fp)
}

// insertUnique is CuckooFilter_InsertUnique (CF.ADDNX): false, and nothing
// stored, when any sub-filter holds the fingerprint.
func (t *cfTable) insertUnique(h1 uint64) (bool, error) {
	if t.lazy {
		t.materialize()
	}
	h2, fp := cfKey(h1)
	if cfTestSubs(t.subs, t.bucketSize, h1, h2, fp) {
		return false, nil
	}
	return true, t.insertKey(h1, h2, fp)
}

// insertKey is insertFP with its common case first: a free slot in the
// newest sub-filter, whose buckets lie within a word. That case is one
// short call with one load of the bucket's word (two if h1's bucket is
// full) and one store, so that the out-of-order core holds several adds'
// cache misses at once; anything else goes to insertFP, which looks at
// the newest sub-filter again (it is unchanged) and goes on as
// RedisBloom does.
func (t *cfTable) insertKey(h1, h2 uint64, fp uint8) error {
	if cfWordBuckets(t.bucketSize) && t.addFreeWord(&t.subs[len(t.subs)-1], h1, h2, fp) {
		t.numItems++
		return nil
	}
	return t.insertFP(h1, h2, fp)
}

// addFreeWord stores fp in the first empty slot of h1's bucket in s, else
// of h2's (Filter_FindAvailable and the store), for a bucket size of 1,
// 2, 4 or 8. It reports false, storing nothing, when both are full.
func (t *cfTable) addFreeWord(s *cfSub, h1, h2 uint64, fp uint8) bool {
	bs := t.bucketSize
	slots := cfOnes << 7 >> (64 - bs*8) // bit 7 of the bucket's bytes
	l := cfLoc(h1, s.mask, bs)
	w := &s.words[l>>3]
	sh := l & 7 * 8
	m := cfEqualBytes(*w>>sh, 0) & slots
	if m == 0 {
		l = cfLoc(h2, s.mask, bs)
		w = &s.words[l>>3]
		sh = l & 7 * 8
		if m = cfEqualBytes(*w>>sh, 0) & slots; m == 0 {
			return false
		}
	}
	// The slot is empty: or-ing fp in sets it. Bit 7 of byte j is bit
	// 8j+7 of m.
	t.store(w, *w|uint64(fp)<<(sh+uint64(bits.TrailingZeros64(m))&^7))
	return true
}

// store writes a word of a sub-filter, atomically when readers share it.
func (t *cfTable) store(w *uint64, v uint64) {
	if t.shared != nil {
		atomic.StoreUint64(w, v)
	} else {
		*w = v
	}
}

// insertFP is CuckooFilter_InsertFP: the first free slot of the newest
// sub-filter that has one; else kick-outs in the newest; else a new
// sub-filter, and again.
func (t *cfTable) insertFP(h1, h2 uint64, fp uint8) error {
	for i := len(t.subs) - 1; i >= 0; i-- {
		if p, ok := t.findAvailable(&t.subs[i], h1, h2); ok {
			t.set(&t.subs[i], p, fp)
			t.numItems++
			return nil
		}
	}
	t.beginMove()
	ok := t.kickOut(&t.subs[len(t.subs)-1], h1, fp)
	t.endMove()
	if ok {
		t.numItems++
		return nil
	}
	if t.expansion == 0 {
		return ErrCuckooFull
	}
	if err := t.grow(); err != nil {
		return err
	}
	return t.insertFP(h1, h2, fp)
}

// kickOut is Filter_KOInsert: starting at h1's bucket, it swaps the
// fingerprint in hand with the one in slot victim (0, then cycling through
// the bucket's slots), moves to the evicted one's other bucket and stops at
// a free slot there. After maxIterations swaps it walks back, undoing every
// swap, so that a failed add changes nothing.
func (t *cfTable) kickOut(s *cfSub, h1 uint64, fp uint8) bool {
	bs := t.bucketSize
	var victim uint64
	ii := h1 & s.mask
	for range t.maxIterations {
		p := ii*bs + victim
		old := cfGet(s.words, p)
		t.set(s, p, fp)
		fp = old
		ii = (ii ^ uint64(fp)*cfAltMul) & s.mask
		if e, ok := cfFirst(s.words, ii*bs, bs, 0); ok {
			t.set(s, e, fp)
			return true
		}
		victim = (victim + 1) % bs
	}
	// alt is an involution modulo a power of two, so this walk visits the
	// same buckets backwards.
	for range t.maxIterations {
		victim = (victim + bs - 1) % bs
		ii = (ii ^ uint64(fp)*cfAltMul) & s.mask
		p := ii*bs + victim
		old := cfGet(s.words, p)
		t.set(s, p, fp)
		fp = old
	}
	return false
}

// grow is CuckooFilter_Grow: a sub-filter of expansion^n times the first
// one's buckets, n being the sub-filters there are.
func (t *cfTable) grow() error {
	n := len(t.subs)
	if n >= CuckooMaxFilters {
		return fmt.Errorf("%w: %d sub-filters", ErrCuckooCannotGrow, n)
	}
	g, ok := t.growth(n)
	if !ok {
		return fmt.Errorf("%w: sub-filter %d would have more than 2^56 − 1 buckets", ErrCuckooCannotGrow, n)
	}
	nb := t.numBuckets * g
	size := t.info().Size
	if more := cfSubStructSize + nb*t.bucketSize; more > t.maxBytes-min(size, t.maxBytes) {
		return fmt.Errorf("%w: %w: %d more bytes on %d, the limit is %d", ErrCuckooCannotGrow, ErrCuckooTooLarge, more, size, t.maxBytes)
	}
	t.subs = append(t.subs, newCFSub(nb, t.bucketSize, true))
	t.publish()
	return nil
}

// delete is CuckooFilter_Delete: one copy of the fingerprint, from the
// newest sub-filter that has one, h1's bucket first, its first slot that
// holds it. A filter of several sub-filters whose deletes exceed a tenth
// of its items then compacts.
func (t *cfTable) delete(h1 uint64) bool {
	t.materialize()
	h2, fp := cfKey(h1)
	bs := t.bucketSize
	for i := len(t.subs) - 1; i >= 0; i-- {
		s := &t.subs[i]
		p, ok := cfFirst(s.words, cfLoc(h1, s.mask, bs), bs, fp)
		if !ok {
			p, ok = cfFirst(s.words, cfLoc(h2, s.mask, bs), bs, fp)
		}
		if !ok {
			continue
		}
		t.beginMove()
		t.set(s, p, 0)
		t.endMove()
		t.numItems--
		t.numDeletes++
		if len(t.subs) > 1 && float64(t.numDeletes) > float64(t.numItems)*cfCompactRatio {
			t.compact(false)
		}
		return true
	}
	return false
}

// compact is CuckooFilter_Compact: newest sub-filter first, it moves each
// fingerprint to the oldest sub-filter with a free slot in one of its two
// buckets there, and drops the newest sub-filter once empty. Without cont
// it stops at the first sub-filter it cannot empty. Either way it resets
// the delete count.
func (t *cfTable) compact(cont bool) {
	t.materialize()
	for i := len(t.subs) - 1; i > 0; i-- {
		if !t.compactOne(i) && !cont {
			break
		}
	}
	t.numDeletes = 0
}

// compactOne is CuckooFilter_CompactSingle: it reports whether every
// fingerprint of sub-filter fi found a home in an older one.
func (t *cfTable) compactOne(fi int) bool {
	bs := t.bucketSize
	all := true
	for b := range t.subs[fi].numBuckets {
		for slot := range bs {
			src := &t.subs[fi]
			fp := cfGet(src.words, b*bs+slot)
			if fp == 0 {
				continue
			}
			h2 := b ^ uint64(fp)*cfAltMul
			moved := false
			for j := range fi {
				if p, ok := t.findAvailable(&t.subs[j], b, h2); ok {
					t.beginMove()
					t.set(&t.subs[j], p, fp)
					t.set(src, b*bs+slot, 0)
					t.endMove()
					moved = true
					break
				}
			}
			if !moved {
				all = false
			}
		}
	}
	if all && fi == len(t.subs)-1 {
		t.beginMove()
		t.subs = t.subs[:fi]
		t.publish()
		t.endMove()
	}
	return all
}

// info is CF.INFO.
func (t *cfTable) info() CuckooInfo {
	return CuckooInfo{
		Size:          cfStructSize + cfSubStructSize*uint64(len(t.subs)) + t.totalBytes(),
		Buckets:       t.numBuckets,
		Filters:       uint64(len(t.subs)),
		Items:         t.numItems,
		Deleted:       t.numDeletes,
		BucketSize:    t.bucketSize,
		Expansion:     t.expansion,
		MaxIterations: t.maxIterations,
	}
}

// equal reports whether two filters have the same parameters, counts and
// bytes: whether their dumps are the same.
func (t *cfTable) equal(o *cfTable) bool {
	if t.numBuckets != o.numBuckets || t.numItems != o.numItems || t.numDeletes != o.numDeletes ||
		t.bucketSize != o.bucketSize || t.maxIterations != o.maxIterations || t.expansion != o.expansion ||
		len(t.subs) != len(o.subs) {
		return false
	}
	for i := range t.subs {
		a, b := &t.subs[i], &o.subs[i]
		if a.numBuckets != b.numBuckets || !cfEqualWords(a.words, b.words) {
			return false
		}
	}
	return true
}

// cfEqualWords compares two sub-filters' words, nil being all zeros.
func cfEqualWords(a, b []uint64) bool {
	if a == nil {
		a, b = b, a
	}
	if b == nil {
		for _, w := range a {
			if w != 0 {
				return false
			}
		}
		return true
	}
	return slices.Equal(a, b)
}
