package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// replaceable reports an error unless path is missing or a regular file:
// the data directory's files are written by renaming a new file over
// them, which would put a regular file in place of a named pipe, a device
// node, a socket or a symbolic link (replaced, not followed). It looks at
// path itself, and runs before a file is written and again before the
// rename.
func replaceable(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode().IsRegular() {
		return nil
	}
	kind := fileType(st.Mode())
	if st.Mode()&fs.ModeSymlink != 0 {
		kind = "a symbolic link"
	}
	return fmt.Errorf("%s is %s, not a regular file, and is left as it is; move it out of the data directory", path, kind)
}
