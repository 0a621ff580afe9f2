package rdb

import (
	"math"
	"math/bits"
)

// Limits of a RedisBloom cuckoo filter (cuckoo.h).
const (
	cuckooMaxBucketSize = 255            // SubCF.bucketSize is 8 bits
	cuckooMaxNumBuckets = 1<<56 - 1      // SubCF.numBuckets is 56 bits
	cuckooMaxFilters    = math.MaxUint16 // CuckooFilter.numFilters is 16 bits
)

// Cuckoo is the value of a RedisBloom cuckoo filter (module type
// MBbloomCF): the fields of its CuckooFilter that CFRdbSave writes, and
// each sub-filter's buckets. A value of encoding version 4 is these module
// items, in order (docs/format.md):
//
//	unsigned len(Filters), unsigned NumBuckets, unsigned NumItems,
//	unsigned NumDeletes, unsigned BucketSize, unsigned MaxIterations,
//	unsigned Expansion, then per filter: unsigned NumBuckets, string Data.
//
// A Cuckoo is plain data: not safe for concurrent use while being changed.
type Cuckoo struct {
	NumBuckets    uint64 // buckets of the first filter: a power of two
	NumItems      uint64 // items in the filter
	NumDeletes    uint64 // items deleted
	BucketSize    uint16 // fingerprints per bucket, 1 to 255
	MaxIterations uint16 // relocations an insert tries
	Expansion     uint16 // each new filter's buckets over the first's, per filter: 0 (never grows) or a power of two
	Filters       []CuckooFilter
}

// CuckooFilter is one sub-filter of a Cuckoo.
type CuckooFilter struct {
	NumBuckets uint64 // Cuckoo.NumBuckets · Expansion^i for filter i
	Data       []byte // NumBuckets·BucketSize one-byte fingerprints, 0 for an empty slot
}

// DecodeCuckoo decodes a MBbloomCF module value: a TypeModule2 value (a
// DUMP payload's, or Entry.Value) as CFRdbLoad reads it, for encoding
// versions up to 4, and checks it as Validate does. The filters' Data
// alias value unless they were compressed.
func DecodeCuckoo(value []byte) (*Cuckoo, error) {
	c := cursor{b: value}
	id, err := c.number("module type ID")
	if err != nil {
		return nil, err
	}
	if ModuleID(id).Name() != CuckooTypeName {
		return nil, c.err(0, ErrCorrupt, "module type %s, not %s", ModuleID(id).Name(), CuckooTypeName)
	}
	encver := ModuleID(id).EncVer()
	if encver > CuckooEncVer {
		return nil, c.err(0, ErrUnsupported, "%s encoding version %d: RedisBloom 2.8 writes %d", CuckooTypeName, encver, CuckooEncVer)
	}
	at := c.pos
	n, err := c.loadUnsignedMax("number of filters", cuckooMaxFilters)
	if err != nil {
		return nil, err
	}
	// A filter takes at least 4 bytes: its bucket count and its string.
	if n > uint64(len(value)-c.pos)/4 {
		return nil, c.err(at, ErrCorrupt, "%d filters in %d bytes", n, len(value)-c.pos)
	}
	cf := &Cuckoo{BucketSize: 2, MaxIterations: 20, Expansion: 1} // before version 4: the defaults
	if cf.NumBuckets, err = c.loadUnsigned("number of buckets"); err != nil {
		return nil, err
	}
	if cf.NumItems, err = c.loadUnsigned("number of items"); err != nil {
		return nil, err
	}
	if encver >= 4 {
		if cf.NumDeletes, err = c.loadUnsigned("number of deletes"); err != nil {
			return nil, err
		}
		for _, f := range []struct {
			p    *uint16
			what string
		}{{&cf.BucketSize, "bucket size"}, {&cf.MaxIterations, "max iterations"}, {&cf.Expansion, "expansion"}} {
			v, err := c.loadUnsignedMax(f.what, math.MaxUint16)
			if err != nil {
				return nil, err
			}
			*f.p = uint16(v)
		}
	}
	cf.Filters = make([]CuckooFilter, 0, min(n, 64)) // grown as filters arrive
	for range n {
		cf.Filters = append(cf.Filters, CuckooFilter{})
		f := &cf.Filters[len(cf.Filters)-1]
		f.NumBuckets = cf.NumBuckets
		if encver >= 4 {
			if f.NumBuckets, err = c.loadUnsigned("filter buckets"); err != nil {
				return nil, err
			}
		}
		if f.Data, err = c.loadString("filter buckets"); err != nil {
			return nil, err
		}
	}
	if err := c.end(); err != nil {
		return nil, err
	}
	if err := cf.Validate(); err != nil {
		return nil, err
	}
	return cf, nil
}

