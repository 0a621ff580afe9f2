//go:build !purego

package ohbloom

import (
	"os"
	"slices"
	"sync/atomic"
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
// probe_amd64.h). The block's words are picked by the lanes' word
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

	// For the adds: candidates[j][w] is the j-th partition (lane) whose bits
	// reach into word w of the block, for j < rounds; a word reached by
	// fewer repeats its first. Partitions are contiguous, so a word meets
	// at most two of them when every size exceeds 62 (k ≤ 7), and up to
	// six with the small sizes of k = 16.
	rounds     uint64
	candidates [maxK][blockWords]uint64
}

// probeTest, probeAtomicTest, probeAdd, probeTestAndAdd and
// probeAtomicAdd are the single-block probes of a core (probe_amd64.s):
// the vector probe where l has one, else the generated probe, reached by
// a jump to the function of the same name with scalar for probe
// (core.go). A caller makes one call, and the choice between the two is
// made once, there. probeTestAndAdd and probeAtomicAdd report whether the
// key was present (then they write nothing).

//go:noescape
func probeTest(l *core, b *block, x uint32) bool

//go:noescape
func probeAtomicTest(l *core, b *block, x uint32) bool

//go:noescape
func probeAdd(l *core, b *block, x uint32)

//go:noescape
func probeTestAndAdd(l *core, b *block, x uint32) (present bool)

//go:noescape
func probeAtomicAdd(l *core, b *block, x uint32) (present bool)

// vecTestHashes and vecAddHashes are probeTest's and probeTestAndAdd's
// vector probes over a window of
// hashes, their blocks found as core.blockOf finds them
// (probe_amd64.s). results must be at least as long as hs.
//
//go:noescape
func vecTestHashes(blocks *block, nblocks uint64, hs []uint64, results []bool, p *vecProbe)

//go:noescape
func vecAddHashes(blocks *block, nblocks uint64, hs []uint64, p *vecProbe)

// vecAddPacked is vecAddHashes for the packed entries of a private build
// (parallel.go): block e>>32 of blocks, residue uint32(e).
//
//go:noescape
func vecAddPacked(blocks *block, ps []uint64, p *vecProbe)

// vecAddEntries adds the packed entries ps to blocks.
func vecAddEntries(blocks []block, ps []uint64, p *vecProbe) {
	if len(ps) > 0 {
		vecAddPacked(&blocks[0], ps, p)
	}
}

// vecTestWindow tests the keys of hs with the vector probe, answers in
// results[i]; vecAddWindow adds them.
func (l *core) vecTestWindow(hs []uint64, results []bool) {
	if len(hs) > 0 {
		_ = results[len(hs)-1]
		vecTestHashes(&l.blocks[0], l.nblocks, hs, results, l.vec)
	}
}

func (l *core) vecAddWindow(hs []uint64) {
	if len(hs) > 0 {
		vecAddHashes(&l.blocks[0], l.nblocks, hs, l.vec)
	}
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
