package redisbloom

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// RedisBloom hashes an item once per chain into two 64-bit values (a, b),
// and every filter of the chain probes bits (a + i·b) mod its size. Which
// hash gives (a, b) depends on the chain:
//
//   - Force64 set (every chain RedisBloom has made since 1.1):
//     a = MurmurHash64A(item, seed 0xc6a4a7935bd1e995), b =
//     MurmurHash64A(item, seed a).
//   - Force64 clear (older chains): a = MurmurHash2(item, seed
//     0x9747b28c), b = MurmurHash2(item, seed a), both 32-bit.
//   - A chain whose dump header carries a hash configuration of version 1
//     (RedisBloom's bf-hash-seed): a = XXH3_64(item, seed s), b =
//     XXH3_64(item, seed s + 0x9e3779b97f4a7c15).

const (
	bfMurmur64Seed  = 0xc6a4a7935bd1e995
	bfMurmur32Seed  = 0x9747b28c
	bfXXH3DomainMul = 0x9e3779b97f4a7c15
)

// murmur64A is Austin Appleby's MurmurHash64A: 8-byte little-endian blocks,
// then the tail, then the final mix.
func murmur64A(data []byte, seed uint64) uint64 {
	const m, r = 0xc6a4a7935bd1e995, 47
	h := seed ^ uint64(len(data))*m
	// Four blocks a step, with one bounds check and one reslice for the
	// four: a cuckoo filter's add or test is short enough that the hash's
	// instructions decide how many of them the core overlaps.
	for len(data) >= 32 {
		b := data[:32:32]
		k0 := binary.LittleEndian.Uint64(b[0:8])
		k1 := binary.LittleEndian.Uint64(b[8:16])
		k2 := binary.LittleEndian.Uint64(b[16:24])
		k3 := binary.LittleEndian.Uint64(b[24:32])
		k0 *= m
		k0 ^= k0 >> r
		k0 *= m
		k1 *= m
		k1 ^= k1 >> r
		k1 *= m
		k2 *= m
		k2 ^= k2 >> r
		k2 *= m
		k3 *= m
		k3 ^= k3 >> r
		k3 *= m
		h = ((((h^k0)*m^k1)*m^k2)*m ^ k3) * m
		data = data[32:]
	}
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
		// The tail's bytes go in little-endian order, as the reference's
		// fall-through switch puts them.
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

// murmur2 is Austin Appleby's 32-bit MurmurHash2, reading 4-byte blocks
// little-endian as it does on the x86 machines RedisBloom runs on.
func murmur2(data []byte, seed uint32) uint32 {
	const m, r = 0x5bd1e995, 24
	h := seed ^ uint32(len(data))
	for len(data) >= 4 {
		k := binary.LittleEndian.Uint32(data)
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		data = data[4:]
	}
	switch len(data) {
	case 3:
		h ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// bfHashKind says which of the three hashes above a chain uses.
type bfHashKind uint8

const (
	bfHashMurmur32 bfHashKind = iota
	bfHashMurmur64
	bfHashXXH3
)

// bfHasher is a chain's hash: its kind and, for XXH3, its seed.
type bfHasher struct {
	kind bfHashKind
	seed uint64
}

// hash returns the item's (a, b).
func (h bfHasher) hash(item []byte) (a, b uint64) {
	switch h.kind {
	case bfHashMurmur64:
		a = murmur64A(item, bfMurmur64Seed)
		return a, murmur64A(item, a)
	case bfHashXXH3:
		return xxh3.HashSeed(item, h.seed), xxh3.HashSeed(item, h.seed+bfXXH3DomainMul)
	}
	a32 := murmur2(item, bfMurmur32Seed)
	return uint64(a32), uint64(murmur2(item, a32))
}
