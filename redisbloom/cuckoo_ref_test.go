package redisbloom

import (
	"encoding/binary"
	"math"
)

// refCF is RedisBloom's src/cuckoo.c transliterated line by line onto byte
// slices, with none of the word packing, bucket-size special cases or
// concurrency of the filter under test: the filters must agree with it on
// every reply and every byte.
type refCF struct {
	numBuckets, numItems, numDeletes uint64
	bucketSize, maxIterations        uint16
	expansion                        uint16
	filters                          []refSub
}

type refSub struct {
	numBuckets uint64
	data       []byte
}

func refGetNextN2(n uint64) uint64 {
	n--
	n |= n >> 1
	n |= n >> 2
	n |= n >> 4
	n |= n >> 8
	n |= n >> 16
	n |= n >> 32
	n++
	return n
}

func newRefCF(capacity uint64, bucketSize, maxIterations, expansion uint16) *refCF {
	f := &refCF{expansion: uint16(refGetNextN2(uint64(expansion))), bucketSize: bucketSize, maxIterations: maxIterations}
	f.numBuckets = refGetNextN2(capacity / uint64(bucketSize))
	if f.numBuckets == 0 {
		f.numBuckets = 1
	}
	if f.grow() != 0 {
		panic("grow")
	}
	return f
}

func (f *refCF) grow() int {
	if len(f.filters) == math.MaxUint16 {
		return -1
	}
	growth := uint64(math.Pow(float64(f.expansion), float64(len(f.filters))))
	if growth > CuckooMaxBuckets/f.numBuckets {
		return -1
	}
	nb := f.numBuckets * growth
	f.filters = append(f.filters, refSub{numBuckets: nb, data: make([]byte, nb*uint64(f.bucketSize))})
	return 0
}

func refAltHash(fp uint8, index uint64) uint64 { return index ^ uint64(fp)*0x5bd1e995 }

type refParams struct {
	h1, h2 uint64
	fp     uint8
}

func refLookupParams(hash uint64) refParams {
	fp := uint8(hash%255 + 1)
	return refParams{h1: hash, h2: refAltHash(fp, hash), fp: fp}
}

func (s *refSub) index(hash uint64, bucketSize uint16) uint64 {
	return uint64(uint32((hash % s.numBuckets) * uint64(bucketSize)))
}

func refBucketFind(bucket []byte, bucketSize uint16, fp uint8) int {
	for i := range int(bucketSize) {
		if bucket[i] == fp {
			return i
		}
	}
	return -1
}

func (f *refCF) filterFind(s *refSub, p refParams) bool {
	return refBucketFind(s.data[s.index(p.h1, f.bucketSize):], f.bucketSize, p.fp) >= 0 ||
		refBucketFind(s.data[s.index(p.h2, f.bucketSize):], f.bucketSize, p.fp) >= 0
}

func (f *refCF) checkFP(p refParams) bool {
	for i := range f.filters {
		if f.filterFind(&f.filters[i], p) {
			return true
		}
	}
	return false
}

func (f *refCF) check(hash uint64) bool { return f.checkFP(refLookupParams(hash)) }

func (f *refCF) count(hash uint64) uint64 {
	p := refLookupParams(hash)
	var n uint64
	for i := range f.filters {
		s := &f.filters[i]
		for _, loc := range []uint64{s.index(p.h1, f.bucketSize), s.index(p.h2, f.bucketSize)} {
			for j := range uint64(f.bucketSize) {
				if s.data[loc+j] == p.fp {
					n++
				}
			}
		}
	}
	return n
}

func (f *refCF) bucketDelete(bucket []byte, fp uint8) bool {
	if i := refBucketFind(bucket, f.bucketSize, fp); i >= 0 {
		bucket[i] = 0
		return true
	}
	return false
}

func (f *refCF) delete(hash uint64) bool {
	p := refLookupParams(hash)
	for i := len(f.filters); i > 0; i-- {
		s := &f.filters[i-1]
		if f.bucketDelete(s.data[s.index(p.h1, f.bucketSize):], p.fp) || f.bucketDelete(s.data[s.index(p.h2, f.bucketSize):], p.fp) {
			f.numItems--
			f.numDeletes++
			if len(f.filters) > 1 && float64(f.numDeletes) > float64(f.numItems)*0.10 {
				f.compact(false)
			}
			return true
		}
	}
	return false
}

