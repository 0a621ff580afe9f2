package redisbloom

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// A CF.SCANDUMP header chunk is RedisBloom's packed CFHeader struct,
// little-endian, CuckooHeaderSize bytes:
//
//	offset  size  field
//	     0     8  items (numItems)
//	     8     8  buckets of the first sub-filter (numBuckets), a power of two
//	    16     8  deletes since the last compaction (numDeletes)
//	    24     8  sub-filters (numFilters), 1 to 65535
//	    32     2  bucket size, 1 to 255
//	    34     2  max iterations, ≥ 1
//	    36     2  expansion, 0 (then one sub-filter) or a power of two
//
// Sub-filter i has buckets · expansion^i buckets of bucket size bytes, one
// byte a slot, 0 for an empty slot. The data chunks are those bytes, the
// sub-filters' one after the other, oldest first.

// appendHeader appends the filter's header chunk (fillCFHeader).
func (t *cfTable) appendHeader(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, t.numItems)
	dst = binary.LittleEndian.AppendUint64(dst, t.numBuckets)
	dst = binary.LittleEndian.AppendUint64(dst, t.numDeletes)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(t.subs)))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(t.bucketSize))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(t.maxIterations))
	return binary.LittleEndian.AppendUint16(dst, uint16(t.expansion))
}

// decodeCFHeader makes the filter a header chunk describes (CFHeader_Load),
// its sub-filters without words until written.
func decodeCFHeader(b []byte, maxBytes uint64) (cfTable, error) {
	if len(b) != CuckooHeaderSize {
		return cfTable{}, fmt.Errorf("%w: %d bytes, want %d", ErrCuckooHeaderSize, len(b), CuckooHeaderSize)
	}
	le := binary.LittleEndian
	t, err := cfShape(le.Uint64(b[8:]), le.Uint64(b[24:]), uint64(le.Uint16(b[32:])),
		uint64(le.Uint16(b[34:])), uint64(le.Uint16(b[36:])), maxBytes, ErrCuckooBadHeader)
	if err != nil {
		return cfTable{}, err
	}
	t.numItems, t.numDeletes = le.Uint64(b[0:]), le.Uint64(b[16:])
	return t, nil
}

// cfShape checks a filter's shape as CuckooFilter_ValidateIntegrity does,
// and more: RedisBloom only ever makes power-of-two expansions (it rounds
// EXPANSION up), which kick-outs need to undo a failed add exactly, and
// sub-filters whose buckets fit its 56-bit field; it keeps the low 16 bits
// of a larger sub-filter count, which is refused here. It returns a filter
// of that shape, its sub-filters without words, after checking that its
// Size stays within maxBytes (0: the machine's RAM plus swap).
func cfShape(numBuckets, numFilters, bucketSize, maxIterations, expansion, maxBytes uint64, base error) (cfTable, error) {
	switch {
	case bucketSize < 1 || bucketSize > CuckooMaxBucketSize:
		return cfTable{}, fmt.Errorf("%w: bucket size %d", base, bucketSize)
	case numBuckets < 1 || numBuckets > CuckooMaxBuckets || numBuckets&(numBuckets-1) != 0:
		return cfTable{}, fmt.Errorf("%w: %d buckets", base, numBuckets)
	case numFilters < 1 || numFilters > CuckooMaxFilters:
		return cfTable{}, fmt.Errorf("%w: %d sub-filters", base, numFilters)
	case maxIterations < 1 || maxIterations > CuckooMaxIterations:
		return cfTable{}, fmt.Errorf("%w: max iterations %d", base, maxIterations)
	case expansion > CuckooMaxExpansion || expansion&(expansion-1) != 0:
		return cfTable{}, fmt.Errorf("%w: expansion %d", base, expansion)
	case expansion == 0 && numFilters > 1:
		return cfTable{}, fmt.Errorf("%w: %d sub-filters with expansion 0", base, numFilters)
	}
	t := cfTable{numBuckets: numBuckets, bucketSize: bucketSize, maxIterations: maxIterations,
		expansion: expansion, maxBytes: cfMaxBytes(maxBytes), lazy: true}
	size := uint64(cfStructSize)
	for i := range int(numFilters) {
		g, ok := t.growth(i)
		if !ok {
			return cfTable{}, fmt.Errorf("%w: %w: sub-filter %d would have more than 2^56 − 1 buckets", base, ErrCuckooTooLarge, i)
		}
		size += cfSubStructSize + numBuckets*g*bucketSize
		if size > t.maxBytes {
			return cfTable{}, fmt.Errorf("%w: %w: more than %d bytes", base, ErrCuckooTooLarge, t.maxBytes)
		}
	}
	t.subs = make([]cfSub, numFilters)
	for i := range t.subs {
		g, _ := t.growth(i)
		t.subs[i] = newCFSub(numBuckets*g, bucketSize, false)
	}
	return t, nil
}

