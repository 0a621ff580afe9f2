//go:build !unix

package server

import "errors"

// mkfifo fails: there are no FIFOs in the file system here.
func mkfifo(path string) error { return errors.ErrUnsupported }
