//go:build !amd64 || purego

package ohbloom

import (
	"math/bits"
	"sync/atomic"
)

// The batched calls' pipeline (batch.go) without a prefetch instruction:
// windows of 256 keys, taken 128 at a time, the blocks of the next 128
// keys loaded before these 128 are probed. The loads that stand in for
// prefetches retire only once their lines arrive, and everything after
// them waits to retire behind them: a few loads at a time, as PREFETCHT0
// is used, hold the probes back again and again, while a long run of them
// is in flight at once and waits once (docs/design.md, "Batches").
const (
	batchSize        = 256
	prefetchDistance = 128
	prefetchStep     = 128
)

// prefetch starts the cache misses of the blocks of hs. Without a prefetch
// instruction it loads the first word of each block: the loads are
// independent, so the misses overlap, though unlike a prefetch each one
// holds back the instructions after it until its data arrives.
func (l *core) prefetch(hs []uint64) {
	var sum uint64
	for _, h := range hs {
		sum += atomic.LoadUint64(&l.blockOf(h)[0])
	}
	keep(sum)
}

// prefetch is core.prefetch for a counting filter's blocks.
func (l *countingCore) prefetch(hs []uint64) {
	var sum uint64
	for _, h := range hs {
		i, _ := bits.Mul64(h, l.nblocks)
		sum += atomic.LoadUint64(&l.blocks[i][0])
	}
	keep(sum)
}

// prefetchEntries loads the first word of the private block of each entry
// of ps: plain loads, as only the goroutine that owns the blocks reads them.
func prefetchEntries(blocks []block, ps []uint64) {
	var sum uint64
	for _, p := range ps {
		sum += blocks[p>>32][0]
	}
	keep(sum)
}

// keep swallows the sum of the loads. It is not inlined, so the compiler
// must compute its argument and cannot drop the loads.
//
//go:noinline
func keep(uint64) {}

// handOver copies src into dst[:len(src)] and returns it: without
// non-temporal stores, an ordinary copy.
func handOver(dst, src []uint64) []uint64 { return append(dst[:0], src...) }
