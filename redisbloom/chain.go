package redisbloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/internal/sysmem"
)

// Option bits of a RedisBloom chain, as its dump header records them
// (bloom.h's BLOOM_OPT_*). Every chain RedisBloom creates today has
// Force64|NoRound, plus NoScaling for
// NONSCALING.
const (
	// NoRound sizes each filter at ⌊entries·bpe⌋ bits instead of
	// the next power of two.
	NoRound = 1
	// EntriesAreBits makes the capacity a filter is created with
	// its bit count's log2 (never set by RedisBloom's commands).
	EntriesAreBits = 2
	// Force64 hashes with 64-bit MurmurHash64A instead of 32-bit
	// MurmurHash2.
	Force64 = 4
	// NoScaling keeps the chain at one filter: an item that would
	// need a second gets ErrFull.
	NoScaling = 8

	bfKnownOptions = NoRound | EntriesAreBits | Force64 | NoScaling
)

// RedisBloom's defaults for a filter created by BF.ADD, BF.MADD or BF.INSERT
// without a reservation (bf-initial-size, bf-error-rate,
// bf-expansion-factor).
const (
	DefaultCapacity  = 100  // items of the first filter
	DefaultErrorRate = 0.01 // the chain's error rate
	DefaultExpansion = 2    // growth factor
)

// MaxChunk is the most bytes one BF.SCANDUMP data chunk carries
// (RedisBloom's MAX_SCANDUMP_SIZE, 16 MiB): a filter larger than that is
// dumped in several chunks.
const MaxChunk = 16 << 20

const (
	bfTightening      = 0.5 // each new filter's error rate is the last one's times this
	bfChainHeaderSize = 20  // size, nfilters, options, growth
	bfLinkHeaderSize  = 53  // one dumpedChainLink, packed
	bfHashConfigSize  = 16  // the optional hash configuration after the links
	// BF.INFO's Size counts sizeof(SBChain) and sizeof(SBLink) of the
	// 64-bit build besides the bits.
	bfChainStructSize = 32
	bfLinkStructSize  = 64

	// bfMaxLinks keeps a header chunk's length within a uint32, which
	// MarshalBinary records.
	bfMaxLinks = (math.MaxUint32 - bfChainHeaderSize - bfHashConfigSize) / bfLinkHeaderSize
)

// Errors of RedisBloom filters. Each names the reply RedisBloom gives in
// that case, so that a server can answer as it does.
var (
	// ErrBadData: a header chunk no RedisBloom filter could have
	// written, or a chunk whose iterator is smaller than its length.
	// RedisBloom replies "ERR received bad data".
	ErrBadData = errors.New("ohbloom: RedisBloom: received bad data")
	// ErrNoLink: a chunk that starts past the last filter.
	// RedisBloom replies "ERR invalid offset - no link found".
	ErrNoLink = errors.New("ohbloom: RedisBloom: invalid offset - no link found")
	// ErrChunkTooBig: a chunk that runs past the end of the filter
	// it starts in. RedisBloom replies "ERR invalid chunk - Too big for
	// current filter".
	ErrChunkTooBig = errors.New("ohbloom: RedisBloom: invalid chunk - Too big for current filter")
	// ErrFull: a new item for a NONSCALING chain whose filter holds
	// its capacity. RedisBloom replies "ERR non scaling filter is full".
	ErrFull = errors.New("ohbloom: RedisBloom: non scaling filter is full")
	// ErrCannotGrow: a new item needs a new filter that cannot be
	// made (expansion 0, a size RedisBloom's bloom_init refuses, or one past
	// the chain's byte limit, which also wraps ohbloom.ErrTooLarge). RedisBloom's
	// SBChain_Add returns −1 here.
	ErrCannotGrow = errors.New("ohbloom: RedisBloom: the filter cannot grow")
)

