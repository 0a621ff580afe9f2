package ohbloom

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"

	"github.com/zeebo/xxh3"
)

// Save writes the filter to path, crash-safely: it writes a temporary file
// in the same directory, syncs it, renames it over path and syncs the
// directory. A crash at any moment leaves path holding either the old
// snapshot or the new one, never a torn file (a stale temporary file
// ".NAME.tmp-*" may be left beside it). On error path is untouched. Only
// a regular file or a new name is written: a directory, symbolic link,
// device, named pipe or socket at path is an error (see SaveFile).
func (f *Filter) Save(path string) error { return f.save(path) }

// Save is Filter.Save. Keys added during the save may or may not be in the
// snapshot, which is consistent with its checksum either way.
func (f *AtomicFilter) Save(path string) error { return f.save(path) }

func (l *core) save(path string) error { return SaveFile(path, writerToFunc(l.writeTo)) }

// writerToFunc lets an unexported encoder be passed as an io.WriterTo.
type writerToFunc func(io.Writer) (int64, error)

func (f writerToFunc) WriteTo(w io.Writer) (int64, error) { return f(w) }

// SaveFile writes what src encodes to path as Filter.Save does: into a
// temporary file in the same directory, synced, renamed over path, and the
// directory synced, so that a crash leaves either the old file or the new
// one. Filter.Save and AtomicFilter.Save use it; it is exported for the
// other filters' encodings and for files that hold filters among other
// things (the records of ohbloom serve, say).
//
// The file is created with permissions 0666 less the process's umask, as
// cp, tar and most tools create files (0644 under the usual umask 022):
// a snapshot is meant to be read by other processes.
//
// Only a regular file is replaced: a path that names anything else (a
// directory, a symbolic link, a device, a named pipe, a socket) is an error
// that says what it is, before anything is written, since the rename
// would put a regular file in its place (a symbolic link is replaced, not
// followed, and a device node would be gone).
func SaveFile(path string, src io.WriterTo) (err error) {
	if err := replaceable(path); err != nil {
		return fmt.Errorf("ohbloom: save %s: %w", path, err)
	}
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := createTemp(dir, "."+name+".tmp-")
	if err != nil {
		// The temporary file's name would only confuse: say what failed.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &fileError{"save", path, err}
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = &fileError{"save", path, err}
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
	// Again: the path may have been made since the first look.
	if err := replaceable(path); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// replaceable reports an error unless path is missing or a regular file,
// which a rename may replace. It looks at path itself, not at what a
// symbolic link points to.
func replaceable(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the caller names the path
		}
		return err
	}
	if st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("is %s, not a regular file: a snapshot replaces only a regular file, or makes a new one", fileKind(st.Mode()))
}

// fileKind names what a file that is not a regular one is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a file of type " + m.Type().String()
}

// createTemp creates a new file dir/prefix+random, as os.CreateTemp does
// but with permissions 0666 less the umask: os.CreateTemp makes its files
// 0600, which would keep other users and services from reading snapshots.
func createTemp(dir, prefix string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, prefix+"*"), Err: fs.ErrExist}
}

// Load reads a snapshot written by Save (or any encoded filter) into a new
// Filter. The file is read once, decoded and checked in full, and must
// hold exactly one filter; see Open to serve a large snapshot from the
// file itself, without a copy in memory. A file of another kind of filter
// is an error wrapping ErrUnknownKind that says which call reads it
// (LoadCounting, LoadScalable).
func Load(path string) (*Filter, error) { return loadAs(path, kindBlocked, new(Filter)) }

// sizedReader reads a file of known size and says how much of it is left,
// so that ReadFrom allocates the filter once, at its size (see remaining).
// It reads straight from the file: ReadFrom moves the blocks in 64 KiB
// reads, which a buffer would only copy once more.
type sizedReader struct {
	r    io.Reader
	left int64
}

func (s *sizedReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.left -= int64(n)
	return n, err
}

