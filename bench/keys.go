// Package bench compares ohbloom with other Bloom filter libraries on the
// same keys, in the same run. It is its own module so that the library's
// go.mod never lists the libraries it is compared with.
package bench

import (
	"encoding/binary"
	"math/rand/v2"
)

// KeySize is the length of the keys the comparisons use: 32 bytes, the size
// of a hash or of two 16-byte ids.
const KeySize = 32

// Keys holds n random keys of KeySize bytes back to back, so that a million
// keys cost 32 MB and no slice headers: the benchmarks measure the filters,
// not a walk over a slice of slices.
type Keys struct {
	flat []byte
	n    int
}

// NewKeys returns n pseudo-random keys drawn from a fixed seed; different
// seeds give disjoint key sets with overwhelming probability.
func NewKeys(n int, seed uint64) Keys {
	r := rand.New(rand.NewPCG(seed, 0x6f68626c6f6f6d))
	flat := make([]byte, n*KeySize)
	for i := 0; i < len(flat); i += 8 {
		binary.LittleEndian.PutUint64(flat[i:], r.Uint64())
	}
	return Keys{flat: flat, n: n}
}

// Len returns the number of keys.
func (k Keys) Len() int { return k.n }

// At returns key i, a view into the shared storage.
func (k Keys) At(i int) []byte { return k.flat[i*KeySize : (i+1)*KeySize : (i+1)*KeySize] }