// Validate checks what RedisBloom checks of a filter it loads from a
// SCANDUMP header (CuckooFilter_ValidateIntegrity, CFHeader_Load), which
// CFRdbLoad assumes: 1 to 65535 filters; BucketSize 1 to 255; NumBuckets
// a power of two below 2^56; MaxIterations at least 1; Expansion 0 only
// for a single filter; filter i of NumBuckets·Expansion^i buckets and
// NumBuckets·BucketSize bytes. It returns an *Error wrapping ErrCorrupt.
func (cf *Cuckoo) Validate() error {
	if err := cf.validateHeader(len(cf.Filters)); err != nil {
		return err
	}
	want := cf.NumBuckets
	for i := range cf.Filters {
		f := &cf.Filters[i]
		if i > 0 {
			want = nextCuckooBuckets(want, cf.Expansion)
		}
		if want == 0 || f.NumBuckets != want {
			return errAt(0, ErrCorrupt, "cuckoo filter %d has %d buckets, not %d·%d^%d", i, f.NumBuckets, cf.NumBuckets, cf.Expansion, i)
		}
		hi, size := bits.Mul64(f.NumBuckets, uint64(cf.BucketSize))
		if hi != 0 || size != uint64(len(f.Data)) {
			return errAt(0, ErrCorrupt, "cuckoo filter %d holds %d bytes, not %d buckets of %d", i, len(f.Data), f.NumBuckets, cf.BucketSize)
		}
	}
	return nil
}

// validateHeader is CuckooFilter_ValidateIntegrity, for n filters.
func (cf *Cuckoo) validateHeader(n int) error {
	if n == 0 || n > cuckooMaxFilters || cf.BucketSize == 0 ||
		cf.BucketSize > cuckooMaxBucketSize || cf.NumBuckets == 0 || cf.NumBuckets > cuckooMaxNumBuckets ||
		cf.NumBuckets&(cf.NumBuckets-1) != 0 || cf.MaxIterations == 0 ||
		(cf.Expansion == 0 && n > 1) {
		return errAt(0, ErrCorrupt, "cuckoo filter fails RedisBloom's integrity check (%d filters, bucket size %d, %d buckets, max iterations %d, expansion %d)",
			n, cf.BucketSize, cf.NumBuckets, cf.MaxIterations, cf.Expansion)
	}
	return nil
}

// nextCuckooBuckets is the bucket count of the filter after one of n
// buckets: n·expansion, as RedisBloom computes it when the filter grows, or
// 0 past 2^56-1.
func nextCuckooBuckets(n uint64, expansion uint16) uint64 {
	hi, lo := bits.Mul64(n, uint64(expansion))
	if hi != 0 || lo > cuckooMaxNumBuckets {
		return 0
	}
	return lo
}

// AppendValue appends cf's TypeModule2 value as RedisBloom 2.8's CFRdbSave
// in Redis 7.4 writes it (encoding version 4, rdbcompression on).
func (cf *Cuckoo) AppendValue(dst []byte) []byte {
	dst = appendLen(dst, uint64(CuckooModuleID))
	dst = appendUnsigned(dst, uint64(len(cf.Filters)))
	dst = appendUnsigned(dst, cf.NumBuckets)
	dst = appendUnsigned(dst, cf.NumItems)
	dst = appendUnsigned(dst, cf.NumDeletes)
	dst = appendUnsigned(dst, uint64(cf.BucketSize))
	dst = appendUnsigned(dst, uint64(cf.MaxIterations))
	dst = appendUnsigned(dst, uint64(cf.Expansion))
	for i := range cf.Filters {
		dst = appendUnsigned(dst, cf.Filters[i].NumBuckets)
		dst = appendStringItem(dst, cf.Filters[i].Data)
	}
	return append(dst, moduleEOF)
}

// DumpPayload is what DUMP of cf's key gives in Redis 7.4 with RedisBloom
// 2.8.
func (cf *Cuckoo) DumpPayload() []byte {
	return AppendPayload(nil, TypeModule2, cf.AppendValue(nil))
}
