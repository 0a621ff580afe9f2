// TEMPORARY: removed when merged with the package move

package redisbloom

import "encoding/binary"

// murmur64A is Austin Appleby's MurmurHash64A: 8-byte little-endian blocks,
// then the tail, then the final mix. (A copy of the root package's, until
// the move of the BF code brings redisbloom/hash.go.)
func murmur64A(data []byte, seed uint64) uint64 {
	const m, r = 0xc6a4a7935bd1e995, 47
	h := seed ^ uint64(len(data))*m
	for len(data) >= 8 {
		k := binary.LittleEndian.Uint64(data)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		data = data[8:]
	}
	if t := len(data); t > 0 {
		var tail uint64
		for i := t - 1; i >= 0; i-- {
			tail = tail<<8 | uint64(data[i])
		}
		h ^= tail
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}
