package bench

import (
	"os"
	"slices"
	"strconv"
	"strings"
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

// hugePageShare returns the share of the memory advised for huge pages
// (the VMAs whose VmFlags hold "hg": filters and limit arrays) that huge
// pages back, from /proc/self/smaps, or -1 if none is advised. Where it is
// well below 1, the kernel had no free 2 MiB pages (fragmentation) and
// the arrays pay different TLB misses: a run to discard.
func hugePageShare() float64 {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return -1
	}
	var size, huge, vmaSize, vmaHuge float64
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "Size:":
			vmaSize, _ = strconv.ParseFloat(f[1], 64)
		case len(f) >= 2 && f[0] == "AnonHugePages:":
			vmaHuge, _ = strconv.ParseFloat(f[1], 64)
		case len(f) >= 1 && f[0] == "VmFlags:" && slices.Contains(f[1:], "hg"):
			size += vmaSize
			huge += vmaHuge
		}
	}
	if size == 0 {
		return -1
	}
	return huge / size
}