// findAvailable returns the slot's index in s.data, or −1.
func (f *refCF) findAvailable(s *refSub, p refParams) int64 {
	for _, loc := range []uint64{s.index(p.h1, f.bucketSize), s.index(p.h2, f.bucketSize)} {
		if i := refBucketFind(s.data[loc:], f.bucketSize, 0); i >= 0 {
			return int64(loc) + int64(i)
		}
	}
	return -1
}

// insertFP returns 1 (inserted), −1 (no space) or −2 (cannot grow).
func (f *refCF) insertFP(p refParams) int {
	for i := len(f.filters) - 1; i >= 0; i-- {
		if slot := f.findAvailable(&f.filters[i], p); slot >= 0 {
			f.filters[i].data[slot] = p.fp
			f.numItems++
			return 1
		}
	}
	if f.koInsert(&f.filters[len(f.filters)-1], p) {
		f.numItems++
		return 1
	}
	if f.expansion == 0 {
		return -1
	}
	if f.grow() != 0 {
		return -2
	}
	return f.insertFP(p)
}

func (f *refCF) insert(hash uint64) int { return f.insertFP(refLookupParams(hash)) }

func (f *refCF) insertUnique(hash uint64) int {
	p := refLookupParams(hash)
	if f.checkFP(p) {
		return 0
	}
	return f.insertFP(p)
}

func (f *refCF) koInsert(s *refSub, p refParams) bool {
	numBuckets, bucketSize := s.numBuckets, uint64(f.bucketSize)
	fp := p.fp
	var counter uint16
	var victimIx uint32
	ii := p.h1 % numBuckets
	for counter < f.maxIterations {
		counter++
		bucket := s.data[ii*bucketSize:]
		bucket[victimIx], fp = fp, bucket[victimIx]
		ii = refAltHash(fp, ii) % numBuckets
		if e := refBucketFind(s.data[ii*bucketSize:], f.bucketSize, 0); e >= 0 {
			s.data[ii*bucketSize+uint64(e)] = fp
			return true
		}
		victimIx = (victimIx + 1) % uint32(bucketSize)
	}
	counter = 0
	for counter < f.maxIterations {
		counter++
		victimIx = (victimIx + uint32(bucketSize) - 1) % uint32(bucketSize)
		ii = refAltHash(fp, ii) % numBuckets
		bucket := s.data[ii*bucketSize:]
		bucket[victimIx], fp = fp, bucket[victimIx]
	}
	return false
}

func (f *refCF) relocateSlot(filterIx int, bucketIx uint64, slotIx uint64) int {
	s := &f.filters[filterIx]
	pos := bucketIx*uint64(f.bucketSize) + slotIx
	p := refParams{fp: s.data[pos]}
	if p.fp == 0 {
		return 0
	}
	p.h1 = bucketIx
	p.h2 = refAltHash(p.fp, bucketIx)
	for i := range filterIx {
		if slot := f.findAvailable(&f.filters[i], p); slot >= 0 {
			f.filters[i].data[slot] = p.fp
			s.data[pos] = 0
			return 1
		}
	}
	return -1
}

func (f *refCF) compactSingle(filterIx int) int {
	rv := 1
	for b := range f.filters[filterIx].numBuckets {
		for slot := range uint64(f.bucketSize) {
			if f.relocateSlot(filterIx, b, slot) == -1 {
				rv = -1
			}
		}
	}
	if rv == 1 && filterIx == len(f.filters)-1 {
		f.filters = f.filters[:filterIx]
	}
	return rv
}

func (f *refCF) compact(cont bool) {
	for ii := len(f.filters) - 1; ii > 0; ii-- {
		if f.compactSingle(ii) == -1 && !cont {
			break
		}
	}
	f.numDeletes = 0
}

// dump returns the header chunk and the sub-filters' bytes end to end.
func (f *refCF) dump() ([]byte, []byte) {
	var h []byte
	h = binary.LittleEndian.AppendUint64(h, f.numItems)
	h = binary.LittleEndian.AppendUint64(h, f.numBuckets)
	h = binary.LittleEndian.AppendUint64(h, f.numDeletes)
	h = binary.LittleEndian.AppendUint64(h, uint64(len(f.filters)))
	h = binary.LittleEndian.AppendUint16(h, f.bucketSize)
	h = binary.LittleEndian.AppendUint16(h, f.maxIterations)
	h = binary.LittleEndian.AppendUint16(h, f.expansion)
	var data []byte
	for _, s := range f.filters {
		data = append(data, s.data...)
	}
	return h, data
}
