package ohbloom

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"

	"github.com/ohbloom/ohbloom/internal/testkeys"
)

// keyShape generates key i of a family of distinct keys. The shapes are the
// ones that break weak hashes: counters, shared prefixes, near-duplicates.
type keyShape struct {
	name string
	key  func(dst []byte, i uint64) []byte
}

// sharedPrefix is 200 bytes every key of the "prefix" shape starts with.
var sharedPrefix = []byte("tenant=acme-corporation/region=eu-west-1/service=block-relations/" +
	"version=2026-12-02/table=user_blocks/partition=0000000000000000000000000000000000000000/" +
	"subject=did:plc:aaaaaaaaaaaaaaaaaaaaaaa/object=")[:200]

// onebitBase is the 32-byte key that the "onebit" shape flips bits of.
var onebitBase = func() []byte {
	b := make([]byte, 32)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

var keyShapes = []keyShape{
	{"random", func(dst []byte, i uint64) []byte {
		// A bijective mix of i: distinct, and as random as a key gets.
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], testkeys.Mix(i))
		binary.LittleEndian.PutUint64(b[8:], testkeys.Mix(i^0x5bd1e995))
		return append(dst[:0], b[:]...)
	}},
	{"sequential", func(dst []byte, i uint64) []byte {
		return binary.BigEndian.AppendUint64(dst[:0], i)
	}},
	{"decimal", func(dst []byte, i uint64) []byte {
		return strconv.AppendUint(dst[:0], i, 10)
	}},
	{"prefix", func(dst []byte, i uint64) []byte {
		return strconv.AppendUint(append(dst[:0], sharedPrefix...), i, 10)
	}},
	{"onebit", func(dst []byte, i uint64) []byte {
		// Runs of 256 keys that are the same 32 bytes but for which one
		// bit is flipped, followed by the run number: keys two bits apart.
		dst = append(dst[:0], onebitBase...)
		dst[(i%256)/8] ^= 1 << (i % 8)
		return binary.BigEndian.AppendUint64(dst, i/256)
	}},
}
