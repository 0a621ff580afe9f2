package ohbloom

// Advice to Linux about a filter's memory, with madvise: huge pages for
// filters larger than the TLB covers, and the pages of a private build
// faulted in at once. Both are only advice, and failures change nothing
// but speed.

import "syscall"

// hugePageMin is the size from which a filter asks for transparent huge
// pages. A filter larger than the caches misses the TLB on nearly every probe
// with 4 KiB pages (a 36 MB filter spans 9,000 pages, the second-level TLB
// holds ~2,000); 2 MiB pages cover it with 18 (docs/design.md, "Huge
// pages"). Below 4 MiB the filter fits the TLB anyway.
const hugePageMin = 4 << 20

// adviseHugePages asks Linux to back b with transparent huge pages. It is
// only advice: where THP is off, or for memory that is already faulted in,
// nothing changes, so errors are ignored. Fresh Go heap memory is untouched,
// so the advice takes effect as the filter is first written.
func adviseHugePages(b []block) {
	if len(b)*blockBytes < hugePageMin {
		return
	}
	mem := blockMemory(b)
	// madvise wants a page-aligned start; the allocation is page-aligned in
	// practice, so this skips at most the first block.
	skip := (4096 - int(addressOf(mem)%4096)) % 4096
	syscall.Madvise(mem[skip:], 14) // MADV_HUGEPAGE; not in package syscall's constants
}

// populate faults b's pages in with one madvise(MADV_POPULATE_WRITE)
// (Linux 5.14 and later): the kernel walks them in order, huge pages where
// b is advised for them, instead of taking one fault per page in random
// order as a build first writes each. Pages already there are left as
// they are. Where the call fails the writes fault the pages in as before.
func populate(b []block) {
	if len(b) == 0 {
		return
	}
	mem := blockMemory(b)
	skip := (4096 - int(addressOf(mem)%4096)) % 4096
	if skip < len(mem) {
		syscall.Madvise(mem[skip:], 23) // MADV_POPULATE_WRITE; not in package syscall's constants
	}
}
