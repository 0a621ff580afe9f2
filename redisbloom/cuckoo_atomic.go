package redisbloom

import (
	"sync"
	"sync/atomic"
)

// AtomicCuckooFilter is a CuckooFilter safe for concurrent use by multiple
// goroutines, for a server that serves many connections at once.
//
// Test takes no lock: it reads the published sub-filters' words with
// atomic loads, between two loads of a sequence counter that writers make
// odd while they move fingerprints (kick-outs, deletes, compaction, loaded
// chunks), and reads again if the counter changed; after a few tries it
// takes the lock instead, so that a writer that is descheduled mid-move
// never makes it spin. An add into a free slot is one atomic store and
// needs no such bracket: a fingerprint appearing cannot make a reader miss
// another. Every other method takes one mutex, so that writers follow one
// another as RedisBloom's commands do: kick-outs move fingerprints across
// the whole sub-filter, which no finer lock would cover.
//
// Every method is linearizable: concurrent calls give the results and
// state of some order of the same calls made one by one on a CuckooFilter.
// ScanDump's data chunks are read without the lock, as the filter is at
// that moment; like RedisBloom's, a dump taken over several calls while
// the filter changes is no snapshot.
//
// The zero AtomicCuckooFilter is not usable until UnmarshalRDB fills it;
// otherwise make one with NewAtomicCuckoo, NewAtomicCuckooFromHeader or
// NewAtomicCuckooFromFilter.
type AtomicCuckooFilter struct {
	sh cfShared
	mu sync.Mutex
	t  cfTable // guarded by mu
}

// cfOptimisticTries is how often Test reads without the lock before it
// takes it: enough to ride out an add's kick-outs on another core.
const cfOptimisticTries = 4

func newAtomicCF(t cfTable) *AtomicCuckooFilter {
	f := &AtomicCuckooFilter{t: t}
	f.t.shared = &f.sh
	f.t.publish()
	return f
}

// NewAtomicCuckoo is NewCuckoo for an AtomicCuckooFilter.
func NewAtomicCuckoo(c CuckooConfig) (*AtomicCuckooFilter, error) {
	t, err := newCFTable(c)
	if err != nil {
		return nil, err
	}
	return newAtomicCF(t), nil
}

// NewAtomicCuckooFromHeader is NewCuckooFromHeader for an
// AtomicCuckooFilter.
func NewAtomicCuckooFromHeader(header []byte, maxBytes uint64) (*AtomicCuckooFilter, error) {
	t, err := decodeCFHeader(header, maxBytes)
	if err != nil {
		return nil, err
	}
	return newAtomicCF(t), nil
}

// NewAtomicCuckooFromFilter returns an AtomicCuckooFilter that takes over
// f's state; f must not be used afterwards.
func NewAtomicCuckooFromFilter(f *CuckooFilter) *AtomicCuckooFilter {
	t := f.t
	f.t = cfTable{}
	return newAtomicCF(t)
}

// Add is CuckooFilter.Add.
func (f *AtomicCuckooFilter) Add(item []byte) error { return f.AddHash(CuckooHash(item)) }

// AddHash is CuckooFilter.AddHash.
func (f *AtomicCuckooFilter) AddHash(h uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t.insert(h)
}

// AddUnique is CuckooFilter.AddUnique: the test and the add are one step.
func (f *AtomicCuckooFilter) AddUnique(item []byte) (bool, error) {
	return f.AddUniqueHash(CuckooHash(item))
}

// AddUniqueHash is CuckooFilter.AddUniqueHash.
func (f *AtomicCuckooFilter) AddUniqueHash(h uint64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t.insertUnique(h)
}

// Test is CuckooFilter.Test, without a lock.
func (f *AtomicCuckooFilter) Test(item []byte) bool { return f.TestHash(CuckooHash(item)) }

// TestHash is CuckooFilter.TestHash, without a lock.
func (f *AtomicCuckooFilter) TestHash(h uint64) bool {
	h2, fp := cfKey(h)
	for range cfOptimisticTries {
		s := f.sh.seq.Load()
		if s&1 != 0 {
			continue
		}
		v := f.sh.view.Load()
		r := cfTestSubsAtomic(v.subs, v.bucketSize, h, h2, fp)
		if f.sh.seq.Load() == s {
			return r
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t.test(h)
}

// Count is CuckooFilter.Count.
func (f *AtomicCuckooFilter) Count(item []byte) uint64 { return f.CountHash(CuckooHash(item)) }

// CountHash is CuckooFilter.CountHash.
func (f *AtomicCuckooFilter) CountHash(h uint64) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t.count(h)
}

// Delete is CuckooFilter.Delete.
func (f *AtomicCuckooFilter) Delete(item []byte) bool { return f.DeleteHash(CuckooHash(item)) }

// DeleteHash is CuckooFilter.DeleteHash.
func (f *AtomicCuckooFilter) DeleteHash(h uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t.delete(h)
}

// Compact is CuckooFilter.Compact. It holds the lock throughout, as
// RedisBloom holds the server; tests go on meanwhile.
func (f *AtomicCuckooFilter) Compact() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t.compact(true)
}

