//go:build !amd64 || purego

package ohbloom

import "sync/atomic"

// prefetch starts the cache misses of the blocks of hs. Without a prefetch
// instruction it loads the first word of each block: the loads are
// independent, so the misses overlap, though unlike a prefetch each one
// holds back the instructions after it until its data arrives.
func (l *layout) prefetch(hs []uint64) {
	var sum uint64
	for _, h := range hs {
		sum += atomic.LoadUint64(&l.blockOf(h)[0])
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
