package ohbloom

import (
	"os"
	"syscall"
	"unsafe"
)

func adviseHuge(b []block) {
	if len(b)*blockBytes < 4<<20 || os.Getenv("NOHUGE") != "" {
		return
	}
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), len(b)*blockBytes)
	// madvise needs a page-aligned start.
	start := (uintptr(unsafe.Pointer(&mem[0])) + 4095) &^ 4095
	off := int(start - uintptr(unsafe.Pointer(&mem[0])))
	syscall.Madvise(mem[off:], 14) // MADV_HUGEPAGE
}
