package ohbloom

import "syscall"

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
