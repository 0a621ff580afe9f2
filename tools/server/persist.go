package server

// Persistence: what a crash can lose.
//
// Promise: an acknowledged change (an add, a delete, a reservation, a DEL,
// a FLUSHALL, a LOADCHUNK) survives kill -9, an OOM kill and a power loss
// under --appendfsync always; under everysec (the default) at most the last
// second of acknowledged changes is lost (two seconds when the disk stalls:
// past that, replies wait for it); under no, kill -9 loses at most the last
// second and a power loss whatever the kernel had not written back; with
// --appendonly no, everything since the last save (--save-interval).
//
// How. --dir holds a snapshot, one file per key (store.go's record), and an
// append-only log of the changes since (aof.go): segments
// appendonly-<gen>.ohbl, replayed in order at start on top of the snapshot.
// A save (scheduled, SAVE, BGSAVE, shutdown) rotates the log to a new
// segment, writes the keys changed since the last save, and then removes
// the older segments: the log never holds more than about two saves'
// worth of changes.
//
// Why the snapshot and the log agree. Replay applies every remaining
// segment to the snapshot, so a record of a change the snapshot already
// holds is applied twice. Each kind of record is made safe for that:
//   - BF adds are logged as the item's hash; adding a hash twice sets the
//     same bits, so they are idempotent, and so is the item count rebuilt
//     from them (an item counts when its add finds it absent). For these a
//     snapshot only has to hold at least every change whose record is in
//     a segment that the save removes. A change is applied, then marks its
//     key dirty, then appends its record; the save rotates, then clears
//     each key's dirty flag, then writes it. So a record in an old segment
//     was appended before the rotation, its key was marked dirty before the
//     flag was cleared, and the change is in the file written after.
//   - CF adds and removes are not idempotent (counters). Each CF change
//     takes the next number of its key (entry.seq) and appends its record
//     under the key's lock, and the snapshot of a CF key is written under
//     that lock with the seq it holds: replay skips records whose number
//     is not above the snapshot's. That is exact whatever the order of
//     rotation and snapshot, and also when a save dies halfway.
//   - A creation (BF.RESERVE, CF.RESERVE, an add that creates) and a
//     LOADCHUNK are logged under the keyspace lock before the key becomes
//     visible, so no record of the key precedes them. Replaying one
//     replaces whatever the snapshot holds for the key: every change since
//     is still in the log, because segments are only ever removed oldest
//     first, so what remains is always a whole suffix of the history.
//     (Segments before a gap in the numbering were being removed by a
//     finished save and are skipped.)
//   - DEL and FLUSHALL remove keys; a file that could not be removed is
//     removed by the next save, before the segment holding the removal is.
//   - Records of keys that do not exist or hold another type are skipped:
//     they belong to an incarnation of the key that a later record
//     deletes, or that a snapshot already replaced.
//
// A record is written whole or it is a torn tail: the last record of a
// segment, cut short or failing its checksum where the file ends, is
// dropped and truncated away (its reply was never sent under always: the
// write or its fsync had not returned). Anything else that does not decode
// stops the start with an error naming the file, and nothing is changed.
//
// When a write or fsync of the log fails, the server refuses changes
// (MISCONF, as Redis) until a save succeeds, which writes every changed
// key and starts a new segment; under always the clients waiting on the
// failed write are disconnected without their replies.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// lastSaveFile holds the time of the last successful save, for LASTSAVE
// after a restart.
const lastSaveFile = "ohbloom-lastsave"

// tempFile matches the temporary files of our saves (ohbloom.SaveFile's
// naming and ours): only these are removed at start.
var tempFile = regexp.MustCompile(`^\.([0-9a-f]{32}\.ohbs|appendonly-[0-9a-f]{16}\.ohbl|` + lastSaveFile + `)\.tmp-[0-9]+$`)

func newStore(c Config) *store {
	s := &store{keys: map[string]*entry{}, dir: c.DataDir, logger: c.Logger, maxFilterBytes: c.MaxFilterBytes, now: time.Now}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	maxDump := dumpLimit(c.MaxFilterBytes)
	s.uploads.init(orDefault(c.MaxUploadBytes, 2*maxDump), s)
	s.dumps.init(orDefault(c.MaxDumpBytes, 2*maxDump), s)
	s.persist = c
	return s
}

func orDefault(v, def uint64) uint64 {
	if v == 0 {
		return def
	}
	return v
}

// dumpLimit is the largest dump of a filter within maxFilter bytes: the
// filter, its stage headers, and the record's header and key.
func dumpLimit(maxFilter uint64) uint64 { return maxFilter + 2*maxKeyBytes + 1<<16 }

// openRegular opens a file of the data directory for reading, refusing
// anything but a regular file (a FIFO would block the open, a device
// would be read without end) before opening it.
func openRegular(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s); move it out of the data directory", path, fileType(st.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file; move it out of the data directory", path)
	}
	return f, nil
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "type " + m.Type().String()
}

