package rdb

import (
	"math"
)

// RedisBloom's module types and the encoding versions RedisBloom 2.8
// writes (rebloom.c: BF_MIN_GROWTH_ENC, CF_MIN_EXPANSION_VERSION).
const (
	BloomTypeName  = "MBbloom--"
	CuckooTypeName = "MBbloomCF"
	BloomEncVer    = 4
	CuckooEncVer   = 4
)

// The module type IDs RedisBloom 2.8 writes its values with.
var (
	BloomModuleID  = mustModuleID(BloomTypeName, BloomEncVer)
	CuckooModuleID = mustModuleID(CuckooTypeName, CuckooEncVer)
)

// The option bits of a Bloom chain (bloom.h's BLOOM_OPT_*).
const (
	BloomNoRound    = 1 // bits computed exactly, not rounded to a power of two
	BloomEntsIsBits = 2 // capacity given as log2 of the bits
	BloomForce64    = 4 // 64-bit hashing (every chain RedisBloom 2.x creates)
	BloomNoScaling  = 8 // NONSCALING: the chain never grows
)

const bloomKnownOption = BloomNoRound | BloomEntsIsBits | BloomForce64 | BloomNoScaling

// bloomLN2 is bloom.c's LN2, a digit short of math.Ln2: the hashes check
// must round as RedisBloom's does.
const bloomLN2 = 0.693147180559945

// Bloom is the value of a RedisBloom scalable Bloom filter (module type
// MBbloom--): the fields of its SBChain and of each link's struct bloom
// that BFRdbSave writes, and the links' bits. A value of encoding version
// 4 is these items, in order, each a module item (docs/format.md):
//
//	unsigned Size, unsigned len(Links), unsigned Options, unsigned Growth,
//	then per link: unsigned Entries, double Error, unsigned Hashes,
//	double BPE, unsigned Bits, unsigned N2, string Data, unsigned Size.
//
// A Bloom is plain data: not safe for concurrent use while being changed.
type Bloom struct {
	Size    uint64 // items added to the chain: the sum of the links' Size
	Options uint32 // Bloom* option bits
	Growth  uint32 // each new link's capacity over the last one's (EXPANSION)
	Links   []BloomLink
}

// BloomLink is one filter of a Bloom chain.
type BloomLink struct {
	Entries uint64  // capacity
	Error   float64 // the link's false positive rate
	Hashes  uint32  // bits set per item: ⌈ln 2 · BPE⌉
	BPE     float64 // bits per entry
	Bits    uint64  // 8·len(Data)
	N2      uint8   // log2 of Bits when rounded to a power of two, else 0
	Size    uint64  // items added to this link
	Data    []byte  // the bit array, as RedisBloom holds it in memory
}

