//go:build !purego

package ohbloom

import (
	"os"
	"slices"
	"sync/atomic"
	"unsafe"
)

// The vector probe computes all k bit positions of a key at once in the
// eight qword lanes of an AVX-512 register, where the generated probes
// spend a dozen scalar instructions on each partition. It uses Lemire's
// direct remainder (Lemire, Kaser and Kurz, "Faster Remainder by Direct
// Computation", 2019): with magic = ceil(2^52/size), the fraction
// f = magic·x mod 2^52 of x/size gives x mod size = f·size >> 52 exactly
// for every x < 2^32 and size ≤ 2^20, since 52 ≥ 32 + log2(size). AVX-512
// IFMA's 52-bit multiply-adds compute both products, the second added to
// the partition's offset: two vector operations for eight lanes (BITS in
// vector_amd64.s). The block's words are picked by the lanes' word
// numbers with one permute, and the bits in them with one VPSHUFBITQMB.
// TestVectorMatchesProbes holds it to the generated probes bit for bit,
// at the residues where a quotient changes.
//
// It runs on 512-bit registers only where AVX-512 costs no clock speed:
// AMD since Zen 4 and Intel since Ice Lake. On Skylake-SP and Cascade Lake
// heavy 512-bit arithmetic lowers the core's frequency for everything else
// running on it, so there the generated probes stay.

// vecProbe holds the constants of one partition table, lane i serving
// partition i. Lanes past k repeat partition 0: they test and set the same
// bit again, so no lane mask is needed.
type vecProbe struct {
	magic  [16]uint64 // ceil(2^52 / size)
	size   [16]uint64
	offset [16]uint64
	halves uint64 // 1 for k ≤ 8, else 2

	// For vecAdd: candidates[j][w] is the j-th partition (lane) whose bits
	// reach into word w of the block, for j < rounds; a word reached by
	// fewer repeats its first. Partitions are contiguous, so a word meets
	// at most two of them when every size exceeds 62 (k ≤ 7), and up to
	// six with the small sizes of k = 16.
	rounds     uint64
	candidates [maxK][blockWords]uint64
}

// vecTest reports whether every bit of x is set in b (vector_amd64.s).
//
//go:noescape
func vecTest(b *block, x uint32, p *vecProbe) bool

// vecAdd sets the bits of x in b, with one 64-byte read-modify-write, and
// reports whether they were all set already; then it writes nothing.
//
//go:noescape
func vecAdd(b *block, x uint32, p *vecProbe) (present bool)

// vecAtomicAdd is vecAdd for AtomicFilter: one atomic OR for each word
// that lacks a bit of x, none when x is present (vector_amd64.s).
//
//go:noescape
func vecAtomicAdd(b *block, x uint32, p *vecProbe) (present bool)

// keyTest is Filter.Test of the n bytes at p, hash and probe in one call
// (vector_amd64.s). Where l has no vector probe it hashes the key and
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
func keyHashes(l *core, keys unsafe.Pointer, stride uintptr, hs []uint64) int