// chunk finds the bytes CF.SCANDUMP returns for iterator iter ≥ 1
// (CF_GetEncodedChunk): from position iter − 1 of the sub-filters' bytes
// end to end, up to limit bytes, never past the end of the sub-filter it
// starts in. RedisBloom returns a sub-filter no larger than limit whole,
// wherever in it iter points. ok is false past the last sub-filter.
func (t *cfTable) chunk(iter int64, limit uint64) (s *cfSub, off, n uint64, next int64, ok bool) {
	off = uint64(iter - 1)
	for i := range t.subs {
		s = &t.subs[i]
		size := s.numBuckets * t.bucketSize
		if off >= size {
			off -= size
			continue
		}
		if size <= limit {
			return s, 0, size, iter + int64(size), true
		}
		n = min(limit, size-off)
		return s, off, n, iter + int64(n), true
	}
	return nil, 0, 0, 0, false
}

// scanDump is CF.SCANDUMP for a filter not shared.
func (t *cfTable) scanDump(iter int64, dst []byte, limit uint64) (int64, []byte) {
	switch {
	case t.numItems == 0 || iter < 0:
		return 0, dst
	case iter == 0:
		return 1, t.appendHeader(dst)
	}
	s, off, n, next, ok := t.chunk(iter, limit)
	if !ok {
		return 0, dst
	}
	return next, cfAppendBytes(dst, s.words, off, n, false)
}

// cfAppendBytes appends n bytes from position off of a sub-filter's words,
// zeros for words not allocated, with atomic loads when shared.
func cfAppendBytes(dst []byte, words []uint64, off, n uint64, shared bool) []byte {
	if words == nil {
		return append(dst, make([]byte, n)...)
	}
	dst = slicesGrow(dst, n)
	end := off + n
	for off < end {
		i, sh := off>>3, off&7
		w := words[i]
		if shared {
			w = atomic.LoadUint64(&words[i])
		}
		if sh == 0 && end-off >= 8 {
			dst = binary.LittleEndian.AppendUint64(dst, w)
			off += 8
			continue
		}
		dst = append(dst, byte(w>>(sh*8)))
		off++
	}
	return dst
}

// slicesGrow makes room for n more bytes, as slices.Grow does, with the
// count in a uint64 already bounded by a sub-filter's size.
func slicesGrow(dst []byte, n uint64) []byte {
	if uint64(cap(dst)-len(dst)) < n {
		dst = append(make([]byte, 0, uint64(len(dst))+n), dst...)
	}
	return dst
}

// loadChunk is CF.LOADCHUNK of a data chunk (CF_LoadEncodedChunk): data
// replaces the bytes that end at position iter − 2. As RedisBloom's, a
// chunk past the last sub-filter is placed in the last one at its offset
// past the end of all, when it fits there.
func (t *cfTable) loadChunk(iter int64, data []byte) error {
	n := uint64(len(data))
	if n == 0 || iter <= 0 || uint64(iter-1) < n {
		return fmt.Errorf("%w: %d bytes at iterator %d", ErrCuckooBadChunk, n, iter)
	}
	off := uint64(iter-1) - n
	var s *cfSub
	for i := range t.subs {
		s = &t.subs[i]
		size := s.numBuckets * t.bucketSize
		if off < size {
			break
		}
		off -= size
	}
	if s == nil || s.numBuckets*t.bucketSize < off+n {
		return fmt.Errorf("%w: %d bytes at iterator %d do not fit the sub-filter", ErrCuckooBadChunk, n, iter)
	}
	if s.words == nil {
		s.words = cfMakeWords(s.numBuckets * t.bucketSize)
		t.lazy = false
		for i := range t.subs {
			t.lazy = t.lazy || t.subs[i].words == nil
		}
		t.publish()
	}
	t.beginMove()
	cfStoreBytes(s.words, off, data, t.shared != nil)
	t.endMove()
	return nil
}

// cfStoreBytes writes data at position off of a sub-filter's words, with
// atomic stores when shared.
func cfStoreBytes(words []uint64, off uint64, data []byte, shared bool) {
	for len(data) > 0 {
		i, sh := off>>3, off&7
		var w uint64
		var k uint64
		if sh == 0 && len(data) >= 8 {
			w, k = binary.LittleEndian.Uint64(data), 8
		} else {
			w, k = words[i]&^(0xff<<(sh*8))|uint64(data[0])<<(sh*8), 1
		}
		if shared {
			atomic.StoreUint64(&words[i], w)
		} else {
			words[i] = w
		}
		off += k
		data = data[k:]
	}
}
