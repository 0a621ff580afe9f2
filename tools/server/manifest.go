package server

// The manifest, ohbloom-manifest in --dir: what a start trusts about the
// data directory beyond the files themselves. It says which log segments
// are live (so that a start never infers it from the numbering), where
// each live segment but the newest ends, how far the log was fsynced (so
// that a cut in fsynced records is told from a torn tail), when the last
// save finished (LASTSAVE), and which data files that save left (so that
// one that goes missing is noticed). persist.go says how the start uses
// it; format.md §10 specifies it.
//
// It is text, one item a line, each line ending in \n; numbers are 16
// lower-case hex digits unless said otherwise:
//
//	ohbloom-manifest 1
//	synced <gen> <size> <check>     segment gen was fsynced up to size (gen 0: no mark)
//	saved <unix seconds, decimal>   the last successful save, 0 before the first
//	log <first> <last>              the live segments: first..last, none when first = last+1
//	ended <gen> <size>              (0 or more) a live segment before last, and where it ends
//	database <db> <id>              (0 or more, decimal) database db's keys are in the files
//	                                of database id (SWAPDB); a database not listed is in its own
//	file <32 hex digits>            (0 or more) a data file present when this was written
//	sum <check>                     XXH3 of the lines from "saved" up to this one
//
// and then the journal, lines appended since the file was written:
//
//	segment <gen> <size> <check>    the log moved on to segment gen (last+1);
//	                                the segment before it ends at size
//	removed <32 hex digits> <check> a data file is about to be removed
//
// <check> is the XXH3 of the line up to the space before it. The synced
// line has a fixed width and is rewritten in place after fsyncs of the
// log. A save rewrites the whole file crash-safely (temporary file, fsync,
// rename, fsync of the directory), folding the journal in. A journal line
// cut short where the file ends (a crash during the append) is ignored; any
// other line that does not read is damage, and the start stops, naming the
// file.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/zeebo/xxh3"
)

const (
	manifestFile = "ohbloom-manifest"
	manifestHead = "ohbloom-manifest 1\n"
	// syncedAt is where the synced line starts, and syncedLen its length.
	syncedAt  = len(manifestHead)
	syncedLen = len("synced ") + 3*16 + 3
	// maxManifestLine bounds a line: the longest is a journal line.
	maxManifestLine = 128
)

// manifestState is what a manifest says, its journal folded in.
type manifestState struct {
	saved       int64
	first, last uint64
	// ended holds where live segments before last end.
	ended map[uint64]int64
	// syncedGen and syncedSize are the fsync mark (syncedGen 0: none).
	syncedGen  uint64
	syncedSize int64
	// files are the data files listed, removed those the journal says
	// were being removed.
	files, removed map[string]bool
	// size is where the last whole line ends: the journal goes on from
	// there.
	size int64
	// dbmap maps a database to the database whose files hold its keys,
	// where the two differ (SWAPDB).
	dbmap map[int]int
}

func hex16(v uint64) string { return fmt.Sprintf("%016x", v) }

func checked(line string) string { return line + " " + hex16(xxh3.HashString(line)) }

func syncedLine(gen uint64, size int64) string {
	var b [syncedLen]byte
	fillSynced(&b, gen, size)
	return string(b[:])
}

// fillSynced writes the synced line into b without allocating: it is
// written after every fsync of the log.
func fillSynced(b *[syncedLen]byte, gen uint64, size int64) {
	copy(b[:], "synced ")
	putHex16(b[7:], gen)
	b[23] = ' '
	putHex16(b[24:], uint64(size))
	b[40] = ' '
	putHex16(b[41:], xxh3.Hash(b[:40]))
	b[57] = '\n'
}

func putHex16(b []byte, v uint64) {
	const digits = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
}