// Config is what BF.RESERVE (or BF.INSERT's options) gives a new
// chain.
type Config struct {
	// Capacity is the number of items the first filter holds (≥ 1).
	Capacity uint64
	// ErrorRate is the chain's target false positive rate, in (0, 1).
	ErrorRate float64
	// Expansion is how many times the last filter's capacity each new filter
	// holds. It is recorded even with NonScaling; RedisBloom's EXPANSION 0
	// is NonScaling with Expansion 0. Expansion 0 without NonScaling is
	// refused.
	Expansion uint32
	// NonScaling keeps the chain at one filter, sized for the whole
	// ErrorRate instead of half of it.
	NonScaling bool
	// MaxBytes bounds the bits of all the chain's filters together; growth
	// past it fails with ErrCannotGrow. 0 means the machine's
	// RAM plus swap.
	MaxBytes uint64
	_        struct{}
}

// Info is what BF.INFO reports, computed as RedisBloom computes
// it.
type Info struct {
	// Capacity is the sum of every filter's capacity (entries).
	Capacity uint64
	// Size is RedisBloom's memory estimate: 32 bytes for the chain, and per
	// filter 64 bytes plus its bits' bytes.
	Size uint64
	// Filters is the number of filters in the chain.
	Filters uint64
	// Items is the number of items added and taken as new.
	Items uint64
	// Expansion is the chain's growth factor; BF.INFO shows it only when
	// NonScaling is false ("Expansion rate" is nil otherwise).
	Expansion uint32
	// NonScaling is whether the chain never grows.
	NonScaling bool
}

// Link describes one filter of a chain, as BF.DEBUG shows it.
type Link struct {
	Bytes        uint64  // bytes of its bits
	Bits         uint64  // bits, 8·Bytes
	Hashes       uint32  // probes per item
	Capacity     uint64  // items it takes before the chain grows (entries)
	Items        uint64  // items taken as new in it (size)
	ErrorRate    float64 // its error rate (ratio)
	BitsPerEntry float64 // bpe
	N2           uint8   // log2 of its bit count when rounded to a power of two, else 0
}

// bfChain is what a chain's filters share.
type bfChain struct {
	options  uint32
	growth   uint32
	hasher   bfHasher
	maxBytes uint64
}

func (c *bfChain) nonScaling() bool { return c.options&NoScaling != 0 }

// newBFChain checks a Config and sizes the first filter as
// SB_NewChain does.
func newBFChain(c Config) (bfChain, bfParams, error) {
	if c.Capacity == 0 || !(c.ErrorRate > 0 && c.ErrorRate < 1) {
		return bfChain{}, bfParams{}, fmt.Errorf("%w: capacity %d, error rate %v", ohbloom.ErrInvalidConfig, c.Capacity, c.ErrorRate)
	}
	if c.Expansion == 0 && !c.NonScaling {
		return bfChain{}, bfParams{}, fmt.Errorf("%w: expansion 0 needs NonScaling", ohbloom.ErrInvalidConfig)
	}
	ch := bfChain{options: Force64 | NoRound, growth: c.Expansion,
		hasher: bfHasher{kind: bfHashMurmur64}, maxBytes: c.MaxBytes}
	if ch.maxBytes == 0 {
		ch.maxBytes = sysmem.RAMPlusSwap()
	}
	e := c.ErrorRate * bfTightening
	if c.NonScaling {
		ch.options |= NoScaling
		e = c.ErrorRate
	}
	p, err := bfInit(c.Capacity, e, ch.options)
	if err != nil {
		return bfChain{}, bfParams{}, fmt.Errorf("%w: %w", ohbloom.ErrInvalidConfig, err)
	}
	if p.bytes > ch.maxBytes {
		return bfChain{}, bfParams{}, fmt.Errorf("%w: %d bytes, the limit is %d", ohbloom.ErrTooLarge, p.bytes, ch.maxBytes)
	}
	return ch, p, nil
}

