//go:build linux && (amd64 || arm64)

package classic

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ohbloom/ohbloom"
)

// TestGuavaWriteToRefusesWrap: a Guava filter of 2^31 words (16 GiB) must
// not be written, since its int32 word count would wrap. Its words live
// in an untouched 16 GiB anonymous mapping, reserved but never backed, so
// the test costs no memory: WriteTo must refuse before reading any.
func TestGuavaWriteToRefusesWrap(t *testing.T) {
	const words = 1 << 31
	mem, err := syscall.Mmap(-1, 0, words*8, syscall.PROT_READ, syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(mem)
	f := &Filter{strategy: Guava, m: words * 64, k: 3, length: words * 64,
		words: unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), words)}
	var out bytes.Buffer
	if n, err := f.WriteTo(&out); !errors.Is(err, ohbloom.ErrTooLarge) || n != 0 || out.Len() != 0 {
		t.Fatalf("WriteTo of 2^31 words: %v, %d bytes written", err, n)
	}
	if _, err := f.MarshalBinary(); !errors.Is(err, ohbloom.ErrTooLarge) {
		t.Fatalf("MarshalBinary: %v", err)
	}
}
