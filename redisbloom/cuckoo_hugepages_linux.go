package redisbloom

import "syscall"

// cfHugePageMin is the size from which a sub-filter asks for transparent
// huge pages: a lookup lands on a random page, and past a few MiB of 4 KiB
// pages nearly every one misses the TLB (its second level holds ~2,000
// pages); 2 MiB pages cover 128 MiB with 64.
const cfHugePageMin = 4 << 20

// cfAdviseHugePages asks Linux to back a fresh sub-filter with transparent
// huge pages (where THP is "madvise", the default of many distributions).
// It is advice only: errors are ignored.
func cfAdviseHugePages(words []uint64) {
	if len(words)*8 < cfHugePageMin {
		return
	}
	mem := wordBytes(words)
	// madvise wants a page-aligned start: skip to the first page boundary.
	skip := (4096 - int(addressOf(mem)%4096)) % 4096
	syscall.Madvise(mem[skip:], 14) // MADV_HUGEPAGE, not among package syscall's constants
}
