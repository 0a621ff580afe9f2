package ohbloom

import (
	"fmt"
	"io"
	"os"
)

// Every filter of the package persists alike: Save writes it to a file
// crash-safely (SaveFile), a Load function of its kind reads a file whole
// into memory (Load, LoadAtomic, LoadCounting, LoadAtomicCounting,
// LoadScalable, LoadAtomicScalable), and a Filter's file can also be mapped
// and probed in place (Open). A file read as the wrong kind is an error
// that says what it holds and which call reads it; Inspect says what a
// file holds without loading it.

// Save writes the filter to path crash-safely, as Filter.Save does.
func (f *CountingFilter) Save(path string) error { return SaveFile(path, f) }

// Save is CountingFilter.Save. Keys added or removed during the save may or
// may not be in the file, which is consistent with its checksum either way.
func (f *AtomicCountingFilter) Save(path string) error { return SaveFile(path, f) }

// Save writes the filter to path crash-safely, as Filter.Save does.
func (s *ScalableFilter) Save(path string) error { return SaveFile(path, s) }

// Save is ScalableFilter.Save. Keys added during the save may or may not be
// in the file, as AtomicScalableFilter.WriteTo says.
func (s *AtomicScalableFilter) Save(path string) error { return SaveFile(path, s) }

// LoadAtomic is Load for an AtomicFilter: the file read once into a new
// filter, without the copy that Load followed by ToAtomic makes.
func LoadAtomic(path string) (*AtomicFilter, error) {
	return loadAs(path, kindBlocked, new(AtomicFilter))
}

// LoadCounting reads a file written by CountingFilter.Save or
// AtomicCountingFilter.Save (or any encoded counting filter) into a new
// CountingFilter, checked in full as Load checks a Filter's.
func LoadCounting(path string) (*CountingFilter, error) {
	return loadAs(path, kindCounting, new(CountingFilter))
}

// LoadAtomicCounting is LoadCounting for an AtomicCountingFilter.
func LoadAtomicCounting(path string) (*AtomicCountingFilter, error) {
	return loadAs(path, kindCounting, new(AtomicCountingFilter))
}

// LoadScalable reads a file written by ScalableFilter.Save or
// AtomicScalableFilter.Save (or any encoded scalable filter, of format
// version 1 or 2) into a new ScalableFilter, which grows as the one saved
// would have. It has no memory bound: set one with SetMaxBytes.
func LoadScalable(path string) (*ScalableFilter, error) {
	return loadAs(path, kindScalable, new(ScalableFilter))
}

// LoadAtomicScalable is LoadScalable for an AtomicScalableFilter.
func LoadAtomicScalable(path string) (*AtomicScalableFilter, error) {
	return loadAs(path, kindScalable, new(AtomicScalableFilter))
}

// loadAs reads the file at path, which must hold one filter of the given
// kind and nothing else, into f.
func loadAs[F io.ReaderFrom](path string, kind uint8, f F) (F, error) {
	var none F
	file, err := os.Open(path)
	if err != nil {
		return none, fmt.Errorf("ohbloom: %w", err) // "open PATH: why"
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return none, &fileError{"load", path, err}
	}
	// A file of another kind is told apart before the decoder refuses it,
	// so that the error can say what the file holds.
	hdr := make([]byte, headerSize)
	if n, _ := file.ReadAt(hdr, 0); n == headerSize {
		if h, err := decodeHeader(hdr); err == nil && h.kind != kind {
			return none, &fileError{"load", path, &kindMismatch{got: h.kind, want: kind}}
		}
	}
	n, err := f.ReadFrom(&sizedReader{file, st.Size()})
	if err != nil {
		return none, &fileError{"load", path, err}
	}
	if st.Size() != n {
		return none, &fileError{"load", path, fmt.Errorf("%w: %d bytes after the filter", ErrCorrupt, st.Size()-n)}
	}
	return f, nil
}

// kindMismatch is the error of a file function given a file of another
// kind of filter: it says what the file holds and what reads it. It wraps
// ErrUnknownKind, as a decoder's error for the same bytes does.
type kindMismatch struct{ got, want uint8 }

func (e *kindMismatch) Error() string {
	return fmt.Sprintf("the file holds %s, not %s: %s", kindName(e.got), kindName(e.want), readers(e.got))
}

func (e *kindMismatch) Unwrap() error { return ErrUnknownKind }

// readers says which calls read a file of the given kind.
func readers(kind uint8) string {
	switch kind {
	case kindBlocked:
		return "read it with Load, LoadAtomic or Open"
	case kindCounting:
		return "read it with LoadCounting or LoadAtomicCounting"
	case kindScalable:
		return "read it with LoadScalable or LoadAtomicScalable"
	}
	return "this build reads no such file"
}
