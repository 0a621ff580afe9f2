package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// fallocateKeepSize allocates f's blocks in [off, off+n), keeping its size.
func fallocateKeepSize(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Fallocate(int(fd), unix.FALLOC_FL_KEEP_SIZE, off, n)
			if ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	switch {
	case ferr == nil:
		return nil
	case errors.Is(ferr, unix.EOPNOTSUPP), errors.Is(ferr, unix.ENOSYS):
		return fmt.Errorf("%w: %s: %w", errNoReserve, f.Name(), ferr)
	}
	return &fs.PathError{Op: "fallocate", Path: f.Name(), Err: ferr}
}
