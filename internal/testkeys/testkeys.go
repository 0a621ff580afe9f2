// Package testkeys makes the keys that the tests and benchmarks of every
// filter package share: distinct, random-looking and reproducible.
package testkeys

import "encoding/binary"

// Mix is SplitMix64's finalizer, a bijection on uint64: distinct inputs
// give distinct, random-looking outputs.
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Key16 writes benchmark key i into buf and returns it: Mix(i) then i,
// both little-endian, 16 distinct bytes for every i.
func Key16(buf *[16]byte, i uint64) []byte {
	binary.LittleEndian.PutUint64(buf[:], Mix(i))
	binary.LittleEndian.PutUint64(buf[8:], i)
	return buf[:]
}
