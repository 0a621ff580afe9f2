package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ohbloom/ohbloom"
	"github.com/zeebo/xxh3"
)

// kind is what a key holds, and how its filter answers.
type kind uint8

const (
	// kindScalable is a BF key that grows (RedisBloom's default).
	kindScalable kind = 1
	// kindFixed is a BF key made with NONSCALING: full at its capacity.
	kindFixed kind = 2
	// kindCounting is a CF key: a counting filter, so that items can be
	// deleted (RedisBloom uses a cuckoo filter there).
	kindCounting kind = 3
)

// typeName is what TYPE answers, RedisBloom's module type names.
func (k kind) typeName() string {
	if k == kindCounting {
		return "MBbloomCF"
	}
	return "MBbloom--"
}

// entry is one key: its filter and what RedisBloom reports about it.
type entry struct {
	kind      kind
	scalable  *ohbloom.AtomicScalableFilter
	fixed     *ohbloom.AtomicFilter
	counting  *ohbloom.AtomicCountingFilter
	capacity  uint64  // as reserved
	errorRate float64 // as reserved (CF keys: the counting filter's target)

	items   atomic.Uint64 // BF: items reported new; CF: items added minus deleted
	deletes atomic.Uint64 // CF only
	dirty   atomic.Bool   // changed since it was last saved

	dumpMu sync.Mutex
	dump   []byte // the encoding SCANDUMP is serving, from its iterator 0 on
}

// markDirty records a change. It loads before it stores so that a hot key
// re-added constantly does not write a shared line on every command.
func (e *entry) markDirty() {
	if !e.dirty.Load() {
		e.dirty.Store(true)
	}
}

func (e *entry) sizeBytes() uint64 {
	switch e.kind {
	case kindScalable:
		return e.scalable.SizeBytes()
	case kindFixed:
		return e.fixed.SizeBytes()
	default:
		return e.counting.SizeBytes()
	}
}

func (e *entry) stages() int {
	if e.kind == kindScalable {
		return e.scalable.Stages()
	}
	return 1
}

// capacityNow is BF.INFO's Capacity: the keys all stages were sized for.
func (e *entry) capacityNow() uint64 {
	if e.kind != kindScalable {
		return e.capacity
	}
	total := uint64(0)
	for i := range e.scalable.Stages() {
		total += e.scalable.Stage(i).Capacity()
	}
	return total
}

func (e *entry) writeFilter(w io.Writer) (int64, error) {
	switch e.kind {
	case kindScalable:
		return e.scalable.WriteTo(w)
	case kindFixed:
		return e.fixed.WriteTo(w)
	default:
		return e.counting.WriteTo(w)
	}
}

// The record of one key, on disk and in BF.SCANDUMP's chunks:
//
//	0   magic "OHBSRV" and version 0x0001 (big-endian)
//	8   kind (1 scalable, 2 fixed, 3 counting), 7 zero bytes
//	16  items, little-endian uint64
//	24  deletes
//	32  capacity
//	40  error rate, float64 bits
//	48  key length, uint32; 4 zero bytes
//	56  the key
//	    XXH3_64bits of everything above
//	    the filter, as its WriteTo writes it (with its own checksum)
const (
	recordMagic   = "OHBSRV\x00\x01"
	recordFixed   = 56
	maxKeyBytes   = 64 << 10
	recordFileExt = ".ohbs"
)

var (
	errNotRecord = errors.New("not an ohbloom server record (bad magic)")
	errCorrupt   = errors.New("corrupt record")
)

// WriteTo writes e's record under name; it implements io.WriterTo for
// ohbloom.SaveFile.
type record struct {
	name string
	e    *entry
}

