//go:build unix

package ohbloom

import (
	"os"
	"syscall"
)

// mapBlocks maps file read-only and returns the mapping and its blocks, or
// nils when the file cannot be probed in place (a big-endian CPU).
func mapBlocks(file *os.File, nblocks uint64) ([]byte, []block, error) {
	if !littleEndian {
		return nil, nil, nil
	}
	size := encodedSize(nblocks)
	m, err := syscall.Mmap(int(file.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	// The header is 128 bytes and a mapping starts on a page, so the
	// blocks are 64-byte aligned as the format intends.
	return m, blocksOf(m[headerSize : size-trailerSize]), nil
}

func unmap(m []byte) error { return syscall.Munmap(m) }

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
