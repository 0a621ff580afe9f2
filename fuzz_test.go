package ohbloom

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fuzzSeeds is the seed corpus of both decoders: the golden files, a fresh
// filter, and damaged versions of it.
func fuzzSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "v1", "*.bin"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	g := New(50, 0.1)
	g.AddString("seed")
	good, _ := g.MarshalBinary()
	f.Add(good)
	f.Add(good[:headerSize])
	f.Add(good[:len(good)-1])
	f.Add(append(bytes.Clone(good), good...))
	f.Add([]byte{})
	f.Add([]byte("OHBLOOM\x00"))
}

// decodeErrors lists every error a decoder may return for bad bytes.
var decodeErrors = []error{ErrNotFilter, ErrVersion, ErrUnknownKind, ErrUnknownHash,
	ErrUnknownPartition, ErrChecksum, ErrTruncated, ErrCorrupt}

// checkDecodeError fails unless err wraps a sentinel and the receiver's
// blocks were left alone (nil, as the fuzz targets start).
func checkDecodeError(t *testing.T, err error, blocks []block) {
	t.Helper()
	if !slices.ContainsFunc(decodeErrors, func(e error) bool { return errors.Is(err, e) }) {
		t.Fatalf("error wraps no sentinel: %v", err)
	}
	if blocks != nil {
		t.Fatal("filter changed on error")
	}
}

// FuzzUnmarshalBinary: never a panic; an error is one of the sentinels and
// leaves the filter as it was; a success re-encodes to the same bytes.
func FuzzUnmarshalBinary(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Filter
		if err := d.UnmarshalBinary(data); err != nil {
			checkDecodeError(t, err, d.blocks)
			return
		}
		again, _ := d.MarshalBinary()
		if !bytes.Equal(again, data) {
			t.Fatal("decoded filter re-encodes differently")
		}
	})
}

// countingReader counts the bytes a decoder consumed.
type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// FuzzReadFrom: never a panic; errors are sentinels; a success consumed
// exactly the filter's encoding (so its memory is backed by input), reports
// that count, and agrees with UnmarshalBinary on the same bytes.
func FuzzReadFrom(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var d AtomicFilter
		cr := &countingReader{r: bytes.NewReader(data)}
		n, err := d.ReadFrom(cr)
		if n != int64(cr.n) {
			t.Fatalf("ReadFrom reports %d bytes, consumed %d", n, cr.n)
		}
		// From a reader that tells its length (allocated at once, zero
		// pages skipped): the same outcome as from the plain stream.
		var sized AtomicFilter
		sn, serr := sized.ReadFrom(bytes.NewReader(data))
		if sn != n || (serr == nil) != (err == nil) || (err != nil && serr.Error() != err.Error()) ||
			(err == nil && !sized.ToPlain().Equal(d.ToPlain())) {
			t.Fatalf("from a *bytes.Reader: %d bytes, %v; from a plain stream: %d, %v", sn, serr, n, err)
		}
		// From a reader that lends the blocks in place: the same again.
		var lent AtomicFilter
		ln, lerr := lent.ReadFrom(&lender{r: bytes.NewReader(data)})
		if ln != n || (lerr == nil) != (err == nil) || (err != nil && lerr.Error() != err.Error()) ||
			(err == nil && !lent.ToPlain().Equal(d.ToPlain())) {
			t.Fatalf("lent in place: %d bytes, %v; from a plain stream: %d, %v", ln, lerr, n, err)
		}
		if err != nil {
			checkDecodeError(t, err, d.blocks)
			return
		}
		if uint64(n) != encodedSize(d.nblocks) {
			t.Fatalf("read %d bytes for %d blocks", n, d.nblocks)
		}
		var u Filter
		if err := u.UnmarshalBinary(data[:n]); err != nil || !u.Equal(d.ToPlain()) {
			t.Fatalf("UnmarshalBinary disagrees: %v", err)
		}
	})
}
