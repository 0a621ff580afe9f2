//go:build !purego

package ohbloom

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// forEachAtomicWrite runs fn with each way AtomicFilter's vector code sets
// a new key's bits: locked ORs, and one hardware transaction where the CPU
// has RTM (TXOR).
func forEachAtomicWrite(t *testing.T, fn func(t *testing.T)) {
	saved := useRTM
	defer func() { useRTM = saved }()
	for _, rtm := range []bool{false, true} {
		if rtm && !(hasVector && detectRTM()) {
			t.Log("no RTM on this CPU: the transactional add is not tested")
			continue
		}
		useRTM = rtm
		t.Run(fmt.Sprintf("rtm=%v", rtm), fn)
	}
}

// TestTxOr holds TXOR to its contract where the CPU has RTM: a commit
// ORs the mask into the block, an abort writes nothing, and commits
// happen (a transaction that always aborted would leave every other test
// of the transactional add passing on the locked ORs alone).
func TestTxOr(t *testing.T) {
	if !hasVector || !detectRTM() {
		t.Skip("no RTM on this CPU")
	}
	saved := useRTM
	defer func() { useRTM = saved }()
	useRTM = true
	r := rand.New(rand.NewPCG(11, 12))
	commits := 0
	for range 1000 {
		b, m := randomBlock(r), randomBlock(r)
		want := b
		for w := range want {
			want[w] |= m[w]
		}
		before := b
		if txOr(&b, &m) {
			commits++
			if b != want {
				t.Fatalf("txOr committed %x | %x as %x", before, m, b)
			}
		} else if b != before {
			t.Fatalf("txOr aborted and still changed %x to %x", before, b)
		}
	}
	t.Logf("%d of 1000 transactions committed", commits)
	if commits < 500 {
		t.Fatalf("%d of 1000 transactions committed on one goroutine with nothing racing", commits)
	}
	useRTM = false
	b, m := randomBlock(r), randomBlock(r)
	before := b
	if txOr(&b, &m) || b != before {
		t.Fatal("txOr wrote with useRTM false")
	}
}

// TestDirectRemainderExact holds the vector probe's constants to x % size:
// it computes in Go what BITS's two 52-bit multiply-adds compute, for
// every partition of every k, at the residues where a quotient changes
// and at random. It needs no AVX-512: TestVectorMatchesProbes holds the
// instructions to the generated probes where they run.
func TestDirectRemainderExact(t *testing.T) {
	const low52 = 1<<52 - 1
	r := rand.New(rand.NewPCG(9, 10))
	for k := minK; k <= maxK; k++ {
		all := partitionsFor(k)
		parts := all[:k]
		p := makeVecProbe(parts)
		var sizes []uint32
		for _, q := range parts {
			sizes = append(sizes, q.size)
		}
		xs := residueEdges(sizes, r)
		for range 20000 {
			xs = append(xs, r.Uint32())
		}
		for lane := range p.magic {
			q := parts[0] // lanes past k repeat partition 0
			if lane < k {
				q = parts[lane]
			}
			for _, x := range xs {
				frac := p.magic[lane] * uint64(x) & low52 // VPMADD52LUQ
				hi, lo := bits.Mul64(frac, p.size[lane])  // VPMADD52HUQ: bits 52-103
				got := p.offset[lane] + (hi<<12 | lo>>52)
				if want := uint64(q.offset + x%q.size); got != want {
					t.Fatalf("k=%d lane %d (size %d), x %d: bit %d, want %d", k, lane, q.size, x, got, want)
				}
			}
		}
	}
}
