//go:build !purego

package ohbloom

// The batched calls' pipeline (batch.go) with PREFETCHT0, which retires at
// once: steps of 8 keys, 48 keys ahead. An earlier design prefetched a
// whole window of 64 at once, then probed it. On a 2-vCPU AMD EPYC VM,
// TestBatch on a 125 MB filter (10^8 keys) took 38-54 ns a key that way
// and 21-26 with the rolling prefetch at distances 16 to 48 (48: 21-23).
// On a 1.25 GB filter, distances of 64 to 128 (in windows of 128) measured
// no better than 48. The burst asks for more misses than the core can
// track, and the prefetches beyond that wait. At 3·10^7 keys it went from
// 49-54 to 21-27 ns, and at 10^6 from 23-25 to 19-21.
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
