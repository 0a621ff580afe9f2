package redisbloom

import "fmt"

// CuckooFilter is RedisBloom's cuckoo filter (its src/cuckoo.c), bit for
// bit: every add, test, count and delete answers as RedisBloom 2.8 does,
// false positives, "Filter is full" and counts included; it grows when and
// as RedisBloom grows, compacts as it does, reports CF.INFO as it does, and
// reads and writes RedisBloom's CF.SCANDUMP chunks and MBbloomCF RDB values
// byte for byte. Use it to serve CF.* commands, or as a cuckoo filter that
// can count and delete; for items that are never deleted, the root
// package's Bloom filters are smaller and faster for the same error rate.
//
// # Layout
//
// A filter is a list of sub-filters, oldest first. Sub-filter i has
// buckets·expansion^i buckets (buckets a power of two, from CF.RESERVE's
// capacity / bucket size rounded up); a bucket is bucket size one-byte
// slots, 0 meaning empty. Its memory is one byte a slot: 8 bits an item at
// full load, and RedisBloom's defaults (bucket size 2) fill about
// 80 to 95% of the slots before growing.
//
// # Hashing
//
// An item hashes to h = MurmurHash64A(item, seed 0) (CuckooHash). Its
// fingerprint is fp = h mod 255 + 1, and its two buckets in a sub-filter of
// n buckets are
//
//	b1 = h mod n,  b2 = (h ⊕ fp·0x5bd1e995) mod n
//
// at byte b·bucketSize (truncated to 32 bits, as RedisBloom's uint32
// index is). Since n is a power of two, b1 = (b2 ⊕ fp·0x5bd1e995) mod n:
// a fingerprint's other bucket is found from where it sits.
//
// # Operations
//
//   - Test: is fp in b1 or b2 of any sub-filter. A lookup reads two
//     buckets a sub-filter.
//   - Add (CF.ADD, duplicates stored again): the first empty slot of b1,
//     else of b2, in the newest sub-filter, then the older ones; else
//     kick-outs in the newest: swap fp into slot v of its bucket (v = 0,
//     then cycling through the slots), carry the evicted fingerprint to its
//     other bucket, and stop at an empty slot there; after max iterations
//     swaps, undo them all. Then, with expansion 0, ErrCuckooFull;
//     otherwise a new sub-filter, and the add again.
//   - AddUnique (CF.ADDNX): Test first, over every sub-filter.
//   - Count (CF.COUNT): the copies of fp in b1 and b2 of every sub-filter.
//     Other items' equal fingerprints count too.
//   - Delete (CF.DEL): one copy, from the newest sub-filter that has one,
//     b1 first. When the filter has several sub-filters and its deletes
//     since the last compaction exceed a tenth of its items, it compacts,
//     stopping at the first sub-filter it cannot empty.
//   - Compact (CF.COMPACT): newest sub-filter first, each fingerprint moves
//     to the oldest sub-filter with an empty slot in one of its two buckets
//     there; an emptied newest sub-filter is dropped. The delete count
//     resets.
//
// # Dumps
//
// CF.SCANDUMP at iterator 0 returns iterator 1 and the header chunk (its
// layout is on CuckooHeaderSize's file, cuckoo_dump.go); at iterator i ≥ 1,
// the sub-filters' bytes from position i − 1, up to CuckooMaxChunk and
// never past the end of one sub-filter, and i plus their length; past the
// end, iterator 0 and no bytes. A filter with no items dumps as iterator 0
// and no bytes at once. CF.LOADCHUNK of the header makes the filter
// (NewCuckooFromHeader); of data, writes it so that it ends at position
// iterator − 2 (LoadChunk). MarshalRDB and UnmarshalRDB give the RDB value.
//
// A CuckooFilter is not safe for concurrent use; AtomicCuckooFilter is.
// The zero CuckooFilter is not usable: make one with NewCuckoo,
// NewCuckooFromHeader or UnmarshalRDB.
type CuckooFilter struct {
	t cfTable
}

// NewCuckoo returns an empty filter as CF.RESERVE makes it. It fails with
// ErrCuckooConfig for a configuration RedisBloom refuses and with
// ErrCuckooTooLarge for one past c.MaxBytes or 2^56 − 1 buckets.
func NewCuckoo(c CuckooConfig) (*CuckooFilter, error) {
	t, err := newCFTable(c)
	if err != nil {
		return nil, err
	}
	return &CuckooFilter{t: t}, nil
}

// NewCuckooFromHeader returns the filter that CF.LOADCHUNK of a header
// chunk (iterator 1) makes on an empty key, every slot empty until the data
// chunks arrive through LoadChunk. It fails with ErrCuckooHeaderSize for a
// chunk that is not CuckooHeaderSize bytes and with ErrCuckooBadHeader for
// a header no RedisBloom filter has, or whose filter's size (CuckooInfo's
// Size) would pass maxBytes (0: the machine's RAM plus swap), which then
// also wraps ErrCuckooTooLarge; maxBytes bounds the filter's growth too.
// It allocates nothing for the buckets: each sub-filter's bytes are made
// when first written.
func NewCuckooFromHeader(header []byte, maxBytes uint64) (*CuckooFilter, error) {
	t, err := decodeCFHeader(header, maxBytes)
	if err != nil {
		return nil, err
	}
	return &CuckooFilter{t: t}, nil
}

