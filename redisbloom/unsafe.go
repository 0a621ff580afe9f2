package redisbloom

// This file holds the package's only uses of unsafe: AddString and
// TestString hash a string's bytes in place, without the copy that
// converting it to a []byte would make; and a cuckoo sub-filter's words
// are viewed as the bytes madvise takes, with the address it needs.

import "unsafe"

// stringBytes views the bytes of s, for a callee that only reads them.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// wordBytes views words as bytes, for a system call that takes memory.
func wordBytes(words []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)
}

// addressOf is where b starts in memory.
func addressOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