// encodeManifest writes a manifest of st (its files and removed are not
// used) listing files.
func encodeManifest(st *manifestState, files []string) []byte {
	var b strings.Builder
	b.WriteString(manifestHead)
	b.WriteString(syncedLine(st.syncedGen, st.syncedSize))
	body := len(manifestHead) + syncedLen
	fmt.Fprintf(&b, "saved %d\nlog %s %s\n", st.saved, hex16(st.first), hex16(st.last))
	gens := make([]uint64, 0, len(st.ended))
	for g := range st.ended {
		if g >= st.first && g < st.last {
			gens = append(gens, g)
		}
	}
	slices.Sort(gens)
	for _, g := range gens {
		fmt.Fprintf(&b, "ended %s %s\n", hex16(g), hex16(uint64(st.ended[g])))
	}
	dbs := make([]int, 0, len(st.dbmap))
	for db := range st.dbmap {
		dbs = append(dbs, db)
	}
	slices.Sort(dbs)
	for _, db := range dbs {
		fmt.Fprintf(&b, "database %d %d\n", db, st.dbmap[db])
	}
	for _, f := range files {
		fmt.Fprintf(&b, "file %s\n", strings.TrimSuffix(f, recordFileExt))
	}
	s := b.String()
	return []byte(s + "sum " + hex16(xxh3.HashString(s[body:])) + "\n")
}

var errManifest = errors.New("damaged manifest")

// parseManifest reads a manifest. It allocates as the lines arrive, each at
// most maxManifestLine bytes.
func parseManifest(r *bufio.Reader) (*manifestState, error) {
	st := &manifestState{ended: map[uint64]int64{}, files: map[string]bool{}, removed: map[string]bool{}, dbmap: map[int]int{}}
	lineNo := 0
	// next returns the next line without its \n, and whether it had one.
	next := func() (string, bool, error) {
		lineNo++
		var b []byte
		for {
			frag, err := r.ReadSlice('\n')
			if len(b)+len(frag) > maxManifestLine {
				return "", false, fmt.Errorf("%w: line %d is longer than %d bytes", errManifest, lineNo, maxManifestLine)
			}
			b = append(b, frag...)
			switch {
			case err == nil:
				st.size += int64(len(b))
				return string(b[:len(b)-1]), true, nil
			case errors.Is(err, bufio.ErrBufferFull):
				continue
			case err == io.EOF:
				return string(b), false, nil
			default:
				return "", false, err
			}
		}
	}
	bad := func(what string) error { return fmt.Errorf("%w: line %d: %s", errManifest, lineNo, what) }
	line, whole, err := next()
	if err != nil {
		return nil, err
	}
	if !whole || line+"\n" != manifestHead {
		if strings.HasPrefix(line, "ohbloom-manifest ") {
			return nil, bad(fmt.Sprintf("unsupported version %q (written by a newer ohbloom?)", strings.TrimPrefix(line, "ohbloom-manifest ")))
		}
		return nil, bad("not an ohbloom manifest")
	}
	line, whole, err = next()
	if err != nil {
		return nil, err
	}
	// The mark is rewritten in place: one that does not check (a write
	// torn by a power loss) is no mark, not damage.
	if f := strings.Fields(line); whole && len(line)+1 == syncedLen && len(f) == 4 && f[0] == "synced" &&
		checked(strings.Join(f[:3], " ")) == line {
		gen, err1 := parseHex16(f[1])
		size, err2 := parseHex16(f[2])
		if err1 == nil && err2 == nil && size <= 1<<62 {
			st.syncedGen, st.syncedSize = gen, int64(size)
		}
	} else if !whole || len(line)+1 != syncedLen {
		return nil, bad("the synced line is missing")
	}
	sum := xxh3.New()
	header := true
	for header {
		line, whole, err = next()
		if err != nil {
			return nil, err
		}
		if !whole {
			return nil, bad("the file ends before its sum line")
		}
		f := strings.Fields(line)
		if len(f) == 0 || strings.Join(f, " ") != line {
			return nil, bad("malformed line")
		}
		switch {
		case lineNo == 3:
			if len(f) != 2 || f[0] != "saved" {
				return nil, bad("want the saved line")
			}
			if st.saved, err = strconv.ParseInt(f[1], 10, 64); err != nil || st.saved < 0 {
				return nil, bad("bad save time")
			}
		case lineNo == 4:
			if len(f) != 3 || f[0] != "log" {
				return nil, bad("want the log line")
			}
			var e1, e2 error
			st.first, e1 = parseHex16(f[1])
			st.last, e2 = parseHex16(f[2])
			if e1 != nil || e2 != nil || st.first == 0 || st.first > st.last+1 || st.last == ^uint64(0) {
				return nil, bad("bad log range")
			}
		case f[0] == "ended" && len(f) == 3:
			gen, e1 := parseHex16(f[1])
			size, e2 := parseHex16(f[2])
			if e1 != nil || e2 != nil || gen < st.first || gen >= st.last || size < segmentHeader || size > 1<<62 {
				return nil, bad("bad segment end")
			}
			st.ended[gen] = int64(size)
		case f[0] == "database" && len(f) == 3:
			db, e1 := strconv.ParseUint(f[1], 10, 31)
			id, e2 := strconv.ParseUint(f[2], 10, 31)
			if e1 != nil || e2 != nil || db >= maxDatabases || id >= maxDatabases || db == id || func() bool { _, dup := st.dbmap[int(db)]; return dup }() || strconv.FormatUint(db, 10) != f[1] || strconv.FormatUint(id, 10) != f[2] {
				return nil, bad("bad database line")
			}
			st.dbmap[int(db)] = int(id)
		case f[0] == "file" && len(f) == 2 && isFileHash(f[1]):
			st.files[f[1]+recordFileExt] = true
		case f[0] == "sum" && len(f) == 2:
			if f[1] != hex16(sum.Sum64()) {
				return nil, bad("the sum does not match the lines above it")
			}
			header = false
			continue
		default:
			return nil, bad("unexpected line")
		}
		sum.WriteString(line + "\n")
	}
	if lineNo < 5 {
		return nil, bad("the saved or log line is missing")
	}
	for {
		line, whole, err = next()
		if err != nil {
			return nil, err
		}
		if !whole {
			return st, nil // "" at the end, or an append cut short
		}
		f := strings.Fields(line)
		if len(f) < 3 || strings.Join(f, " ") != line || checked(strings.Join(f[:len(f)-1], " ")) != line {
			return nil, bad("a journal line does not check")
		}
		switch {
		case f[0] == "segment" && len(f) == 4:
			gen, e1 := parseHex16(f[1])
			size, e2 := parseHex16(f[2])
			if e1 != nil || e2 != nil || gen != st.last+1 || st.last+1 == 0 || size > 1<<62 {
				return nil, bad("a segment that does not follow the log")
			}
			if st.last >= st.first {
				if size < segmentHeader {
					return nil, bad("bad segment end")
				}
				st.ended[st.last] = int64(size)
			}
			st.last = gen
		case f[0] == "removed" && len(f) == 3 && isFileHash(f[1]):
			st.removed[f[1]+recordFileExt] = true
		default:
			return nil, bad("unexpected journal line")
		}
	}
}