// load restores the data directory: temporary files of interrupted saves
// are removed, every data file is read and checked, the log is replayed on
// top, and the log is opened for appending. A file that does not decode
// stops the start with an error naming it: nothing is skipped and nothing
// is overwritten, so the operator decides.
func (s *store) load() error {
	c := s.persist
	policy, err := parseFsync(c.AppendFsync)
	if err != nil {
		return err
	}
	if s.dir == "" {
		if c.AppendFsync != "" && !c.DisableAppendLog {
			s.logger.Info("no data directory: the append-only log is off")
		}
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	var segs []segmentFile
	var records []string
	for _, ent := range ents {
		name := ent.Name()
		path := filepath.Join(s.dir, name)
		switch {
		case tempFile.MatchString(name):
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("server: removing %s, left by an interrupted save: %w", path, err)
			}
			s.logger.Info("removed a temporary file of an interrupted save", "file", path)
		case strings.HasSuffix(name, recordFileExt) && !strings.HasPrefix(name, "."):
			records = append(records, path)
		case segmentName.MatchString(name):
			gen, _ := strconv.ParseUint(name[len("appendonly-"):len("appendonly-")+16], 16, 64)
			segs = append(segs, segmentFile{gen, path})
		case name == lastSaveFile:
			s.lastSave.Store(readLastSave(path, s.logger))
		}
	}
	if err := s.loadRecords(records); err != nil {
		return err
	}
	slices.SortFunc(segs, func(a, b segmentFile) int { return cmpUint(a.gen, b.gen) })
	// Segments before a gap were being removed by a save that had
	// finished: the snapshot holds them.
	for i := len(segs) - 1; i > 0; i-- {
		if segs[i-1].gen+1 != segs[i].gen {
			s.logger.Info("skipping log segments a finished save was removing", "before", segs[i].path)
			segs = segs[i:]
			break
		}
	}
	rp := &replayer{keys: s.keys, maxFilterBytes: s.maxFilterBytes}
	for _, seg := range segs {
		if err := s.replayFile(rp, seg); err != nil {
			return err
		}
	}
	s.limitAll()
	s.indexAll()
	if c.DisableAppendLog {
		s.oldSegments = len(segs) > 0
		return nil
	}
	s.log, err = openLog(s.dir, policy, segs, s.logger)
	if err != nil {
		return err
	}
	s.log.recover = func() error { return s.save(false) }
	return nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// replayFile replays one segment, truncating a torn tail.
func (s *store) replayFile(rp *replayer, seg segmentFile) error {
	f, err := openRegular(seg.path)
	if err != nil {
		return fmt.Errorf("server: log segment %s: %w", seg.path, err)
	}
	good, torn, err := rp.replay(bufio.NewReaderSize(f, 1<<20), seg.gen)
	f.Close()
	if err != nil {
		return fmt.Errorf("server: log segment %s: %w", seg.path, err)
	}
	if torn {
		s.logger.Warn("dropping the torn last record of a log segment (a write cut short by a crash)", "file", seg.path, "at", good)
		if err := truncateFile(seg.path, good); err != nil {
			return fmt.Errorf("server: log segment %s: truncating its torn tail: %w", seg.path, err)
		}
	}
	return nil
}

func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

func readLastSave(path string, logger *slog.Logger) int64 {
	f, err := openRegular(path)
	if err == nil {
		defer f.Close()
		var b []byte
		if b, err = io.ReadAll(io.LimitReader(f, 64)); err == nil {
			var t int64
			if t, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && t >= 0 {
				return t
			}
		}
	}
	logger.Warn("LASTSAVE unknown: the file recording it does not read", "file", path, "err", err)
	return 0
}

// save writes every changed key crash-safely (all keys with force) and
// compacts the log: it rotates the log first, and removes the old segments
// once every key is written (see the top of this file). A key changed
// during its own save stays dirty for the next one.
func (s *store) save(force bool) error {
	if s.dir == "" {
		return nil
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.uploads.expire()
	s.dumps.expire()
	var gen uint64
	var errs []error
	if s.log != nil {
		var err error
		if gen, err = s.log.rotate(); err != nil {
			errs = append(errs, fmt.Errorf("rotating the append-only log: %w", err))
		}
	}
	testSaveHook("rotated")
	names := s.names()
	saved := make(map[string]bool, len(names))
	for _, name := range names {
		saved[filepath.Base(s.path(name))] = true
		e := s.get(name)
		if e == nil || !(e.dirty.Swap(false) || force) {
			continue
		}
		if err := s.saveKey(name, e); err != nil {
			e.dirty.Store(true)
			errs = append(errs, err)
		}
	}
	testSaveHook("written")
	if err := s.removeStale(saved); err != nil {
		errs = append(errs, err)
	}
	now := s.now().Unix()
	if len(errs) == 0 {
		if err := writeFileAtomic(filepath.Join(s.dir, lastSaveFile), []byte(strconv.FormatInt(now, 10)+"\n")); err != nil {
			errs = append(errs, err)
		}
	}
	if err := syncDir(s.dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	s.lastSave.Store(now)
	testSaveHook("synced")
	if s.log != nil {
		if err := s.log.removeBefore(gen); err != nil {
			return err
		}
		s.log.cleared(gen)
	} else if s.oldSegments {
		if err := removeSegments(s.dir, ^uint64(0)); err != nil {
			return err
		}
		s.oldSegments = false
	}
	return nil
}

// saveHook, set by tests, runs at each step of a save: a test stops the
// world there, as a crash would, by copying the data directory.
var saveHook func(step string)

func testSaveHook(step string) {
	if saveHook != nil {
		saveHook(step)
	}
}

// saveKey writes one key's file: a temporary file synced and renamed over
// it (the directory is synced once, by save). It holds the key's stripe
// lock, so that a DEL cannot remove the file while it is renamed in, and
// skips a key deleted meanwhile.
func (s *store) saveKey(name string, e *entry) error {
	lock := s.stripeOf(name)
	lock.Lock()
	defer lock.Unlock()
	if s.get(name) != e {
		return nil
	}
	path := s.path(name)
	err := writeAtomic(path, func(w io.Writer) error {
		_, err := recordTo(w, name, e)
		return err
	})
	if err != nil {
		return fmt.Errorf("saving key '%s': %w", quoteArg([]byte(name)), err)
	}
	e.onDisk = true
	return nil
}

// removeStale removes the data files of keys that are gone: a DEL or
// FLUSHALL that could not remove one left it to the log and to us.
func (s *store) removeStale(live map[string]bool) error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, ent := range ents {
		name := ent.Name()
		if !strings.HasSuffix(name, recordFileExt) || strings.HasPrefix(name, ".") || live[name] {
			continue
		}
		if len(name) != 32+len(recordFileExt) {
			continue // not a name of ours
		}
		var h0 byte
		fmt.Sscanf(name[:2], "%02x", &h0)
		lock := &s.stripe[h0%stripes]
		lock.Lock()
		// No save runs beside us, and a key created since the names
		// were listed has not been saved: the file is a gone key's.
		if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the data file of a deleted key: %w", err))
		}
		lock.Unlock()
	}
	return errors.Join(errs...)
}

// writeAtomic writes path through a temporary file in its directory,
// synced and renamed over it, as ohbloom.SaveFile does, except that the
// caller syncs the directory: a save of many keys syncs it once, not once
// a key.
func writeAtomic(path string, write func(io.Writer) error) (err error) {
	if err := replaceable(path); err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err := write(w); err != nil {
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
	if err := replaceable(path); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func writeFileAtomic(path string, data []byte) error {
	return writeAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// shutdown saves every changed key, which also compacts the log, and
// closes the log.
func (s *store) shutdown() error {
	err := s.save(false)
	if s.log != nil {
		err = errors.Join(err, s.log.close())
	}
	return err
}

// writeRefusal is the error a change gets while the log is failing, or "".
func (s *store) writeRefusal() string {
	if s.log == nil || !s.log.failed.Load() {
		return ""
	}
	return "MISCONF Errors writing to the append-only log: " + oneLine(s.log.failure()) + ". Changes are refused until a save succeeds."
}

// infoPersistence writes INFO's Persistence section.
func (s *Server) infoPersistence(b *strings.Builder) {
	st := s.store
	fmt.Fprintf(b, "# Persistence\r\n")
	fmt.Fprintf(b, "rdb_last_save_time:%d\r\n", st.lastSave.Load())
	fmt.Fprintf(b, "rdb_bgsave_in_progress:%d\r\n", boolInt(st.bgsave.Load()))
	if l := st.log; l != nil {
		status := "ok"
		if l.failed.Load() {
			status = "err"
		}
		fmt.Fprintf(b, "aof_enabled:1\r\naof_fsync:%s\r\naof_last_write_status:%s\r\naof_current_segment:%d\r\n", l.policy, status, l.currentGen())
	} else {
		fmt.Fprintf(b, "aof_enabled:0\r\n")
	}
	n, bytes := st.uploads.usage()
	fmt.Fprintf(b, "loadchunk_uploads:%d\r\nloadchunk_upload_bytes:%d\r\n", n, bytes)
	n, bytes = st.dumps.usage()
	fmt.Fprintf(b, "scandump_dumps:%d\r\nscandump_dump_bytes:%d\r\n", n, bytes)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendOnlySetting is CONFIG GET appendonly.
func (s *Server) appendOnlySetting() string {
	if s.store.log != nil {
		return "yes"
	}
	return "no"
}