// nextLink sizes the filter that follows the newest one, p, as
// SBChain_Add does; the chain has n filters of total bytes so far.
func (c *bfChain) nextLink(p *bfParams, n int, total uint64) (bfParams, error) {
	if c.nonScaling() {
		return bfParams{}, ErrFull
	}
	if n >= bfMaxLinks {
		return bfParams{}, fmt.Errorf("%w: %d filters", ErrCannotGrow, n)
	}
	hi, entries := bits.Mul64(p.entries, uint64(c.growth))
	if c.growth == 0 || hi != 0 {
		return bfParams{}, fmt.Errorf("%w: %d items times expansion %d", ErrCannotGrow, p.entries, c.growth)
	}
	next, err := bfInit(entries, p.errRate*bfTightening, c.options)
	if err != nil {
		return bfParams{}, fmt.Errorf("%w: %w", ErrCannotGrow, err)
	}
	if next.bytes > c.maxBytes-min(total, c.maxBytes) {
		return bfParams{}, fmt.Errorf("%w: %w: %d more bytes on %d, the limit is %d", ErrCannotGrow, ohbloom.ErrTooLarge, next.bytes, total, c.maxBytes)
	}
	return next, nil
}

// test reports whether all the item's bits are set in words, RedisBloom's
// bloom_check. A filter whose words are not allocated yet is all zeros.
// Words are loaded atomically, which costs nothing on amd64, so that the
// concurrent variant shares this code.
func (p *bfParams) test(words []uint64, a, b uint64) bool {
	if words == nil {
		return p.hashes == 0
	}
	if p.n2 > 0 {
		mask := p.mod - 1
		h := a
		for range p.hashes {
			x := h & mask
			if atomic.LoadUint64(&words[x>>6])&(1<<(x&63)) == 0 {
				return false
			}
			h += b
		}
		return true
	}
	var pos bfPosition
	pos.start(p, a, b)
	for range p.hashes {
		x := pos.x
		if atomic.LoadUint64(&words[x>>6])&(1<<(x&63)) == 0 {
			return false
		}
		pos.next(p, b)
	}
	return true
}

// add sets the item's bits in words and reports whether one was clear,
// bloom_add's "not previously present". words must not be shared.
func (p *bfParams) add(words []uint64, a, b uint64) bool {
	isNew := false
	if p.n2 > 0 {
		mask := p.mod - 1
		h := a
		for range p.hashes {
			x := h & mask
			if w, m := &words[x>>6], uint64(1)<<(x&63); *w&m == 0 {
				*w |= m
				isNew = true
			}
			h += b
		}
		return isNew
	}
	var pos bfPosition
	pos.start(p, a, b)
	for range p.hashes {
		x := pos.x
		if w, m := &words[x>>6], uint64(1)<<(x&63); *w&m == 0 {
			*w |= m
			isNew = true
		}
		pos.next(p, b)
	}
	return isNew
}

// atomicAdd is add for words shared with other goroutines: each missing bit
// is set with an atomic OR, and of two goroutines setting the same bit only
// one sees it clear. The words are loaded first, all of them, and only
// then ORed: a locked instruction is a full fence on x86, so ORing as it
// goes would wait out each cache miss in turn instead of overlapping them
// (docs/design.md, "RedisBloom's atomic add").
func (p *bfParams) atomicAdd(words []uint64, a, b uint64) bool {
	var buf [bfBatch]uint64
	if p.hashes > bfBatch {
		return p.atomicAddSlow(words, a, b)
	}
	xs := buf[:p.hashes]
	if p.n2 > 0 {
		mask, h := p.mod-1, a
		for i := range xs {
			xs[i] = h & mask
			h += b
		}
	} else {
		var pos bfPosition
		pos.start(p, a, b)
		for i := range xs {
			xs[i] = pos.x
			pos.next(p, b)
		}
	}
	missing := false
	for _, x := range xs {
		missing = atomic.LoadUint64(&words[x>>6])&(1<<(x&63)) == 0 || missing
	}
	if !missing {
		return false
	}
	isNew := false
	for _, x := range xs {
		isNew = orReportNew(&words[x>>6], 1<<(x&63)) || isNew
	}
	return isNew
}

