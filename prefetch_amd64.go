//go:build !purego

package ohbloom

// The batched calls' pipeline (batch.go) with PREFETCHT0, which retires at
// once: steps of 8 keys, 48 keys ahead, a steady stream of misses. A burst
// of a whole window's prefetches asks for more misses than the core can
// track, and the prefetches beyond that wait; longer distances gained
// nothing (docs/design.md, "Batches").
const (
	batchSize        = 64
	prefetchDistance = 48
	prefetchStep     = 8
)

// prefetchBlocks asks the CPU to start loading the blocks of hs into the
// cache, without waiting for them (prefetch_amd64.s).
//
//go:noescape
func prefetchBlocks(blocks *block, nblocks uint64, hs []uint64)

// prefetch starts the cache misses of the blocks of hs.
func (l *core) prefetch(hs []uint64) {
	if len(hs) > 0 {
		prefetchBlocks(&l.blocks[0], l.nblocks, hs)
	}
}

// prefetch starts the cache misses of the blocks of hs.
func (l *countingCore) prefetch(hs []uint64) {
	if len(hs) > 0 {
		prefetchBlocks(&l.blocks[0], l.nblocks, hs)
	}
}

// prefetchPacked starts loading block p>>32 of blocks for each entry p of
// ps (prefetch_amd64.s).
//
//go:noescape
func prefetchPacked(blocks *block, ps []uint64)

// prefetchEntries starts the cache misses of the private blocks of ps.
func prefetchEntries(blocks []block, ps []uint64) {
	if len(ps) > 0 {
		prefetchPacked(&blocks[0], ps)
	}
}

// copyStream copies src to dst, which is at least as long, with
// non-temporal stores and fences them (prefetch_amd64.s).
//
//go:noescape
func copyStream(dst, src []uint64)

// handOver copies src into dst[:len(src)], for a goroutine on another core
// to read next, and returns dst[:len(src)]. The stores bypass the cache:
// dst was last read on the other core, and ordinary stores would first
// have to take each of its lines back from there, one at a time, while
// these write the lines out whole (TestHandOver).
func handOver(dst, src []uint64) []uint64 {
	dst = dst[:len(src)]
	copyStream(dst, src)
	return dst
}
