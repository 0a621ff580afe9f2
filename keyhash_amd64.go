//go:build !purego

package ohbloom

// The single-key calls (Filter's Test, TestString, Add and AddString,
// AtomicFilter's Add and AddString) hash the key and probe its block in
// one assembly routine (keyhash_amd64.s), with an XXH3-64 of their own
// for keys of up to 128 bytes, held to github.com/zeebo/xxh3 by
// TestKeyHashMatchesXXH3 and FuzzKeyHash. The batched calls hash their
// windows of keys with it too.

// keyTest is Filter.Test of the n bytes at p, hash and probe in one call
// (keyhash_amd64.s). Where l has no vector probe it hashes the key and
// jumps to testHash; a key longer than 128 bytes goes to testKey.
//
//go:noescape
func keyTest(l *core, p *byte, n int) bool

// keyAdd is Filter.Add of the n bytes at p, as keyTest is Test, with
// addHash and addKey as its ways out.
//
//go:noescape
func keyAdd(l *core, p *byte, n int)

// keyAtomicAdd is AtomicFilter.Add of the n bytes at p, as keyAdd is
// Filter.Add; atomicAddHash and atomicAddKey add what it does not.
//
//go:noescape
func keyAtomicAdd(l *core, p *byte, n int)

// testHash and addHash are keyTest's and keyAdd's generated probes, for
// a core with no vector probe: the assembly hashes the key, puts the hash
// where the key's pointer was and jumps here. The unnamed third argument
// keeps testHash's result where keyTest's is.
func testHash(l *core, h uint64, _ int) bool { return l.test(l.blockOf(h), residue(h)) }
func addHash(l *core, h uint64, _ int)       { l.add(l.blockOf(h), residue(h)) }

// atomicAddHash is addHash for keyAtomicAdd.
func atomicAddHash(l *core, h uint64, _ int) { l.atomicAddBits(l.blockOf(h), residue(h)) }

// keyHash is the hash of keyTest and keyAdd alone: XXH3-64 with l's seed
// of the n bytes at p, ok false for keys longer than 128 bytes.
//
//go:noescape
func keyHash(l *core, p *byte, n int) (h uint64, ok bool)

// keyHashes is keyHash over many keys: key i's header ([]byte or string:
// pointer, then length) is at keys + i·stride. It hashes into hs until hs
// is full or a key is longer than keyHash takes, and returns how many it
// hashed.
//
//go:noescape
func keyHashes(l *core, keys *keyHeader, stride uintptr, hs []uint64) int

// hashWindow hashes keys into hs with the assembly hash, the single-key
// calls' own: in one call per window rather than a Go call of xxh3's per
// key, which made the batched calls slower than a loop of Test on a
// filter in the caches (docs/design.md, "Batches"). A key longer than it
// takes goes to xxh3.
func hashWindow[K []byte | string](l *core, hs []uint64, keys []K) {
	keys = keys[:len(hs)]
	for i := 0; i < len(hs); {
		first, stride := keyHeaders(keys, i)
		i += keyHashes(l, first, stride, hs[i:])
		if i < len(hs) {
			goHashWindow(hs[i:i+1], keys[i:i+1], l.seed)
			i++
		}
	}
}

// hashSecret is the first 128 bytes of XXH3's default secret, as words,
// with a seed folded in as XXH3 folds it for keys of 17 to 128 bytes: added
// to the first word of each 16-byte pair, subtracted from the second. The
// assembly hash reads it from the core rather than fold the seed into
// each word on every key: 4 instructions fewer on a 32-byte key.
type hashSecret [16]uint64

// xxh3Secret is XXH3's default secret, bytes 0 to 127, little-endian words.
var xxh3Secret = hashSecret{
	0xbe4ba423396cfeb8, 0x1cad21f72c81017c, 0xdb979083e96dd4de, 0x1f67b3b7a4a44072,
	0x78e5c0cc4ee679cb, 0x2172ffcc7dd05a82, 0x8e2443f7744608b8, 0x4c263a81e69035e0,
	0xcb00c391bb52283c, 0xa32e531b8b65d088, 0x4ef90da297486471, 0xd8acdea946ef1938,
	0x3f349ce33f76faa8, 0x1d4f0bc7c7bbdcf9, 0x3159b4cd4be0518a, 0x647378d9c97e9fc8,
}

// fold sets s to XXH3's secret with seed folded in.
func (s *hashSecret) fold(seed uint64) {
	for i, w := range xxh3Secret {
		if i%2 == 0 {
			s[i] = w + seed
		} else {
			s[i] = w - seed
		}
	}
}