// DecodeBloom decodes a MBbloom-- module value: a TypeModule2 value (a
// DUMP payload's, or Entry.Value) as BFRdbLoad reads it, for encoding
// versions 0 to 4, and checks it as Validate does. The links' Data alias
// value unless they were compressed.
func DecodeBloom(value []byte) (*Bloom, error) {
	c := cursor{b: value}
	id, err := c.number("module type ID")
	if err != nil {
		return nil, err
	}
	if ModuleID(id).Name() != BloomTypeName {
		return nil, c.err(0, ErrCorrupt, "module type %s, not %s", ModuleID(id).Name(), BloomTypeName)
	}
	encver := ModuleID(id).EncVer()
	if encver > BloomEncVer {
		return nil, c.err(0, ErrUnsupported, "%s encoding version %d: RedisBloom 2.8 writes %d", BloomTypeName, encver, BloomEncVer)
	}
	b := &Bloom{Growth: 2}
	if b.Size, err = c.loadUnsigned("chain size"); err != nil {
		return nil, err
	}
	at := c.pos
	n, err := c.loadUnsigned("number of links")
	if err != nil {
		return nil, err
	}
	// A link takes at least 18 bytes: 8 items of 2 bytes or more, and the
	// doubles' 8 bytes each.
	if n == 0 || n > uint64(len(value)-c.pos)/18 {
		return nil, c.err(at, ErrCorrupt, "%d links in %d bytes", n, len(value)-c.pos)
	}
	if encver >= 2 {
		v, err := c.loadUnsignedMax("options", math.MaxUint32)
		if err != nil {
			return nil, err
		}
		b.Options = uint32(v)
	}
	if encver >= 4 {
		v, err := c.loadUnsignedMax("growth", math.MaxUint32)
		if err != nil {
			return nil, err
		}
		b.Growth = uint32(v)
	}
	b.Links = make([]BloomLink, 0, min(n, 64)) // grown as links arrive
	for range n {
		b.Links = append(b.Links, BloomLink{})
		l := &b.Links[len(b.Links)-1]
		if l.Entries, err = c.loadUnsigned("link entries"); err != nil {
			return nil, err
		}
		if l.Error, err = c.loadDouble("link error"); err != nil {
			return nil, err
		}
		v, err := c.loadUnsignedMax("link hashes", math.MaxUint32)
		if err != nil {
			return nil, err
		}
		l.Hashes = uint32(v)
		if l.BPE, err = c.loadDouble("link bits per entry"); err != nil {
			return nil, err
		}
		if encver == 0 {
			l.Bits = float64ToUint64(float64(l.Entries) * l.BPE)
		} else {
			if l.Bits, err = c.loadUnsigned("link bits"); err != nil {
				return nil, err
			}
			v, err := c.loadUnsignedMax("link n2", math.MaxUint8)
			if err != nil {
				return nil, err
			}
			l.N2 = uint8(v)
		}
		if l.Data, err = c.loadString("link bits"); err != nil {
			return nil, err
		}
		if l.Size, err = c.loadUnsigned("link size"); err != nil {
			return nil, err
		}
	}
	if err := c.end(); err != nil {
		return nil, err
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return b, nil
}

// float64ToUint64 converts as C does a double in range; out of range it
// gives 0, which Validate refuses.
func float64ToUint64(f float64) uint64 {
	if !(f >= 0 && f < 1<<64) {
		return 0
	}
	return uint64(f)
}

// Validate checks what RedisBloom checks of a chain it loads, from an RDB
// (BFRdbLoad, bloom_validate_integrity) or from a SCANDUMP header
// (SB_NewChainFromHeader, SB_ValidateIntegrity): at least one link; each
// with 0 < Error < 1, N2 ≤ 63, Bits ≥ 2^N2 when N2 is set, Bits = 8·len(Data)
// > 0, Hashes = ⌈ln 2 · BPE⌉; only known option bits; Size the sum of the
// links' sizes. It returns an *Error wrapping ErrCorrupt.
func (b *Bloom) Validate() error { return b.validate(nil) }

// validate is Validate with the links' byte counts taken from bytes, when
// not nil, instead of their Data.
func (b *Bloom) validate(bytes []uint64) error {
	if len(b.Links) == 0 {
		return errAt(0, ErrCorrupt, "a Bloom chain without links")
	}
	if b.Options&^bloomKnownOption != 0 {
		return errAt(0, ErrCorrupt, "unknown Bloom options 0x%x", b.Options)
	}
	var total uint64
	for i := range b.Links {
		l := &b.Links[i]
		n := uint64(len(l.Data))
		if bytes != nil {
			n = bytes[i]
		}
		if !(l.Error > 0 && l.Error < 1) || l.N2 > 63 || (l.N2 != 0 && l.Bits < 1<<l.N2) ||
			l.Bits == 0 || l.Bits/8 != n || l.Bits%8 != 0 ||
			float64(l.Hashes) != math.Ceil(bloomLN2*l.BPE) {
			return errAt(0, ErrCorrupt, "Bloom link %d fails RedisBloom's integrity check (error %g, hashes %d, bpe %g, bits %d, n2 %d, %d bytes)",
				i, l.Error, l.Hashes, l.BPE, l.Bits, l.N2, n)
		}
		if l.Size > math.MaxUint64-total {
			return errAt(0, ErrCorrupt, "Bloom link sizes overflow")
		}
		total += l.Size
	}
	if total != b.Size {
		return errAt(0, ErrCorrupt, "Bloom chain size %d, but its links hold %d", b.Size, total)
	}
	return nil
}

// AppendValue appends b's TypeModule2 value as RedisBloom 2.8's BFRdbSave
// in Redis 7.4 writes it (encoding version 4, rdbcompression on): the
// bytes of Entry.Value, and of a DUMP payload between its type byte and
// its footer.
func (b *Bloom) AppendValue(dst []byte) []byte {
	dst = appendLen(dst, uint64(BloomModuleID))
	dst = appendUnsigned(dst, b.Size)
	dst = appendUnsigned(dst, uint64(len(b.Links)))
	dst = appendUnsigned(dst, uint64(b.Options))
	dst = appendUnsigned(dst, uint64(b.Growth))
	for i := range b.Links {
		l := &b.Links[i]
		dst = appendUnsigned(dst, l.Entries)
		dst = appendDouble(dst, l.Error)
		dst = appendUnsigned(dst, uint64(l.Hashes))
		dst = appendDouble(dst, l.BPE)
		dst = appendUnsigned(dst, l.Bits)
		dst = appendUnsigned(dst, uint64(l.N2))
		dst = appendStringItem(dst, l.Data)
		dst = appendUnsigned(dst, l.Size)
	}
	return append(dst, moduleEOF)
}

// DumpPayload is what DUMP of b's key gives in Redis 7.4 with RedisBloom
// 2.8.
func (b *Bloom) DumpPayload() []byte {
	return AppendPayload(nil, TypeModule2, b.AppendValue(nil))
}
