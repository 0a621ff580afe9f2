package server

import (
	"slices"
	"strings"
	"sync/atomic"

	"github.com/zeebo/xxh3"
)

// keyIndex orders the keys by a 64-bit hash of their names, for SCAN: its
// cursor is a hash, so it stays valid while keys come and go (a key present
// for a whole scan is returned, whatever is added or deleted meanwhile, as
// Redis promises), and a call costs its COUNT, not the size of the
// keyspace. The keys sit in buckets by the hash's top bits, each sorted, so
// that adding or removing a key moves a bucket's worth of entries at most.
// It is guarded by the store's mu, as the map is.
//
// It is also how KEYS, INFO and a save see every key without holding the
// store's lock for the whole keyspace (a writer waiting for that lock
// stops every reader behind it, and a loop creating a key is a writer): a
// snapshot copies the bucket slices, 4096 of them, under the read lock,
// and shares their arrays; a change to a bucket made before the last
// snapshot copies the bucket first (copy on write), so that a snapshot
// stays what it was while it is read without the lock.
type keyIndex struct {
	buckets [1 << keyIndexBits][]indexedKey
	// made[i] is the generation bucket i's array was made in; gen counts
	// snapshots, each of which starts a new generation.
	made [1 << keyIndexBits]uint64
	gen  atomic.Uint64
	n    int
}

// keyIndexBits is the log2 of the bucket count: 4096 buckets, so that a
// call over a sparse keyspace looks at a few thousand empty slices at most,
// and a bucket of a million keys holds some 250.
const keyIndexBits = 12

type indexedKey struct {
	hash uint64
	name string
}

func scanHash(name string) uint64 { return xxh3.HashString(name) }

func cmpIndexed(a, b indexedKey) int {
	switch {
	case a.hash < b.hash:
		return -1
	case a.hash > b.hash:
		return 1
	}
	return strings.Compare(a.name, b.name)
}

// own makes bucket i's array one no snapshot shares, so that it may be
// changed in place.
func (x *keyIndex) own(i uint64) {
	if gen := x.gen.Load(); x.made[i] != gen {
		x.buckets[i] = slices.Clone(x.buckets[i])
		x.made[i] = gen
	}
}

func (x *keyIndex) add(name string) {
	k := indexedKey{scanHash(name), name}
	bi := k.hash >> (64 - keyIndexBits)
	i, found := slices.BinarySearchFunc(x.buckets[bi], k, cmpIndexed)
	if !found {
		x.own(bi)
		x.buckets[bi] = slices.Insert(x.buckets[bi], i, k)
		x.n++
	}
}

func (x *keyIndex) remove(name string) {
	k := indexedKey{scanHash(name), name}
	bi := k.hash >> (64 - keyIndexBits)
	if i, found := slices.BinarySearchFunc(x.buckets[bi], k, cmpIndexed); found {
		x.own(bi)
		x.buckets[bi] = slices.Delete(x.buckets[bi], i, i+1)
		if len(x.buckets[bi]) == 0 {
			x.buckets[bi] = nil
		}
		x.n--
	}
}

func (x *keyIndex) reset() {
	x.buckets = [1 << keyIndexBits][]indexedKey{}
	x.n = 0
}

// indexSnapshot is the keys as they were at one instant, in hash order.
type indexSnapshot struct {
	buckets [1 << keyIndexBits][]indexedKey
	n       int
}

// snapshot returns the keys as they are. The caller holds the store's
// read lock (concurrent snapshots are fine: gen is atomic); the snapshot
// is read without it.
func (x *keyIndex) snapshot() *indexSnapshot {
	snap := &indexSnapshot{buckets: x.buckets, n: x.n}
	x.gen.Add(1)
	return snap
}

// each calls f with every name of the snapshot, in hash order.
func (snap *indexSnapshot) each(f func(name string)) {
	for _, b := range snap.buckets {
		for _, k := range b {
			f(k.name)
		}
	}
}

// scan calls visit for the keys whose hash is at least cursor, in hash
// order, until it has visited count of them and every key sharing the last
// one's hash; it returns the cursor of the next call, 0 when none is left.
// (A key whose hash is 0 is visited only by a scan that starts at 0, once,
// which is all a scan needs.)
func (x *keyIndex) scan(cursor uint64, count int64, visit func(name string)) uint64 {
	var visited int64
	var last uint64
	for bi := cursor >> (64 - keyIndexBits); bi < uint64(len(x.buckets)); bi++ {
		b := x.buckets[bi]
		i := 0
		if bi == cursor>>(64-keyIndexBits) {
			i, _ = slices.BinarySearchFunc(b, indexedKey{hash: cursor}, cmpIndexed)
		}
		for ; i < len(b); i++ {
			if visited >= count && b[i].hash != last {
				return b[i].hash
			}
			visit(b[i].name)
			visited++
			last = b[i].hash
		}
	}
	return 0
}

// walkChunk is how many keys a walk of the whole keyspace visits under one
// hold of the store's read lock (scanChunk): a few hundred microseconds.
const walkChunk = 1024

// scanChunks is keyIndex.scan of database db in chunks of at most walkChunk keys, each
// under its own hold of the store's read lock, with lock and unlock around
// each (the store's read lock, and whatever else the caller must hold
// while it reads the index). visit runs without them: it may be slow.
// It returns the cursor of the next call, as scan does; stop, checked
// before each key, ends the walk early, at the first key whose hash
// differs from the last visited one's, so that the cursor returned goes
// on exactly there.
func (s *store) scanChunks(db int, cursor uint64, count int64, lock, unlock func(), visit func(name string), stop func() bool) uint64 {
	names := make([]string, 0, min(count, walkChunk))
	var last uint64
	for visited := int64(0); visited < count; {
		names = names[:0]
		lock()
		s.mu.RLock()
		next := s.dbs[db].idx().scan(cursor, min(count-visited, walkChunk), func(name string) { names = append(names, name) })
		s.mu.RUnlock()
		unlock()
		for _, name := range names {
			h := scanHash(name)
			if visited > 0 && h != last && stop() {
				return h
			}
			visit(name)
			visited++
			last = h
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	return cursor
}
