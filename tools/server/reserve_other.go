//go:build !linux

package server

import (
	"fmt"
	"os"
)

// fallocateKeepSize reserves nothing here: only Linux's fallocate
// allocates blocks past a file's end without writing them (a portable
// fallback that wrote zeros would change the file the reader reads).
func fallocateKeepSize(f *os.File, off, n int64) error {
	return fmt.Errorf("%w: %s: not on this system", errNoReserve, f.Name())
}
