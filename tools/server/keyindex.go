package server

import (
	"slices"
	"strings"

	"github.com/zeebo/xxh3"
)

// keyIndex orders the keys by a 64-bit hash of their names, for SCAN: its
// cursor is a hash, so it stays valid while keys come and go (a key present
// for a whole scan is returned, whatever is added or deleted meanwhile, as
// Redis promises), and a call costs its COUNT, not the size of the
// keyspace. The keys sit in buckets by the hash's top bits, each sorted, so
// that adding or removing a key moves a bucket's worth of entries at most.
// It is guarded by the store's mu, as the map is.
type keyIndex struct {
	buckets [1 << keyIndexBits][]indexedKey
	n       int
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

func (x *keyIndex) bucket(h uint64) *[]indexedKey { return &x.buckets[h>>(64-keyIndexBits)] }

func (x *keyIndex) add(name string) {
	k := indexedKey{scanHash(name), name}
	b := x.bucket(k.hash)
	i, found := slices.BinarySearchFunc(*b, k, cmpIndexed)
	if !found {
		*b = slices.Insert(*b, i, k)
		x.n++
	}
}

func (x *keyIndex) remove(name string) {
	k := indexedKey{scanHash(name), name}
	b := x.bucket(k.hash)
	if i, found := slices.BinarySearchFunc(*b, k, cmpIndexed); found {
		*b = slices.Delete(*b, i, i+1)
		if len(*b) == 0 {
			*b = nil
		}
		x.n--
	}
}

func (x *keyIndex) reset() { *x = keyIndex{} }

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