// bfBatch is how many positions atomicAdd gathers before touching memory:
// every filter of an error rate above 10^-19.
const bfBatch = 64

// atomicAddSlow is atomicAdd for filters of more than bfBatch hashes,
// which RedisBloom makes only for error rates below 10^-19.
func (p *bfParams) atomicAddSlow(words []uint64, a, b uint64) bool {
	isNew := false
	if p.n2 > 0 {
		mask, h := p.mod-1, a
		for range p.hashes {
			x := h & mask
			isNew = orReportNew(&words[x>>6], 1<<(x&63)) || isNew
			h += b
		}
		return isNew
	}
	var pos bfPosition
	pos.start(p, a, b)
	for range p.hashes {
		x := pos.x
		isNew = orReportNew(&words[x>>6], 1<<(x&63)) || isNew
		pos.next(p, b)
	}
	return isNew
}

// bfPosition walks bit positions (a + i·b) mod m, where a + i·b wraps at
// 2^64 before the mod, as RedisBloom's uint64 arithmetic does, with two
// divisions per item instead of one per hash: x(i+1) = x(i) + (b mod m),
// less 2^64 mod m when a + i·b + b carries out of 64 bits. m < 2^63, so
// the sums fit.
type bfPosition struct {
	h, x, step uint64
}

func (q *bfPosition) start(p *bfParams, a, b uint64) {
	q.h, q.x, q.step = a, a%p.mod, b%p.mod
}

func (q *bfPosition) next(p *bfParams, b uint64) {
	var carry uint64
	q.h, carry = bits.Add64(q.h, b, 0)
	x := q.x + q.step
	if x >= p.mod {
		x -= p.mod
	}
	x, borrow := bits.Sub64(x, carry*p.wrap, 0)
	q.x = x + borrow*p.mod
}

// info returns a link's Link.
func (p *bfParams) info(items uint64) Link {
	return Link{Bytes: p.bytes, Bits: p.bits, Hashes: p.hashes, Capacity: p.entries,
		Items: items, ErrorRate: p.errRate, BitsPerEntry: p.bpe, N2: p.n2}
}

// The header chunk's layout is in Filter's doc.

// bfHeader is a decoded header chunk.
type bfHeader struct {
	bfChain
	params []bfParams
	items  []uint64
	total  uint64 // bytes of all filters
}

// encodeBFHeader appends the header chunk of a chain to dst.
func encodeBFHeader(dst []byte, c *bfChain, n int, link func(i int) (*bfParams, uint64)) []byte {
	le := binary.LittleEndian
	var size uint64
	for i := range n {
		_, items := link(i)
		size += items
	}
	dst = le.AppendUint64(dst, size)
	dst = le.AppendUint32(dst, uint32(n))
	dst = le.AppendUint32(dst, c.options)
	dst = le.AppendUint32(dst, c.growth)
	for i := range n {
		p, items := link(i)
		dst = le.AppendUint64(dst, p.bytes)
		dst = le.AppendUint64(dst, p.bits)
		dst = le.AppendUint64(dst, items)
		dst = le.AppendUint64(dst, math.Float64bits(p.errRate))
		dst = le.AppendUint64(dst, math.Float64bits(p.bpe))
		dst = le.AppendUint32(dst, p.hashes)
		dst = le.AppendUint64(dst, p.entries)
		dst = append(dst, p.n2)
	}
	if c.hasher.kind == bfHashXXH3 {
		dst = le.AppendUint64(dst, 1)
		dst = le.AppendUint64(dst, c.hasher.seed)
	}
	return dst
}

