package ohbloom

import (
	"errors"
	"io/fs"
	"strings"
)

// fileError is an error about the file at path, said once: "ohbloom: open
// PATH: checksum mismatch: …". Wrapping a sentinel with %w after "ohbloom:
// open PATH: " would say "ohbloom: " twice, and wrapping an os error would
// name the path twice. errors.Is and errors.As see err.
type fileError struct {
	op, path string // op may be empty
	err      error
}

func (e *fileError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "ohbloom: ")
	if pe := (*fs.PathError)(nil); errors.As(e.err, &pe) && pe.Path == e.path && pe.Error() == msg {
		msg = pe.Op + ": " + pe.Err.Error() // "read: is a directory"
	}
	if e.op == "" {
		return "ohbloom: " + e.path + ": " + msg
	}
	return "ohbloom: " + e.op + " " + e.path + ": " + msg
}

func (e *fileError) Unwrap() error { return e.err }
