package ohbloom

// This file holds the package's only uses of unsafe. Carving 64-byte-aligned
// blocks out of a Go allocation: the allocator aligns large objects to pages
// and most size classes to 64 bytes, but it promises only 8, so a block could
// straddle two cache lines and a probe would then touch two of them. Asking
// for one spare block and starting at the first 64-byte boundary makes the
// alignment a guarantee instead of an accident. And viewing blocks as bytes
// and bytes as blocks: to hand them to madvise, and to probe a mapped
// snapshot in place. And a string as bytes, for TestSampledString.

import "unsafe"

// alignedBlocks returns n zeroed blocks whose first byte sits on a 64-byte
// boundary. The slice keeps the whole allocation alive through its interior
// pointer, as any subslice does.
func alignedBlocks(n uint64) []block {
	if n == 0 {
		return nil
	}
	words := make([]uint64, (n+1)*blockWords)
	skip := (blockBytes - uintptr(unsafe.Pointer(&words[0]))%blockBytes) % blockBytes / 8
	b := unsafe.Slice((*block)(unsafe.Pointer(&words[skip])), n)
	adviseHugePages(b)
	return b
}

// blocksOf views mem, whose length is a multiple of 64 and whose start is
// 64-byte aligned (a mapped file past its header), as blocks.
func blocksOf(mem []byte) []block {
	return unsafe.Slice((*block)(unsafe.Pointer(&mem[0])), len(mem)/blockBytes)
}

// blockMemory returns the bytes of b, aliasing it.
func blockMemory(b []block) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), len(b)*blockBytes)
}

// addressOf returns where b starts in memory.
func addressOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// blockAddress reports where a block starts in memory, for the alignment test.
func blockAddress(b *block) uintptr { return uintptr(unsafe.Pointer(b)) }

// stringBytes views the bytes of s, for a callee that only reads them.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