func (r record) WriteTo(w io.Writer) (int64, error) {
	head := make([]byte, recordFixed, recordFixed+len(r.name)+8)
	copy(head, recordMagic)
	head[8] = byte(r.e.kind)
	le := binary.LittleEndian
	le.PutUint64(head[16:], r.e.items.Load())
	le.PutUint64(head[24:], r.e.deletes.Load())
	le.PutUint64(head[32:], r.e.capacity)
	le.PutUint64(head[40:], math.Float64bits(r.e.errorRate))
	le.PutUint32(head[48:], uint32(len(r.name)))
	head = append(head, r.name...)
	head = le.AppendUint64(head, xxh3.Hash(head))
	n, err := w.Write(head)
	if err != nil {
		return int64(n), err
	}
	m, err := r.e.writeFilter(w)
	return int64(n) + m, err
}

func (r record) bytes() []byte {
	var b bytes.Buffer
	r.WriteTo(&b) // a bytes.Buffer never fails a write
	return b.Bytes()
}

// readRecord decodes one record. It allocates only what the input holds:
// the key length is bounded, and the filter decoders grow their blocks as
// the bytes arrive.
func readRecord(r io.Reader) (string, *entry, error) {
	var head [recordFixed]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return "", nil, fmt.Errorf("%w: truncated header", errCorrupt)
		}
		return "", nil, err
	}
	if string(head[:6]) != recordMagic[:6] {
		return "", nil, errNotRecord
	}
	if string(head[6:8]) != recordMagic[6:8] {
		return "", nil, fmt.Errorf("unsupported record version %d", binary.BigEndian.Uint16(head[6:8]))
	}
	le := binary.LittleEndian
	nameLen := le.Uint32(head[48:])
	if nameLen > maxKeyBytes {
		return "", nil, fmt.Errorf("%w: key of %d bytes", errCorrupt, nameLen)
	}
	rest := make([]byte, nameLen+8)
	if _, err := io.ReadFull(r, rest); err != nil {
		return "", nil, fmt.Errorf("%w: truncated key", errCorrupt)
	}
	sum := xxh3.New()
	sum.Write(head[:])
	sum.Write(rest[:nameLen])
	if got, rec := sum.Sum64(), le.Uint64(rest[nameLen:]); got != rec {
		return "", nil, fmt.Errorf("%w: header hashes to %#x, recorded %#x", errCorrupt, got, rec)
	}
	e := &entry{kind: kind(head[8]), capacity: le.Uint64(head[32:]), errorRate: math.Float64frombits(le.Uint64(head[40:]))}
	e.items.Store(le.Uint64(head[16:]))
	e.deletes.Store(le.Uint64(head[24:]))
	var err error
	switch e.kind {
	case kindScalable:
		e.scalable = new(ohbloom.AtomicScalableFilter)
		_, err = e.scalable.ReadFrom(r)
	case kindFixed:
		e.fixed = new(ohbloom.AtomicFilter)
		_, err = e.fixed.ReadFrom(r)
	case kindCounting:
		e.counting = new(ohbloom.AtomicCountingFilter)
		_, err = e.counting.ReadFrom(r)
	default:
		return "", nil, fmt.Errorf("%w: unknown kind %d", errCorrupt, e.kind)
	}
	if err != nil {
		return "", nil, err
	}
	return string(rest[:nameLen]), e, nil
}

// store is the keyspace. The map is guarded by mu; the filters are
// lock-free, so commands on existing keys only take the read lock.
type store struct {
	mu   sync.RWMutex
	keys map[string]*entry

	// persistMu orders saves and deletions of files, so that a save never
	// brings back the file of a key deleted meanwhile.
	persistMu sync.Mutex
	dir       string // "" keeps everything in memory
	lastSave  atomic.Int64

	pendingMu sync.Mutex
	pending   map[string]*pendingLoad // LOADCHUNK uploads in progress
}

func newStore(dir string) *store {
	return &store{keys: map[string]*entry{}, dir: dir, pending: map[string]*pendingLoad{}}
}

func (s *store) get(name string) *entry {
	s.mu.RLock()
	e := s.keys[name]
	s.mu.RUnlock()
	return e
}

