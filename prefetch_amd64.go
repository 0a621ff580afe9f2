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
