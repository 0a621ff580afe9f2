//go:build !purego

package ohbloom

import (
	"syscall"
	"testing"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// TestKeyHashStaysInsideTheKey puts every key of 0 to 160 bytes flush
// against an inaccessible page, after it and before it, and hashes and
// probes it: a read outside the key faults and kills the test.
func TestKeyHashStaysInsideTheKey(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 3*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(mem)
	for _, guard := range [][]byte{mem[:page], mem[2*page:]} {
		if err := syscall.Mprotect(guard, syscall.PROT_NONE); err != nil {
			t.Skip("mprotect:", err)
		}
	}
	usable := mem[page : 2*page]
	for i := range usable {
		usable[i] = byte(i * 7)
	}
	f, a := New(1000, 0.01), NewAtomic(1000, 0.01)
	for n := 0; n <= 160; n++ {
		for _, key := range [][]byte{usable[page-n:], usable[:n:n]} {
			p := unsafe.SliceData(key)
			h, ok := keyHash(&f.core, p, n)
			if ok && h != xxh3.HashSeed(key, DefaultSeed) {
				t.Fatalf("keyHash of %d bytes differs from xxh3", n)
			}
			f.Add(key)
			a.Add(key)
			if !f.Test(key) || !a.Test(key) {
				t.Fatalf("a key of %d bytes was added and not found", n)
			}
		}
	}
}
