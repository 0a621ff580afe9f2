package ohbloom

// This file holds the package's only use of unsafe: carving 64-byte-aligned
// blocks out of a Go allocation. The allocator aligns large objects to pages
// and most size classes to 64 bytes, but it promises only 8, so a block could
// straddle two cache lines and a probe would then touch two of them. Asking
// for one spare block and starting at the first 64-byte boundary makes the
// alignment a guarantee instead of an accident.

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
	adviseHuge(b)
	return b
}

// blockAddress reports where a block starts in memory, for the alignment test.
func blockAddress(b *block) uintptr { return uintptr(unsafe.Pointer(b)) }
