package ohbloom

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/zeebo/xxh3"
)

// Save writes the filter to path, crash-safely: it writes a temporary file
// in the same directory, syncs it, renames it over path and syncs the
// directory. A crash at any moment leaves path holding either the old
// snapshot or the new one, never a torn file (a stale temporary file
// ".NAME.tmp-*" may be left beside it). On error path is untouched.
func (f *Filter) Save(path string) error { return f.save(path) }

// Save is Filter.Save. Keys added during the save may or may not be in the
// snapshot, which is consistent with its checksum either way.
func (f *AtomicFilter) Save(path string) error { return f.save(path) }

func (l *layout) save(path string) error { return SaveFile(path, writerToFunc(l.writeTo)) }

// writerToFunc lets an unexported encoder be passed as an io.WriterTo.
type writerToFunc func(io.Writer) (int64, error)

func (f writerToFunc) WriteTo(w io.Writer) (int64, error) { return f(w) }

// SaveFile writes what src encodes to path as Filter.Save does: into a
// temporary file in the same directory, synced, renamed over path, and the
// directory synced, so that a crash leaves either the old file or the new
// one. Every filter type's Save uses it; it is exported for files that hold
// a filter among other things (a server's records, say).
func SaveFile(path string, src io.WriterTo) (err error) {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("ohbloom: save %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("ohbloom: save %s: %w", path, err)
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	if _, err := src.WriteTo(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// Load reads a snapshot written by Save (or any encoded filter) into a new
// Filter. The file is read once, decoded and checked in full; see Open to
// serve a large snapshot without reading it.
func Load(path string) (*Filter, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ohbloom: load: %w", err)
	}
	defer file.Close()
	var f Filter
	n, err := f.ReadFrom(bufio.NewReaderSize(file, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("ohbloom: load %s: %w", path, err)
	}
	if st, err := file.Stat(); err == nil && st.Size() != n {
		return nil, fmt.Errorf("ohbloom: load %s: %w: %d bytes after the filter", path, ErrCorrupt, st.Size()-n)
	}
	return &f, nil
}

// Snapshot is a read-only filter served from a snapshot file mapped into
// memory: opening it costs a few system calls whatever its size, and pages
// are read from disk (or the page cache) as Tests touch them. It is safe for
// concurrent use by multiple goroutines, up to Close.
//
// Where files cannot be mapped in place (not unix, or a big-endian CPU),
// Open reads the file instead.
type Snapshot struct {
	layout
	mapping []byte // the mapped file, nil when it was read
	path    string
}

// Open opens a snapshot file written by Save. It checks everything but the
// data checksum: the header (magic, version, kind, hash, partitions, its own
// checksum) and that the file is exactly as long as the header announces.
// Checking the data would read the whole file, which is what Open avoids;
// call Verify for that (the ohbloom command's info does).
func Open(path string) (*Snapshot, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ohbloom: open: %w", err)
	}
	defer file.Close()
	var hdr [headerSize]byte
	n, err := io.ReadFull(file, hdr[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("ohbloom: open %s: %w", path, err)
	}
	h, err := decodeHeader(hdr[:n])
	if err == nil {
		err = h.wantKind(kindBlocked)
	}
	if err != nil {
		return nil, fmt.Errorf("ohbloom: open %s: %w", path, err)
	}
	st, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("ohbloom: open %s: %w", path, err)
	}
	if want := encodedSize(h.nblocks); uint64(st.Size()) != want {
		kind := ErrCorrupt
		if uint64(st.Size()) < want {
			kind = ErrTruncated
		}
		return nil, fmt.Errorf("ohbloom: open %s: %w: %d bytes, the header announces %d", path, kind, st.Size(), want)
	}
	s := &Snapshot{layout: h.layout(), path: path}
	if s.mapping, s.blocks, err = mapBlocks(file, h.nblocks); err != nil {
		return nil, fmt.Errorf("ohbloom: open %s: %w", path, err)
	}
	if s.blocks == nil {
		// No mapping here: read the file the ordinary way.
		f, err := Load(path)
		if err != nil {
			return nil, err
		}
		s.layout = f.layout
	}
	return s, nil
}

// Verify reads the whole snapshot and checks its data checksum.
func (s *Snapshot) Verify() error {
	if s.mapping == nil {
		return nil // read by Load, which checked it
	}
	size := len(s.mapping)
	sum := xxh3.Hash(s.mapping[:size-trailerSize])
	if rec := binary.LittleEndian.Uint64(s.mapping[size-trailerSize:]); sum != rec {
		return fmt.Errorf("ohbloom: %s: %w: data hashes to %#x, recorded %#x", s.path, ErrChecksum, sum, rec)
	}
	return nil
}

// Test reports whether key may be in the snapshot.
func (s *Snapshot) Test(key []byte) bool {
	h := xxh3.HashSeed(key, s.seed)
	return s.testBits(s.blockOf(h), residue(h))
}

// TestString is Test for a string key.
func (s *Snapshot) TestString(key string) bool {
	h := xxh3.HashStringSeed(key, s.seed)
	return s.testBits(s.blockOf(h), residue(h))
}

// TestHash tests the key whose Hash is h.
func (s *Snapshot) TestHash(h uint64) bool { return s.testBits(s.blockOf(h), residue(h)) }

// TestBatch tests keys as Filter.TestBatch does.
func (s *Snapshot) TestBatch(keys [][]byte, results []bool) {
	runKeys(&s.layout, keys, opTest, results)
}

// TestHashes tests hashes as Filter.TestHashes does.
func (s *Snapshot) TestHashes(hs []uint64, results []bool) { s.runHashes(hs, opTest, results) }

// ToAtomic copies the snapshot into a new AtomicFilter, to take further
// Adds: one pass over the file, and memory for the whole filter.
func (s *Snapshot) ToAtomic() *AtomicFilter { return &AtomicFilter{s.clone()} }

// ToFilter copies the snapshot into a new Filter.
func (s *Snapshot) ToFilter() *Filter { return &Filter{s.clone()} }

// Close unmaps the file. The Snapshot must not be used afterwards.
func (s *Snapshot) Close() error {
	m := s.mapping
	s.mapping, s.blocks, s.nblocks = nil, nil, 0
	if m == nil {
		return nil
	}
	return unmap(m)
}