// getBytes is get for a key straight from a command's arguments; indexing
// the map by string(name) does not copy it.
func (s *store) getBytes(name []byte) *entry {
	s.mu.RLock()
	e := s.keys[string(name)]
	s.mu.RUnlock()
	return e
}

// getOrCreate returns the key's entry, creating it with build if it is
// missing. build runs under the write lock, so that two clients creating
// the same key get one filter.
func (s *store) getOrCreate(name string, build func() (*entry, error)) (*entry, bool, error) {
	if e := s.get(name); e != nil {
		return e, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.keys[name]; e != nil {
		return e, false, nil
	}
	e, err := build()
	if err != nil {
		return nil, false, err
	}
	e.dirty.Store(true)
	s.keys[name] = e
	return e, true, nil
}

// put installs e under name unless the key exists.
func (s *store) put(name string, e *entry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys[name] != nil {
		return false
	}
	e.dirty.Store(true)
	s.keys[name] = e
	return true
}

// del removes keys and their files, and returns how many existed.
func (s *store) del(names ...string) (int, error) {
	s.persistMu.Lock()
	defer s.persistMu.Unlock()
	s.mu.Lock()
	var gone []string
	for _, name := range names {
		if s.keys[name] != nil {
			delete(s.keys, name)
			gone = append(gone, name)
		}
	}
	s.mu.Unlock()
	var errs []error
	for _, name := range gone {
		if s.dir == "" {
			continue
		}
		if err := os.Remove(s.path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return len(gone), errors.Join(errs...)
}

// names returns the keys, sorted.
func (s *store) names() []string {
	s.mu.RLock()
	names := make([]string, 0, len(s.keys))
	for name := range s.keys {
		names = append(names, name)
	}
	s.mu.RUnlock()
	sort.Strings(names)
	return names
}

func (s *store) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.keys)
}

// path names a key's file by a hash of the key, so that any key, however
// long or strange, makes a valid file name; the key itself is in the file.
func (s *store) path(name string) string {
	h := xxh3.HashString128(name).Bytes()
	return filepath.Join(s.dir, hex.EncodeToString(h[:])+recordFileExt)
}

// save writes every changed key crash-safely (all keys with force). A key
// changed during its own save stays dirty for the next one.
func (s *store) save(force bool) error {
	if s.dir == "" {
		return nil
	}
	s.persistMu.Lock()
	defer s.persistMu.Unlock()
	var errs []error
	for _, name := range s.names() {
		e := s.get(name)
		if e == nil || !(e.dirty.Swap(false) || force) {
			continue
		}
		if err := ohbloom.SaveFile(s.path(name), record{name, e}); err != nil {
			e.dirty.Store(true)
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		s.lastSave.Store(time.Now().Unix())
	}
	return errors.Join(errs...)
}

// load reads every record in the data directory. A file that does not
// decode stops the start with an error naming it: nothing is skipped and
// nothing is overwritten, so the operator decides.
func (s *store) load() error {
	if s.dir == "" {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(s.dir, "*"+recordFileExt))
	if err != nil {
		return err
	}
	for _, path := range files {
		if strings.HasPrefix(filepath.Base(path), ".") {
			continue // a temporary file left by a crash
		}
		name, e, err := loadRecord(path)
		if err != nil {
			return fmt.Errorf("server: data file %s: %w", path, err)
		}
		if want := s.path(name); filepath.Base(want) != filepath.Base(path) {
			return fmt.Errorf("server: data file %s holds key %q, whose file is %s", path, name, want)
		}
		s.keys[name] = e
	}
	s.lastSave.Store(time.Now().Unix())
	return nil
}

func loadRecord(path string) (string, *entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	name, e, err := readRecord(r)
	if err != nil {
		return "", nil, err
	}
	if _, err := r.ReadByte(); err != io.EOF {
		return "", nil, fmt.Errorf("%w: bytes after the filter", errCorrupt)
	}
	return name, e, nil
}
