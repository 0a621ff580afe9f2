package server

import (
	"encoding/binary"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// littleEndian is whether the blocks in a file are in memory's byte
// order, so that a mapping can be probed in place.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// mapFile maps f, of size bytes, private and copy-on-write, or returns
// nil: the start then reads the file into memory of its own. No page is
// mapped yet: each is as a command first touches it, from the page cache.
func mapFile(f *os.File, size int64) *mapping {
	if !littleEndian || size < recordFixedV1 || uint64(size) > uint64(^uintptr(0)>>1) {
		return nil
	}
	addr, err := unix.MmapPtr(int(f.Fd()), 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return &mapping{mem: unsafe.Slice((*byte)(addr), int(size))}
}

// drop unmaps a mapping that no filter holds blocks in.
func (m *mapping) drop() {
	unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(m.mem)), uintptr(len(m.mem)))
}

// retire maps fresh anonymous memory over the mapping (see mapped.go):
// the file and its copied pages go, the addresses stay valid.
func (m *mapping) retire() {
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(unsafe.SliceData(m.mem)), uintptr(len(m.mem)), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
	if err != nil {
		return // the file stays mapped: memory held, but no fault
	}
	m.uncount()
	m.gone.Store(true)
	if f := testRetire.Load(); f != nil {
		(*f)(m)
	}
}