// decodeBFHeader checks a header chunk as SB_NewChainFromHeader does, and
// more: no NaN or infinite rate, no filter too large to probe, and the
// bytes of all filters within maxBytes (0: the machine's memory), so that
// loading the chunks that follow can never allocate more. It allocates
// only what the header's own length pays for.
func decodeBFHeader(buf []byte, maxBytes uint64) (bfHeader, error) {
	le := binary.LittleEndian
	bad := func(format string, args ...any) (bfHeader, error) {
		return bfHeader{}, fmt.Errorf("%w: "+format, append([]any{ErrBadData}, args...)...)
	}
	if len(buf) < bfChainHeaderSize {
		return bad("%d bytes, a header has at least %d", len(buf), bfChainHeaderSize)
	}
	size := le.Uint64(buf)
	n := uint64(le.Uint32(buf[8:]))
	h := bfHeader{bfChain: bfChain{options: le.Uint32(buf[12:]), growth: le.Uint32(buf[16:]), maxBytes: maxBytes}}
	if n == 0 || n > bfMaxLinks {
		return bad("%d filters", n)
	}
	legacy := bfChainHeaderSize + bfLinkHeaderSize*n
	switch uint64(len(buf)) {
	case legacy:
	case legacy + bfHashConfigSize:
		version, seed := le.Uint64(buf[legacy:]), le.Uint64(buf[legacy+8:])
		switch {
		case version == 1:
			h.hasher = bfHasher{kind: bfHashXXH3, seed: seed}
		case version != 0 || seed != 0:
			return bad("hash configuration version %d, seed %#x", version, seed)
		}
	default:
		return bad("%d bytes for %d filters", len(buf), n)
	}
	if h.options&^bfKnownOptions != 0 {
		return bad("options %#x", h.options)
	}
	if h.hasher.kind != bfHashXXH3 && h.options&Force64 != 0 {
		h.hasher.kind = bfHashMurmur64
	}
	if h.maxBytes == 0 {
		h.maxBytes = sysmem.RAMPlusSwap()
	}
	h.params = make([]bfParams, n)
	h.items = make([]uint64, n)
	var sum uint64
	for i := range h.params {
		b := buf[bfChainHeaderSize+bfLinkHeaderSize*i:]
		p := &h.params[i]
		p.bytes, p.bits = le.Uint64(b), le.Uint64(b[8:])
		h.items[i] = le.Uint64(b[16:])
		p.errRate = math.Float64frombits(le.Uint64(b[24:]))
		p.bpe = math.Float64frombits(le.Uint64(b[32:]))
		p.hashes = le.Uint32(b[40:])
		p.entries = le.Uint64(b[44:])
		p.n2 = b[52]
		// bloom_validate_integrity, without its blind spots: a NaN rate
		// passes its comparisons, and bytes·8 may wrap.
		switch wantHashes, ok := bfHashes(p.bpe); {
		case !(p.errRate > 0 && p.errRate < 1):
			return bad("filter %d: error rate %v", i, p.errRate)
		case p.n2 > 63 || p.n2 != 0 && p.bits < 1<<p.n2:
			return bad("filter %d: n2 %d for %d bits", i, p.n2, p.bits)
		case p.bits == 0 || p.bits%8 != 0 || p.bits/8 != p.bytes:
			return bad("filter %d: %d bits in %d bytes", i, p.bits, p.bytes)
		case !ok || math.IsNaN(p.bpe) || p.hashes != wantHashes:
			return bad("filter %d: %d hashes for %v bits per entry", i, p.hashes, p.bpe)
		case p.bytes > bfMaxLinkBytes:
			return bad("filter %d: %d bytes", i, p.bytes)
		}
		p.derive()
		var carry uint64
		if sum, carry = bits.Add64(sum, h.items[i], 0); carry != 0 {
			return bad("item counts overflow")
		}
		h.total += p.bytes
		if h.total > h.maxBytes {
			return bfHeader{}, fmt.Errorf("%w: %w: the filters take more than %d bytes", ErrBadData, ohbloom.ErrTooLarge, h.maxBytes)
		}
	}
	if sum != size {
		return bad("%d items in the chain, %d in its filters", size, sum)
	}
	return h, nil
}