// Add adds item as CF.ADD does, even if it is there already (it then
// counts twice). It fails with ErrCuckooFull ("Filter is full") or
// ErrCuckooCannotGrow when there is no room and no new sub-filter to be
// had; the filter is then unchanged.
func (f *CuckooFilter) Add(item []byte) error { return f.t.insert(CuckooHash(item)) }

// AddHash is Add of an item whose CuckooHash is h.
func (f *CuckooFilter) AddHash(h uint64) error { return f.t.insert(h) }

// AddUnique adds item as CF.ADDNX does: only if Test would answer false,
// reporting whether it added it. It fails as Add does.
func (f *CuckooFilter) AddUnique(item []byte) (bool, error) {
	return f.t.insertUnique(CuckooHash(item))
}

// AddUniqueHash is AddUnique of an item whose CuckooHash is h.
func (f *CuckooFilter) AddUniqueHash(h uint64) (bool, error) { return f.t.insertUnique(h) }

// Test reports whether item may be in the filter (CF.EXISTS): always for
// an item added and not deleted, and for others at the filter's false
// positive rate, about 2·bucket size·sub-filters / 255 at full load.
func (f *CuckooFilter) Test(item []byte) bool { return f.t.test(CuckooHash(item)) }

// TestHash is Test of an item whose CuckooHash is h.
func (f *CuckooFilter) TestHash(h uint64) bool { return f.t.test(h) }

// Count returns CF.COUNT of item: the copies of its fingerprint in its
// buckets, an upper bound on how many times it was added and not deleted.
func (f *CuckooFilter) Count(item []byte) uint64 { return f.t.count(CuckooHash(item)) }

// CountHash is Count of an item whose CuckooHash is h.
func (f *CuckooFilter) CountHash(h uint64) uint64 { return f.t.count(h) }

// Delete removes one copy of item's fingerprint as CF.DEL does, reporting
// whether there was one. Deleting an item never added may remove another
// item's equal fingerprint.
func (f *CuckooFilter) Delete(item []byte) bool { return f.t.delete(CuckooHash(item)) }

// DeleteHash is Delete of an item whose CuckooHash is h.
func (f *CuckooFilter) DeleteHash(h uint64) bool { return f.t.delete(h) }

// Compact moves fingerprints into older sub-filters and drops the newest
// ones it empties, as CF.COMPACT does, and resets the delete count.
func (f *CuckooFilter) Compact() { f.t.compact(true) }

// Info returns what CF.INFO reports.
func (f *CuckooFilter) Info() CuckooInfo { return f.t.info() }

// SetMaxBytes bounds the filter's size (CuckooInfo's Size) from now on:
// growth past it fails with ErrCuckooCannotGrow. 0 means the machine's RAM
// plus swap.
func (f *CuckooFilter) SetMaxBytes(n uint64) { f.t.maxBytes = cfMaxBytes(n) }

// ScanDump is CF.SCANDUMP: for iterator iter it appends the chunk to dst
// and returns the next iterator and the extended slice. Iterator 0 gives
// the header and 1; after the last data chunk comes iterator 0 and no
// bytes, and so for every iterator when the filter has no items. A
// negative iterator, which RedisBloom refuses ("Invalid position"), gives
// 0 and no bytes.
func (f *CuckooFilter) ScanDump(iter int64, dst []byte) (int64, []byte) {
	return f.t.scanDump(iter, dst, CuckooMaxChunk)
}

// LoadChunk is CF.LOADCHUNK of a data chunk into an existing filter (for
// the header, iterator 1, see NewCuckooFromHeader): data replaces the
// bytes that end at position iter − 2 of the sub-filters' bytes end to
// end. It fails with ErrCuckooBadChunk, changing nothing, as RedisBloom
// refuses a chunk ("Couldn't load chunk!"): empty, iter ≤ len(data), or
// running past the end of the sub-filter it starts in.
func (f *CuckooFilter) LoadChunk(iter int64, data []byte) error {
	return f.t.loadChunk(iter, data)
}

// Equal reports whether two filters have the same parameters, counts and
// bytes: whether their dumps are the same.
func (f *CuckooFilter) Equal(o *CuckooFilter) bool { return f.t.equal(&o.t) }

// String describes the filter briefly.
func (f *CuckooFilter) String() string {
	return cfString(f.t.info())
}

func cfString(in CuckooInfo) string {
	return fmt.Sprintf("RedisBloom cuckoo filter: %d sub-filters of %d+ buckets of %d, %d items, %d deleted, %d bytes",
		in.Filters, in.Buckets, in.BucketSize, in.Items, in.Deleted, in.Size)
}