// hashWindow hashes keys into hs with the assembly hash, the single-key
// calls' own: in one call per window rather than a Go call of xxh3's
// per key, which made the batched calls slower than a loop of Test on a
// filter in the caches (7.8 against 6.4 ns a key on an AMD EPYC, 10^6
// keys). A key longer than it takes goes to xxh3.
func hashWindow[K []byte | string](l *core, hs []uint64, keys []K) {
	keys = keys[:len(hs)]
	for i := 0; i < len(hs); {
		i += keyHashes(l, unsafe.Pointer(&keys[i]), unsafe.Sizeof(keys[i]), hs[i:])
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

// vecTestHashes and vecAddHashes are vecTest and vecAdd over a window of
// hashes, their blocks found as core.blockOf finds them
// (vector_amd64.s). results must be at least as long as hs.
//
//go:noescape
func vecTestHashes(blocks unsafe.Pointer, nblocks uint64, hs []uint64, results []bool, p *vecProbe)

//go:noescape
func vecAddHashes(blocks unsafe.Pointer, nblocks uint64, hs []uint64, p *vecProbe)

// vecAddPacked is vecAddHashes for the packed entries of a private build
// (parallel.go): block e>>32 of blocks, residue uint32(e).
//
//go:noescape
func vecAddPacked(blocks unsafe.Pointer, ps []uint64, p *vecProbe)

// vecAddEntries adds the packed entries ps to blocks.
func vecAddEntries(blocks []block, ps []uint64, p *vecProbe) {
	if len(ps) > 0 {
		vecAddPacked(unsafe.Pointer(&blocks[0]), ps, p)
	}
}

// vecTestWindow tests the keys of hs with the vector probe, answers in
// results[i]; vecAddWindow adds them.
func (l *core) vecTestWindow(hs []uint64, results []bool) {
	if len(hs) > 0 {
		_ = results[len(hs)-1]
		vecTestHashes(unsafe.Pointer(&l.blocks[0]), l.nblocks, hs, results, l.vec)
	}
}

func (l *core) vecAddWindow(hs []uint64) {
	if len(hs) > 0 {
		vecAddHashes(unsafe.Pointer(&l.blocks[0]), l.nblocks, hs, l.vec)
	}
}

func cpuid(leaf, sub uint32) (a, b, c, d uint32)
func xgetbv() (a, d uint32)

// hasVector reports whether this CPU and OS run the vector probe well.
var hasVector = detectVector()

// useRTM reports whether AtomicFilter's vector code sets a new key's bits
// in one hardware transaction (TXOR in vector_amd64.s) rather than one
// locked OR per word: the CPU has Intel TSX RTM and does not abort every
// transaction (RTM_ALWAYS_ABORT, which microcode sets where TSX is
// withdrawn), and OHBLOOM_RTM is not "off".
var useRTM = hasVector && detectRTM() && os.Getenv("OHBLOOM_RTM") != "off"

func detectRTM() bool {
	_, b7, _, d7 := cpuid(7, 0)
	return b7&(1<<11) != 0 && d7&(1<<11) == 0
}

// txOr is TXOR alone: it ORs m into b in one transaction and reports
// true, or writes nothing and reports false (no RTM, useRTM false, or an
// abort). For tests.
//
//go:noescape
func txOr(b *block, m *block) (committed bool)

// probeChoice is OHBLOOM_PROBE from the environment: "scalar" keeps the
// generated probes even where the vector probe would run. For comparing
// the two on one machine, and for turning the vector code off without a
// rebuild.
var probeChoice = os.Getenv("OHBLOOM_PROBE")

func detectVector() bool {
	maxLeaf, vb, vc, vd := cpuid(0, 0)
	amd := vb == 0x68747541 && vd == 0x69746e65 && vc == 0x444d4163   // "AuthenticAMD"
	intel := vb == 0x756e6547 && vd == 0x49656e69 && vc == 0x6c65746e // "GenuineIntel"
	if maxLeaf < 7 || !(amd || intel) {
		return false
	}
	_, _, c1, _ := cpuid(1, 0)
	if c1&(1<<27) == 0 { // OSXSAVE: XGETBV is there to ask
		return false
	}
	// The OS must save the AVX-512 state: XMM, YMM, opmask, ZMM0-15 upper
	// halves, ZMM16-31.
	if xcr0, _ := xgetbv(); xcr0&0xe6 != 0xe6 {
		return false
	}
	_, b7, c7, _ := cpuid(7, 0)
	// F; DQ for KMOVB; BW for the 64-bit mask instructions (KMOVQ,
	// KTESTQ, KANDQ) that hold VPSHUFBITQMB's results.
	const f, dq, bw = 1 << 16, 1 << 17, 1 << 30
	if b7&(f|dq|bw) != f|dq|bw {
		return false
	}
	if c7&(1<<12) == 0 { // AVX512_BITALG, for VPSHUFBITQMB
		return false
	}
	if b7&(1<<21) == 0 { // AVX512_IFMA, for BITS's VPMADD52LUQ and VPMADD52HUQ
		return false
	}
	if intel {
		// Ice Lake and later, the first with no 512-bit frequency
		// penalty, are the first with VBMI2 (CPUID.7.0:ECX bit 6).
		return c7&(1<<6) != 0
	}
	return true // AMD's first AVX-512 is Zen 4, which keeps its clock
}

// vecProbes holds the vector constants of each k's standard partitions,
// made on first use and shared by every filter of that k: they are read
// only, and a server holding many small filters would otherwise pay 1.4 KB
// of constants for each.
var vecProbes [maxK + 1]atomic.Pointer[vecProbe]

// newVecProbe returns the vector constants of the partitions, or nil where
// the vector probe does not run.
func newVecProbe(parts []partition) *vecProbe {
	if !hasVector || probeChoice == "scalar" {
		return nil
	}
	k := len(parts)
	if std := partitionsFor(k); !slices.Equal(parts, std[:k]) {
		return makeVecProbe(parts)
	}
	if p := vecProbes[k].Load(); p != nil {
		return p
	}
	vecProbes[k].CompareAndSwap(nil, makeVecProbe(parts))
	return vecProbes[k].Load()
}

// makeVecProbe returns the vector constants of the partitions.
func makeVecProbe(parts []partition) *vecProbe {
	p := &vecProbe{halves: 1}
	if len(parts) > 8 {
		p.halves = 2
	}
	for i := range p.magic {
		q := parts[0]
		if i < len(parts) {
			q = parts[i]
		}
		p.magic[i] = (1<<52 + uint64(q.size) - 1) / uint64(q.size)
		p.size[i] = uint64(q.size)
		p.offset[i] = uint64(q.offset)
	}
	var reach [blockWords][]uint64
	for i, q := range parts {
		for w := q.offset / 64; w <= (q.offset+q.size-1)/64; w++ {
			reach[w] = append(reach[w], uint64(i))
		}
	}
	for w, lanes := range reach {
		p.rounds = max(p.rounds, uint64(len(lanes)))
		for j := range p.candidates {
			p.candidates[j][w] = lanes[0]
			if j < len(lanes) {
				p.candidates[j][w] = lanes[j]
			}
		}
	}
	return p
}
