package bench

import (
	"syscall"
	"unsafe"
)

// adviseHugePages asks for transparent huge pages for lines, as the library
// does for a filter of 4 MiB and more, so that the limit pays the same TLB
// misses as the filter it is compared with.
func adviseHugePages(lines []line) {
	if len(lines)*64 < 4<<20 {
		return
	}
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&lines[0])), len(lines)*64)
	skip := (4096 - int(uintptr(unsafe.Pointer(&mem[0]))%4096)) % 4096
	syscall.Madvise(mem[skip:], 14) // MADV_HUGEPAGE
}
