package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// evict drops the data directory's files from the page cache.
func evict(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		f.Sync()
		_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, 4 /* POSIX_FADV_DONTNEED */, 0, 0)
		f.Close()
		if errno != 0 {
			return fmt.Errorf("fadvise %s: %w", e.Name(), errno)
		}
	}
	return nil
}
