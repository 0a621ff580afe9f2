// Package bench compares ohbloom with other Bloom filter libraries on the
// same keys, in the same run. It is its own module so that the library's
// go.mod never lists the libraries it is compared with.
package bench

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
)

// KeySize is the length of the keys of the peer comparisons: 32 bytes, the
// size of a hash or of two 16-byte ids.
const KeySize = 32

// PairSize is the length of a block relation key,
// "did:plc:<24 base32>|did:plc:<24 base32>".
const PairSize = 2*(8+24) + 1

// Keys holds n keys of one size back to back, so that 10^8 keys cost their
// bytes and no slice headers (2.4 GB more): the benchmarks measure the
// filters, not a walk over a slice of slices.
type Keys struct {
	flat    []byte
	size, n int
}

// NewKeys returns n pseudo-random keys of KeySize bytes drawn from a fixed
// seed; different seeds give disjoint key sets with overwhelming
// probability.
func NewKeys(n int, seed uint64) Keys {
	return generate(n, KeySize, seed, func(k []byte, r *rand.Rand) {
		for i := 0; i < len(k); i += 8 {
			binary.LittleEndian.PutUint64(k[i:], r.Uint64())
		}
	})
}

// NewPairs returns n pseudo-random block relations from a fixed seed.
func NewPairs(n int, seed uint64) Keys {
	return generate(n, PairSize, seed, func(k []byte, r *rand.Rand) {
		did(k[:32], r)
		k[32] = '|'
		did(k[33:], r)
	})
}

// generate fills n keys of the given size with fill, on all cores. Each
// chunk of 2^16 keys has its own generator, so key i is the same whatever
// n and the number of cores.
func generate(n, size int, seed uint64, fill func([]byte, *rand.Rand)) Keys {
	const chunk = 1 << 16
	k := Keys{flat: make([]byte, n*size), size: size, n: n}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for c := int(next.Add(1) - 1); c*chunk < n; c = int(next.Add(1) - 1) {
				r := rand.New(rand.NewPCG(seed, uint64(c)))
				for i := c * chunk; i < min(n, (c+1)*chunk); i++ {
					fill(k.At(i), r)
				}
			}
		})
	}
	wg.Wait()
	return k
}

const base32 = "abcdefghijklmnopqrstuvwxyz234567"

// did writes "did:plc:" and 24 random base32 characters into k.
func did(k []byte, r *rand.Rand) {
	copy(k, "did:plc:")
	a, b := r.Uint64(), r.Uint64()
	for j := range 12 {
		k[8+j] = base32[a>>(5*j)&31]
		k[20+j] = base32[b>>(5*j)&31]
	}
}

// Len returns the number of keys.
func (k Keys) Len() int { return k.n }

// At returns key i, a view into the shared storage.
func (k Keys) At(i int) []byte { return k.flat[i*k.size : (i+1)*k.size : (i+1)*k.size] }

// Views returns keys [from, to) as a slice of views, for the batched APIs.
func (k Keys) Views(dst [][]byte, from, to int) [][]byte {
	dst = dst[:0]
	for i := from; i < to; i++ {
		dst = append(dst, k.At(i))
	}
	return dst
}
