package ohbloom

// This file holds the package's uses of unsafe, each for a reason:
//
//   - Carving 64-byte-aligned blocks out of a Go allocation: the allocator
//     aligns large objects to pages and most size classes to 64 bytes, but
//     it promises only 8, so a block could straddle two cache lines and a
//     probe would then touch two of them. Asking for one spare block and
//     starting at the first 64-byte boundary makes the alignment a
//     guarantee instead of an accident.
//   - Viewing blocks as bytes and bytes as blocks: to hand them to madvise,
//     and to probe a mapped snapshot in place.
//   - Handing keys to the assembly as a pointer and a length, with no copy
//     of a string's bytes and no nil check of the filter (raw), and a
//     window of []byte or string keys as their headers (keyHeaders).
//   - A string as bytes, for the string forms of Test and HashTest on
//     AtomicFilter and Snapshot.

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

// raw returns f's core, its first and only field, with no nil check of
// f: &f.core costs the single-key calls a load and a compare for it,
// and the assembly faults on a nil f just the same, which the runtime
// turns into the same panic.
func (f *Filter) raw() *core { return (*core)(unsafe.Pointer(f)) }

// raw is Filter.raw for an AtomicFilter.
func (f *AtomicFilter) raw() *core { return (*core)(unsafe.Pointer(f)) }

// bytesData, stringData and wordsData return where a slice's or a
// string's data start, for the assembly: a pointer and a length go in
// registers, with no copy and no bounds check.
func bytesData(b []byte) *byte     { return unsafe.SliceData(b) }
func stringData(s string) *byte    { return unsafe.StringData(s) }
func wordsData(w []uint64) *uint64 { return unsafe.SliceData(w) }

// bytesAt views the n bytes at p, a key the assembly handed back.
func bytesAt(p *byte, n int) []byte { return unsafe.Slice(p, n) }

// keyHeader is the start of a []byte's or a string's header: where its
// bytes are and how many.
type keyHeader struct {
	p *byte
	n int
}

// keyHeaders views keys from i on as their headers, for the assembly that
// hashes a window of them: key i's, and the distance from one to the next.
func keyHeaders[K []byte | string](keys []K, i int) (first *keyHeader, stride uintptr) {
	return (*keyHeader)(unsafe.Pointer(&keys[i])), unsafe.Sizeof(keys[i])
}
