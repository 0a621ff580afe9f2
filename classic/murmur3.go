package classic

import (
	"encoding/binary"
	"math/bits"
)

// murmurState is MurmurHash3_x64_128 (seed 0) part way: after the whole
// 16-byte blocks of the input.
type murmurState struct{ h1, h2 uint64 }

const murmurC1, murmurC2 = 0x87c37b91114253d5, 0x4cf5ad432745937f

func (s *murmurState) block(k1, k2 uint64) {
	k1 *= murmurC1
	k1 = bits.RotateLeft64(k1, 31)
	k1 *= murmurC2
	s.h1 ^= k1
	s.h1 = bits.RotateLeft64(s.h1, 27)
	s.h1 += s.h2
	s.h1 = s.h1*5 + 0x52dce729
	k2 *= murmurC2
	k2 = bits.RotateLeft64(k2, 33)
	k2 *= murmurC1
	s.h2 ^= k2
	s.h2 = bits.RotateLeft64(s.h2, 31)
	s.h2 += s.h1
	s.h2 = s.h2*5 + 0x38495ab5
}

// finish hashes the tail (t < 16 bytes; bytes past t are zero) and
// finalizes, for an input of length bytes in all.
func (s murmurState) finish(tail *[16]byte, t int, length uint64) (uint64, uint64) {
	h1, h2 := s.h1, s.h2
	if t > 8 {
		k2 := binary.LittleEndian.Uint64(tail[8:])
		k2 *= murmurC2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= murmurC1
		h2 ^= k2
	}
	if t > 0 {
		k1 := binary.LittleEndian.Uint64(tail[:])
		k1 *= murmurC1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= murmurC2
		h1 ^= k1
	}
	h1 ^= length
	h2 ^= length
	h1 += h2
	h2 += h1
	h1, h2 = fmix64(h1), fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

// murmur3 returns MurmurHash3_x64_128 of data with seed 0, as (h1, h2): the
// hash of bits-and-blooms/bloom and of Guava's murmur3_128.
func murmur3(data []byte) (h1, h2 uint64) {
	s, tail, t := murmurBlocks(data)
	return s.finish(&tail, t, uint64(len(data)))
}

// murmur3Pair returns the hashes of data and of data followed by a byte
// 0x01, which is how bits-and-blooms derives its four base hashes. The
// blocks are hashed once for both.
func murmur3Pair(data []byte) (h1, h2, h3, h4 uint64) {
	s, tail, t := murmurBlocks(data)
	n := uint64(len(data))
	h1, h2 = s.finish(&tail, t, n)
	tail[t] = 1
	if t == 15 {
		s.block(binary.LittleEndian.Uint64(tail[:]), binary.LittleEndian.Uint64(tail[8:]))
		clear(tail[:])
		h3, h4 = s.finish(&tail, 0, n+1)
	} else {
		h3, h4 = s.finish(&tail, t+1, n+1)
	}
	return h1, h2, h3, h4
}

// murmurBlocks hashes the whole blocks of data and returns the state and
// the tail.
func murmurBlocks(data []byte) (s murmurState, tail [16]byte, t int) {
	for len(data) >= 16 {
		s.block(binary.LittleEndian.Uint64(data), binary.LittleEndian.Uint64(data[8:]))
		data = data[16:]
	}
	t = copy(tail[:], data)
	return s, tail, t
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