// findBFLink finds the filter holding byte pos of the chain's bits (RedisBloom's
// getLinkPos, with the iterator's 1 already taken off) and the offset in it.
func findBFLink(n int, bytesOf func(i int) uint64, pos uint64) (int, uint64, bool) {
	for i := range n {
		b := bytesOf(i)
		if pos < b {
			return i, pos, true
		}
		pos -= b
	}
	return 0, 0, false
}

// appendWordBytes appends bytes [off, off+n) of the little-endian image of
// words to dst; nil words are zeros. Words are loaded atomically so that a
// dump may run during adds.
func appendWordBytes(dst []byte, words []uint64, off, n uint64) []byte {
	if words == nil {
		return append(dst, make([]byte, n)...)
	}
	for n > 0 {
		v := atomic.LoadUint64(&words[off/8])
		if off%8 == 0 && n >= 8 {
			dst = binary.LittleEndian.AppendUint64(dst, v)
			off, n = off+8, n-8
			continue
		}
		dst = append(dst, byte(v>>(8*(off%8))))
		off, n = off+1, n-1
	}
	return dst
}

// storeWordBytes replaces bytes [off, off+len(src)) of the little-endian
// image of words with src, RedisBloom's memcpy of a chunk. Whole words are
// stored atomically, partial ones by compare-and-swap, so that a
// concurrent add to another byte of the word is never lost.
func storeWordBytes(words []uint64, off uint64, src []byte) {
	for len(src) > 0 {
		w := &words[off/8]
		if off%8 == 0 && len(src) >= 8 {
			atomic.StoreUint64(w, binary.LittleEndian.Uint64(src))
			off, src = off+8, src[8:]
			continue
		}
		shift := 8 * (off % 8)
		n := min(uint64(len(src)), 8-off%8)
		var val, mask uint64
		for j := range n {
			val |= uint64(src[j]) << (shift + 8*j)
			mask |= 0xff << (shift + 8*j)
		}
		for {
			old := atomic.LoadUint64(w)
			if atomic.CompareAndSwapUint64(w, old, old&^mask|val) {
				break
			}
		}
		off, src = off+n, src[n:]
	}
}

// chunkTarget checks a BF.LOADCHUNK (iter, length) as
// SBChain_LoadEncodedChunk does and returns where the chunk goes: the
// iterator is the position just past the chunk's last byte, plus one.
func chunkTarget(n int, bytesOf func(i int) uint64, iter int64, length int) (int, uint64, error) {
	if iter <= 0 || uint64(iter) < uint64(length) {
		return 0, 0, fmt.Errorf("%w: chunk of %d bytes at iterator %d", ErrBadData, length, iter)
	}
	start := uint64(iter) - uint64(length)
	if start < 1 {
		return 0, 0, fmt.Errorf("%w: iterator %d, chunk of %d bytes", ErrNoLink, iter, length)
	}
	i, off, ok := findBFLink(n, bytesOf, start-1)
	if !ok {
		return 0, 0, fmt.Errorf("%w: iterator %d, chunk of %d bytes", ErrNoLink, iter, length)
	}
	if uint64(length) > bytesOf(i)-off {
		return 0, 0, fmt.Errorf("%w: %d bytes at offset %d of filter %d, which has %d", ErrChunkTooBig, length, off, i, bytesOf(i))
	}
	return i, off, nil
}

// infoOf computes BF.INFO from the links.
func (c *bfChain) infoOf(n int, link func(i int) (*bfParams, uint64)) Info {
	in := Info{Filters: uint64(n), Size: bfChainStructSize, Expansion: c.growth, NonScaling: c.nonScaling()}
	for i := range n {
		p, items := link(i)
		in.Capacity += p.entries
		in.Size += bfLinkStructSize + p.bytes
		in.Items += items
	}
	return in
}