// Info is CuckooFilter.Info.
func (f *AtomicCuckooFilter) Info() CuckooInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t.info()
}

// SetMaxBytes is CuckooFilter.SetMaxBytes.
func (f *AtomicCuckooFilter) SetMaxBytes(n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t.maxBytes = cfMaxBytes(n)
}

// ScanDump is CuckooFilter.ScanDump. It copies a data chunk without the
// lock.
func (f *AtomicCuckooFilter) ScanDump(iter int64, dst []byte) (int64, []byte) {
	f.mu.Lock()
	if f.t.numItems == 0 || iter <= 0 {
		next := int64(0)
		if f.t.numItems != 0 && iter == 0 {
			next, dst = 1, f.t.appendHeader(dst)
		}
		f.mu.Unlock()
		return next, dst
	}
	s, off, n, next, ok := f.t.chunk(iter, CuckooMaxChunk)
	var words []uint64
	if ok {
		words = s.words
	}
	f.mu.Unlock()
	if !ok {
		return 0, dst
	}
	return next, cfAppendBytes(dst, words, off, n, true)
}

// LoadChunk is CuckooFilter.LoadChunk.
func (f *AtomicCuckooFilter) LoadChunk(iter int64, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t.loadChunk(iter, data)
}

// MarshalRDB is CuckooFilter.MarshalRDB, under the lock.
func (f *AtomicCuckooFilter) MarshalRDB() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t.appendRDB(nil)
}

// UnmarshalRDB is CuckooFilter.UnmarshalRDB. It decodes without the lock
// and replaces the filter at once.
func (f *AtomicCuckooFilter) UnmarshalRDB(data []byte, encver int, maxBytes uint64) (int, error) {
	t, n, err := decodeCFRDB(data, encver, maxBytes)
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t.shared = &f.sh
	f.sh.seq.Add(1)
	f.t = t
	f.t.publish()
	f.sh.seq.Add(1)
	return n, nil
}

// String is CuckooFilter.String.
func (f *AtomicCuckooFilter) String() string { return cfString(f.Info()) }

func cfLoad(words []uint64, i uint64) uint64 { return atomic.LoadUint64(&words[i]) }

// cfTestSubsAtomic is cfTestSubs with atomic loads.
func cfTestSubsAtomic(subs []cfSub, bs, h1, h2 uint64, fp uint8) bool {
	pat := uint64(fp) * cfOnes
	switch bs {
	case 1:
		for i := range subs {
			s := &subs[i]
			l1, l2 := uint64(uint32(h1&s.mask)), uint64(uint32(h2&s.mask))
			if uint8(cfLoad(s.words, l1>>3)>>(l1&7*8)) == fp || uint8(cfLoad(s.words, l2>>3)>>(l2&7*8)) == fp {
				return true
			}
		}
	case 2:
		for i := range subs {
			s := &subs[i]
			l1, l2 := uint64(uint32((h1&s.mask)<<1)), uint64(uint32((h2&s.mask)<<1))
			w1, w2 := cfLoad(s.words, l1>>3), cfLoad(s.words, l2>>3)
			b := (w1>>(l1&7*8))&0xffff | (w2>>(l2&7*8))&0xffff<<16
			if cfEqualBytes(b, pat)&0x80808080 != 0 {
				return true
			}
		}
	case 4:
		for i := range subs {
			s := &subs[i]
			l1, l2 := uint64(uint32((h1&s.mask)<<2)), uint64(uint32((h2&s.mask)<<2))
			w1, w2 := cfLoad(s.words, l1>>3), cfLoad(s.words, l2>>3)
			if cfEqualBytes(uint64(uint32(w1>>(l1&7*8)))|uint64(uint32(w2>>(l2&7*8)))<<32, pat) != 0 {
				return true
			}
		}
	case 8:
		for i := range subs {
			s := &subs[i]
			l1, l2 := uint64(uint32((h1&s.mask)<<3)), uint64(uint32((h2&s.mask)<<3))
			if cfEqualBytes(cfLoad(s.words, l1>>3), pat)|cfEqualBytes(cfLoad(s.words, l2>>3), pat) != 0 {
				return true
			}
		}
	default:
		for i := range subs {
			s := &subs[i]
			if cfHasAtomic(s.words, cfLoc(h1, s.mask, bs), bs, pat) || cfHasAtomic(s.words, cfLoc(h2, s.mask, bs), bs, pat) {
				return true
			}
		}
	}
	return false
}

// cfHasAtomic reports whether any of the n bytes from pos equals the byte
// pattern pat, with atomic loads.
func cfHasAtomic(words []uint64, pos, n, pat uint64) bool {
	end := pos + n
	for w := pos >> 3; w<<3 < end; w++ {
		base := w << 3
		if cfEqualBytes(cfLoad(words, w), pat)&cfByteRange(max(pos, base)-base, min(end, base+8)-base) != 0 {
			return true
		}
	}
	return false
}