// Len is what is left of the file, as far as this process knows.
func (s *sizedReader) Len() int { return int(min(max(s.left, 0), math.MaxInt)) }

// Snapshot is a read-only filter served from a snapshot file mapped into
// memory. It is safe for concurrent use by multiple goroutines, up to Close.
//
// Where files cannot be mapped in place (not unix, or a big-endian CPU),
// Open reads the file instead.
//
// # Replacing a mapped file
//
// The mapping shares the file's pages: a Snapshot answers from whatever the
// file holds at the moment of each Test, not from what Open checked. Writers
// that change the file in place therefore reach into a running process:
//
//   - truncate, or anything that shortens the file (cp over it truncates it
//     first): a Test that reaches a page past the new end faults, and the
//     fault (SIGBUS) kills the process; recover cannot catch it. The
//     Checked methods (TestChecked, TestBatchChecked) turn it into an error
//     wrapping ErrTruncated, at a few nanoseconds a call.
//   - cp, dd, or any write over the old bytes: Tests answer from a mix of
//     old and new bits, unchecked, and may say "absent" for a key that is
//     in both files.
//
// Replace a snapshot by renaming a new file over it, as Save does (or
// write it elsewhere on the same file system, then mv): the open Snapshot
// keeps the old file's pages until Close, and the next Open sees the new
// file. Never copy over a file that a process has open.
type Snapshot struct {
	core
	mapping []byte // the mapped file, nil when it was read
	path    string
}

// Open opens a snapshot file written by Save and checks all of it: the
// header (magic, version, kind, hash, partitions, its own checksum), that
// the file is exactly as long as the header announces, and the checksum of
// the data, so that a Test never answers from corrupt bits. Checking the
// data reads the file once, at memory speed when it is in the page cache
// (a small fraction of rebuilding it from its keys; docs/operations.md) and
// at the disk's speed from disk, and leaves its pages mapped for the Tests
// that follow. A file that fails a check is an error wrapping one of
// the package's sentinels: ErrChecksum for a changed byte, ErrTruncated for
// a short file, and so on. Only a Filter's (or AtomicFilter's) file is
// mapped: the file of a counting or scalable filter is an error wrapping
// ErrUnknownKind that says what it holds and which Load function reads it.
//
// The returned Snapshot maps the file: see the type's documentation for
// what writing to the file in place does to it, and how to replace it
// safely.
func Open(path string) (*Snapshot, error) { return open(path, true) }

// OpenUnverified opens a snapshot as Open does but skips the data checksum:
// it checks the header and the file's length only, and costs a few system
// calls whatever the file's size, reading pages as Tests touch them. A
// changed byte in the data then goes unnoticed, and Test may answer
// "absent" for a key that was added. Use it where the file is known good
// (this process wrote it, or checked it before) or where start-up time
// matters more than that risk, and call Verify when there is time.
func OpenUnverified(path string) (*Snapshot, error) { return open(path, false) }

