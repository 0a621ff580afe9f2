package redisbloom

import (
	"syscall"
	"unsafe"
)

// cfHugePageMin is the size from which a sub-filter asks for transparent
// huge pages: a lookup lands on a random page, and past a few MiB of 4 KiB
// pages nearly every one misses the TLB (its second level holds ~2,000
// pages); 2 MiB pages cover 128 MiB with 64.
const cfHugePageMin = 4 << 20

// cfAdviseHugePages asks Linux to back a fresh sub-filter with transparent
// huge pages (where THP is "madvise", the default of many distributions).
// It is advice only: errors are ignored. unsafe here only turns the words
// into the bytes madvise takes.
func cfAdviseHugePages(words []uint64) {
	if len(words)*8 < cfHugePageMin {
		return
	}
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	// madvise wants a page-aligned start: skip to the first page boundary.
	skip := (4096 - int(uintptr(unsafe.Pointer(&mem[0]))%4096)) % 4096
	syscall.Madvise(mem[skip:], 14) // MADV_HUGEPAGE, not among package syscall's constants
}