func parseHex16(s string) (uint64, error) {
	if len(s) != 16 {
		return 0, errManifest
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return 0, errManifest
		}
	}
	return strconv.ParseUint(s, 16, 64)
}

// isFileHash reports whether s is 32 lower-case hex digits, a data file's
// name without its extension.
func isFileHash(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// isDataFile reports whether name is a data file of ours.
func isDataFile(name string) bool {
	return strings.HasSuffix(name, recordFileExt) && isFileHash(strings.TrimSuffix(name, recordFileExt))
}

// readManifest reads the manifest at path.
func readManifest(path string) (*manifestState, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseManifest(bufio.NewReaderSize(f, 64<<10))
}

// manifest is the open manifest of a data directory. Its methods are safe
// for concurrent use.
type manifest struct {
	dir    string
	logger *slog.Logger

	mu   sync.Mutex
	f    *os.File // open for writing; nil until the first write
	size int64
	st   manifestState // what the file says (files and removed unused)
	mark [syncedLen]byte
}

func (m *manifest) path() string { return filepath.Join(m.dir, manifestFile) }

// write rewrites the manifest crash-safely with st, listing the data files
// present now, and fsyncs the directory.
func (m *manifest) write(st manifestState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ents, err := os.ReadDir(m.dir)
	if err != nil {
		return err
	}
	var files []string
	for _, ent := range ents {
		if isDataFile(ent.Name()) {
			files = append(files, ent.Name())
		}
	}
	st.syncedGen, st.syncedSize = m.st.syncedGen, m.st.syncedSize
	data := encodeManifest(&st, files)
	if err := writeFileAtomic(m.path(), data); err != nil {
		return err
	}
	// The new file is in place: the journal goes on in it, whatever the
	// directory's fsync says.
	if m.f != nil {
		m.f.Close()
		m.f = nil
	}
	st.ended = cloneEnds(st.ended)
	m.st = st
	f, err := os.OpenFile(m.path(), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	m.f, m.size = f, int64(len(data))
	return syncDir(m.dir)
}

func cloneEnds(in map[uint64]int64) map[uint64]int64 {
	out := make(map[uint64]int64, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// state returns what the manifest says now.
func (m *manifest) state() manifestState {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.st
	st.ended = cloneEnds(st.ended)
	return st
}

// appendLine appends a journal line. The caller holds m.mu.
func (m *manifest) appendLine(line string) error {
	if m.f == nil {
		return errors.New("the manifest is not open")
	}
	data := []byte(checked(line) + "\n")
	n, err := writeAt(m.f, data, m.size)
	m.size += int64(n)
	if err != nil && n > 0 {
		// A part of a line would make the next one unreadable: the
		// file ends where it did.
		if m.f.Truncate(m.size-int64(n)) == nil {
			m.size -= int64(n)
		}
	}
	return err
}

// moveTo records, durably, that the log moves on to segment gen (the
// segment before it ending at end), before any record goes there.
func (m *manifest) moveTo(gen uint64, end int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != m.st.last+1 {
		return fmt.Errorf("server: the log moves to segment %d after %d", gen, m.st.last)
	}
	if err := m.appendLine("segment " + hex16(gen) + " " + hex16(uint64(end))); err != nil {
		return fmt.Errorf("recording segment %d in %s: %w", gen, m.path(), err)
	}
	if err := m.f.Sync(); err != nil {
		return fmt.Errorf("recording segment %d in %s: %w", gen, m.path(), err)
	}
	if m.st.last >= m.st.first {
		m.st.ended[m.st.last] = end
	}
	m.st.last = gen
	return nil
}

// markSynced records that segment gen is fsynced up to size. A mark that
// cannot be written only makes the start's check weaker.
func (m *manifest) markSynced(gen uint64, size int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f == nil || gen == m.st.syncedGen && size <= m.st.syncedSize {
		return
	}
	fillSynced(&m.mark, gen, size)
	if _, err := m.f.WriteAt(m.mark[:], int64(syncedAt)); err == nil {
		m.st.syncedGen, m.st.syncedSize = gen, size
	}
}

// remove removes a data file, after recording in the journal that it goes:
// a start then knows the file was removed on purpose. A journal line that
// cannot be written (a full disk) does not stop the removal, which frees
// space; it is logged, and the next start reports the file missing.
func (m *manifest) remove(path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if m.f != nil {
		if err := m.appendLine("removed " + strings.TrimSuffix(filepath.Base(path), recordFileExt)); err != nil {
			m.logger.Warn("could not record a data file's removal in the manifest: the next start will report it missing", "file", path, "err", err)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// open opens the manifest a start read, whose state is st, for its
// journal, cutting a journal line a crash left unfinished.
func (m *manifest) open(st *manifestState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, err := os.OpenFile(m.path(), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != st.size {
		if err := f.Truncate(st.size); err != nil {
			f.Close()
			return err
		}
	}
	m.f, m.size = f, st.size
	m.st = *st
	m.st.ended = cloneEnds(st.ended)
	m.st.files, m.st.removed = nil, nil
	return nil
}

// forget records the removal of data files a start found missing and
// reported, so that the next start does not report them again.
func (m *manifest) forget(names []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range names {
		if err := m.appendLine("removed " + strings.TrimSuffix(name, recordFileExt)); err != nil {
			return err
		}
	}
	return nil
}

func (m *manifest) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f == nil {
		return nil
	}
	err := m.f.Close()
	m.f = nil
	return err
}