func open(path string, verify bool) (*Snapshot, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ohbloom: %w", err) // "open PATH: why"
	}
	defer file.Close()
	var hdr [headerSize]byte
	n, err := io.ReadFull(file, hdr[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, &fileError{"open", path, err}
	}
	h, err := decodeHeader(hdr[:n])
	if err == nil && h.kind != kindBlocked {
		// Only a Filter's blocks are mapped: a counting filter exists to
		// change and a scalable one to grow, and a scalable file's stages
		// do not start 64-byte aligned.
		err = &kindMismatch{got: h.kind, want: kindBlocked}
	}
	if err != nil {
		return nil, &fileError{"open", path, err}
	}
	st, err := file.Stat()
	if err != nil {
		return nil, &fileError{"open", path, err}
	}
	if want := encodedSize(h.nblocks); uint64(st.Size()) != want {
		kind := ErrCorrupt
		if uint64(st.Size()) < want {
			kind = ErrTruncated
		}
		return nil, &fileError{"open", path, fmt.Errorf("%w: %d bytes, the header announces %d", kind, st.Size(), want)}
	}
	s := &Snapshot{core: h.core(), path: path}
	if s.mapping, s.blocks, err = mapBlocks(file, h.nblocks); err != nil {
		return nil, &fileError{"open", path, err}
	}
	if s.blocks == nil {
		// No mapping here: read the file the ordinary way, which checks
		// the data as it goes, verified or not.
		f, err := Load(path)
		if err != nil {
			return nil, err
		}
		s.core = f.core
		return s, nil
	}
	if verify {
		if err := s.Verify(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Verify reads the whole snapshot and checks its data checksum. Open does
// this already; it is for a Snapshot from OpenUnverified, or to check
// again later. A file truncated under the mapping is an error wrapping
// ErrTruncated, not a crash.
func (s *Snapshot) Verify() error {
	if s.mapping == nil {
		return nil // read by Load, which checked it
	}
	var sum, rec uint64
	if err := s.guard(func() {
		size := len(s.mapping)
		sum = xxh3.Hash(s.mapping[:size-trailerSize])
		rec = binary.LittleEndian.Uint64(s.mapping[size-trailerSize:])
	}); err != nil {
		return err
	}
	if sum != rec {
		return &fileError{"", s.path, fmt.Errorf("%w: data hashes to %#x, recorded %#x", ErrChecksum, sum, rec)}
	}
	return nil
}

// guard runs fn, which reads the mapping, and turns a fault on it (the
// file shrank under the mapping) into an error instead of a crash:
// debug.SetPanicOnFault makes the fault a panic in this goroutine, and the
// panic is recovered here. A panic of any other kind goes on.
func (s *Snapshot) guard(fn func()) (err error) {
	if s.mapping == nil {
		fn()
		return nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.recoverFault(&err)
	fn()
	return nil
}

// recoverFault, deferred, recovers a fault on the mapping into *err.
func (s *Snapshot) recoverFault(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if f, ok := r.(interface{ Addr() uintptr }); ok && s.maps(f.Addr()) {
		*err = &fileError{"", s.path, fmt.Errorf("%w: the file shrank under its mapping (truncated or copied over in place; replace a snapshot by rename)", ErrTruncated)}
		return
	}
	panic(r)
}

// maps reports whether addr lies in the mapping.
func (s *Snapshot) maps(addr uintptr) bool {
	start := addressOf(s.mapping)
	return addr >= start && addr-start < uintptr(len(s.mapping))
}

// TestChecked is Test, but a file truncated under the mapping makes it
// return an error wrapping ErrTruncated where Test would crash the process
// (see Snapshot). It costs a few nanoseconds more than Test
// (docs/operations.md), which matters only where a Test costs little;
// TestBatchChecked pays it once per batch.
func (s *Snapshot) TestChecked(key []byte) (ok bool, err error) {
	if s.mapping == nil {
		return s.Test(key), nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.recoverFault(&err)
	return s.Test(key), nil
}

// TestBatchChecked is TestBatch with the check of TestChecked, paid once
// for the whole batch.
func (s *Snapshot) TestBatchChecked(keys [][]byte, results []bool) error {
	return s.guard(func() { s.TestBatch(keys, results) })
}

// Test reports whether key may be in the snapshot.
func (s *Snapshot) Test(key []byte) bool {
	h := xxh3.HashSeed(key, s.seed)
	return s.testBits(s.blockOf(h), residue(h))
}

// TestString is Test for a string key. It views the string's bytes,
// which Test only reads, and inlines into its caller.
func (s *Snapshot) TestString(key string) bool { return s.Test(stringBytes(key)) }

// TestHash tests the key whose Hash is h.
func (s *Snapshot) TestHash(h uint64) bool { return s.testBits(s.blockOf(h), residue(h)) }

// TestBatch tests keys as Filter.TestBatch does.
func (s *Snapshot) TestBatch(keys [][]byte, results []bool) {
	runKeys(&s.core, keys, opTest, results)
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
