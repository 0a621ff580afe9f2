//go:build !purego

package ohbloom

import "unsafe"

// prefetchBlocks asks the CPU to start loading the blocks of hs into the
// cache, without waiting for them (prefetch_amd64.s).
//
//go:noescape
func prefetchBlocks(blocks unsafe.Pointer, nblocks uint64, hs []uint64)

// prefetch starts the cache misses of the blocks of hs.
func (l *layout) prefetch(hs []uint64) {
	if len(hs) > 0 {
		prefetchBlocks(unsafe.Pointer(&l.blocks[0]), l.nblocks, hs)
	}
}

// prefetchPacked starts loading block p>>32 of blocks for each entry p of
// ps (prefetch_amd64.s).
//
//go:noescape
func prefetchPacked(blocks unsafe.Pointer, ps []uint64)

// prefetchEntries starts the cache misses of the private blocks of ps.
func prefetchEntries(blocks []block, ps []uint64) {
	if len(ps) > 0 {
		prefetchPacked(unsafe.Pointer(&blocks[0]), ps)
	}
}
