//go:build linux || darwin

package ohbloom

import (
	"fmt"
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ohbloom/ohbloom/internal/race"
)

// TestAtomicReaddWritesNothing: re-adding keys that are present must not
// write to memory at all, not even the same value (an atomic OR that changes
// nothing still takes the cache line exclusive and bounces it between
// cores). The filter's blocks are moved to a read-only mapping, where any
// write faults; re-adding every key must get through, and a new key must
// fault, which shows the test can fail.
func TestAtomicReaddWritesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector cannot recover from a deliberate fault")
	}
	a := NewAtomic(1000, 0.01)
	for i := range 1000 {
		a.AddString(fmt.Sprint("hot/", i))
	}
	size := len(a.blocks) * blockBytes
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(mem)
	ro := unsafe.Slice((*block)(unsafe.Pointer(&mem[0])), len(a.blocks))
	copy(ro, a.blocks)
	if err := syscall.Mprotect(mem, syscall.PROT_READ); err != nil {
		t.Skip("mprotect:", err)
	}
	a.blocks = ro

	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	faulted := func(f func()) (fault bool) {
		defer func() { fault = recover() != nil }()
		f()
		return false
	}
	if faulted(func() {
		for i := range 1000 {
			a.AddString(fmt.Sprint("hot/", i))
			a.TestAndAddString(fmt.Sprint("hot/", i))
		}
	}) {
		t.Fatal("re-adding present keys wrote to the filter")
	}
	wrote := faulted(func() {
		for i := range 1000 {
			a.AddString(fmt.Sprint("new/", i))
		}
	})
	if !wrote {
		t.Fatal("adding new keys did not write: the test cannot detect writes")
	}
}
