package server

// Persistence: what a crash can lose, and what a start recovers.
//
// Promise: an acknowledged change (an add, a delete, a reservation, a DEL,
// a FLUSHALL, a LOADCHUNK) survives kill -9, an OOM kill and a power loss
// under --appendfsync always; under everysec (the default) at most the last
// second of acknowledged changes is lost (two seconds when the disk stalls:
// past that, replies wait for it); under no, kill -9 loses at most the last
// second and a power loss whatever the kernel had not written back; with
// --appendonly no, everything since the last save (--save-interval). A
// start recovers exactly what the files hold that is valid, or refuses,
// with an error naming the file, and changes nothing.
//
// How. --dir holds a snapshot, one file per key (store.go's record), an
// append-only log of the changes since (aof.go): segments
// appendonly-<gen>.ohbl, replayed in order at start on top of the snapshot,
// and a manifest (manifest.go) saying which segments are live. A save
// (scheduled, SAVE, BGSAVE, shutdown) rotates the log to a new segment,
// writes the keys changed since the last save, writes a manifest whose
// live log starts at the new segment, and then removes the older
// segments: the log never holds more than about two saves' worth of
// changes.
//
// Which segments a start replays. Exactly those the manifest names live,
// first..last, never guessed from the numbering: a save writes first only
// once every key it covers is on disk, and the log appends "the log moves
// to segment gen" to the manifest, fsynced, before any record goes to
// gen. So a segment below first is one a finished save superseded (its
// removal was cut short) and is removed; one of first..last that is
// missing is damage; last+1 holding only its header is a rotation cut
// short and is removed; anything else above last is not part of this
// directory's history, and the start refuses, naming it. A directory
// without a manifest (written by an older ohbloom, whose saves numbered
// segments without gaps) has every segment replayed if they run without a
// gap, and gets a manifest; with a gap the start refuses, naming both
// sides, since nothing says which are live.
//
// Why the snapshot and the log agree. Replay applies every live segment to
// the snapshot, so a record of a change the snapshot already holds is
// applied twice. Each kind of record is made safe for that:
//   - BF adds are logged as the item's hash; adding a hash twice sets the
//     same bits, so they are idempotent, and so is the item count rebuilt
//     from them (an item counts when its add finds it absent), since a
//     key's adds and their records are one step (entry.order): replayed
//     in the log's order, each add finds what it found live. For these a
//     snapshot only has to hold at least every change whose record is in
//     a segment that the save removes. A change is applied, then marks its
//     key dirty, then appends its record; the save rotates, then clears
//     each key's dirty flag, then writes it. So a record in an old segment
//     was appended before the rotation, its key was marked dirty before the
//     flag was cleared, and the change is in the file written after.
//   - CF changes are not idempotent (a cuckoo filter stores one more copy
//     per add and may move fingerprints, grow or compact; a legacy
//     counting key's counters; a RedisBloom BF key's growth and counts,
//     likewise). Each such change takes the next number of its key
//     (entry.seq) and appends its record under the key's lock, and the
//     snapshot of such a key is written under that lock with the seq it
//     holds: replay skips records whose number is not above the
//     snapshot's. That is exact whatever the order of rotation and
//     snapshot, and also when a save dies halfway.
//   - A creation (BF.RESERVE, CF.RESERVE, an add that creates) and a
//     LOADCHUNK are logged under the keyspace lock before the key becomes
//     visible, so no record of the key precedes them. Replaying one
//     replaces whatever the snapshot holds for the key: every change since
//     is still in the log, because the live segments are always a whole
//     suffix of the history (segments are superseded oldest first, and
//     records the old segment could not take go to the new one ahead of
//     the others: rotate).
//   - DEL and FLUSHALL remove keys; a file that could not be removed is
//     removed by the next save, before the segment holding the removal is.
//   - A change to a key that exists (an add, a CF delete, a chunk) is
//     logged only while the key still is the one it changed, under the
//     keyspace's read lock (store.logChange); whatever removes or replaces
//     a key logs that under its write lock. So no record of a change
//     follows the removal of its key, where the replay would give it to a
//     key made since under the same name.
//   - Records of keys that do not exist or hold another type are skipped:
//     they belong to an incarnation of the key that a later record
//     deletes, or that a snapshot already replaced.
//
// What a start drops. A record is written whole or it is a torn tail: the
// newest segment ending inside a record, or in a last record whose
// checksum fails, or in zeros that run to the end of the file from a
// record boundary or from inside a record (the blocks a power loss left
// unwritten). It is dropped and truncated away, with a line saying how
// many bytes from which offset. It cannot hide a cut in records that
// mattered: the manifest records how far the log was fsynced (under
// always, past every acknowledged record) and where each segment the log
// moved past ends, and a segment shorter than either stops the start. Any
// other damage stops it too. A data file the last save wrote that is gone
// without a DEL or FLUSHALL having recorded its removal in the manifest is
// reported by name (its key is lost; the start goes on with the others).
//
// When a write of the log fails (a full disk), the server refuses changes
// (MISCONF, as Redis) but keeps every record not yet written, in order:
// the flusher tries again every second, going on where the failed write
// stopped, and the failure ends once they are written. A save that
// completes ends it too (its snapshot holds them). So every change
// acknowledged before the failure survives once the disk has room again;
// a crash while it has none loses what the failed write could not write,
// which under everysec is at most the second before the failure (and
// under always nothing acknowledged: those replies waited for it). DEL and FLUSHALL, which
// free space, still run: their replies, under every policy, wait until
// their records are durable, the log written again or a save completed;
// if neither happens the client is disconnected unanswered. Under always
// the clients waiting on a failed write are answered the same way. An
// fsync that fails is not trusted to be retried: the segment is given up,
// and only a save ends the failure.
//
// Turning the log off (--appendonly no) on a directory whose log holds
// changes saves them first and removes the segments, before the server
// takes a command: otherwise a DEL without a log, which only removes the
// key's file, would be undone by the log at the next start.

import (
	"bufio"
	"encoding/binary"
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
	"sync/atomic"
	"time"
)

// lastSaveFile held the time of the last successful save before the
// manifest did: a start reads it from a directory without a manifest.
const lastSaveFile = "ohbloom-lastsave"

// tempFile matches the temporary files of our saves (ohbloom.SaveFile's
// naming and ours): only these are removed at start.
var tempFile = regexp.MustCompile(`^\.([0-9a-f]{32}\.ohbs|appendonly-[0-9a-f]{16}\.ohbl|` + lastSaveFile + `|` + manifestFile + `)\.tmp-[0-9]+$`)

func newStore(c Config) *store {
	s := &store{dir: c.DataDir, logger: c.Logger, maxFilterBytes: c.MaxFilterBytes, now: time.Now}
	if testStoreClock != nil {
		s.now = testStoreClock
	}
	s.expiry.soon = make(chan struct{}, 1)
	s.dbs = make([]*database, max(c.Databases, 1))
	s.ident = make([]atomic.Int64, len(s.dbs))
	for i := range s.dbs {
		s.dbs[i] = newDatabase()
		s.ident[i].Store(int64(i))
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	maxDump := dumpLimit(c.MaxFilterBytes)
	s.uploads.init(orDefault(c.MaxUploadBytes, 2*maxDump), s)
	s.dumps.init(orDefault(c.MaxDumpBytes, 2*maxDump), s)
	s.persist = c
	return s
}

// mapDatabases sets which database's files each database's keys are in,
// as the manifest says: m maps a database to its identity, where the two
// differ (SWAPDB).
func (s *store) mapDatabases(m map[int]int) error {
	seen := map[int]bool{}
	for db, id := range m {
		if db >= len(s.dbs) || id >= len(s.dbs) {
			return fmt.Errorf("databases %d and %d were swapped, but the server has %d databases: start it with --databases %d or more", db, id, len(s.dbs), max(db, id)+1)
		}
		// A permutation: each identity once, and each taken from a
		// database that has another.
		if _, gave := m[id]; seen[id] || !gave || id == db {
			return fmt.Errorf("%w: the databases' files are not a permutation of them", errManifest)
		}
		seen[id] = true
	}
	for db, id := range m {
		s.ident[db].Store(int64(id))
	}
	return nil
}

// databaseMap is the identity of each database whose identity is not its
// own, for the manifest.
func (s *store) databaseMap() map[int]int {
	m := map[int]int{}
	for db := range s.ident {
		if id := s.identOf(db); id != db {
			m[db] = id
		}
	}
	return m
}

// testStoreClock, set by tests, is the clock of the stores New makes.
var testStoreClock func() time.Time

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
// are removed, every data file is read and checked, the live log segments
// are replayed on top (see the top of this file), and the log is opened
// for appending. A file that does not decode stops the start with an error
// naming it, and nothing is changed: the operator decides. Only once
// everything has been read does the start change the directory: torn tails
// cut, superseded segments removed, a manifest written for a directory
// without one, and, with --appendonly no, the log's changes saved and its
// segments removed.
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
	var manifestPath, lastSavePath string
	present := map[string]bool{}
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
			present[name] = true
		case segmentName.MatchString(name):
			gen, _ := strconv.ParseUint(name[len("appendonly-"):len("appendonly-")+16], 16, 64)
			segs = append(segs, segmentFile{gen, path})
		case name == manifestFile:
			manifestPath = path
		case name == lastSaveFile:
			lastSavePath = path
		}
	}
	var ms *manifestState
	if manifestPath != "" {
		if ms, err = readManifest(manifestPath); err != nil {
			return fmt.Errorf("server: manifest %s: %w (moved away, the start replays every log segment, if they run without a gap)", manifestPath, err)
		}
	}
	if ms != nil {
		if err := s.mapDatabases(ms.dbmap); err != nil {
			return fmt.Errorf("server: manifest %s: %w", manifestPath, err)
		}
	}
	if err := s.loadRecords(records); err != nil {
		return err
	}
	slices.SortFunc(segs, func(a, b segmentFile) int { return cmpUint(a.gen, b.gen) })
	live, stale, spare, err := liveSegments(ms, manifestPath, segs)
	if err != nil {
		return err
	}
	rp := &replayer{dbs: s.dbs, ident: s.ident, maxFilterBytes: s.maxFilterBytes}
	type cut struct {
		path string
		size int64
	}
	var cuts []cut
	ends := map[uint64]int64{}
	for i, seg := range live {
		end, synced := int64(-1), int64(0)
		if ms != nil {
			if e, ok := ms.ended[seg.gen]; ok && i < len(live)-1 {
				end = e
			}
			if ms.syncedGen == seg.gen {
				synced = ms.syncedSize
			}
		}
		good, dropped, err := s.replayFile(rp, seg, end, synced)
		if err != nil {
			return err
		}
		if dropped {
			cuts = append(cuts, cut{seg.path, good})
		}
		ends[seg.gen] = good
	}
	// Everything is read and checked: from here on the start changes the
	// directory.
	for _, c := range cuts {
		if err := truncateFile(c.path, c.size); err != nil {
			return fmt.Errorf("server: log segment %s: cutting its torn tail: %w", c.path, err)
		}
	}
	for _, seg := range stale {
		if err := os.Remove(seg.path); err != nil {
			return fmt.Errorf("server: removing log segment %s, which a finished save superseded: %w", seg.path, err)
		}
		s.logger.Info("removed a log segment that a finished save superseded (its removal had been cut short)", "file", seg.path)
	}
	if spare != nil {
		if err := os.Remove(spare.path); err != nil {
			return fmt.Errorf("server: removing log segment %s, empty, which a save was starting: %w", spare.path, err)
		}
		s.logger.Info("removed an empty log segment that a save was starting when it stopped", "file", spare.path)
	}
	var missing []string
	if ms != nil {
		missing = s.reportMissing(ms, present)
		s.lastSave.Store(ms.saved)
	} else if lastSavePath != "" {
		s.lastSave.Store(readLastSave(lastSavePath, s.logger))
	}
	s.limitAll()
	s.indexAll()
	s.noteLegacyCF()
	s.man = &manifest{dir: s.dir, logger: s.logger}
	if ms == nil {
		st := manifestState{saved: s.lastSave.Load(), first: 1, last: 0, ended: map[uint64]int64{}}
		if len(live) > 0 {
			st.first, st.last = live[0].gen, live[len(live)-1].gen
			for _, seg := range live[:len(live)-1] {
				st.ended[seg.gen] = ends[seg.gen]
			}
		}
		if err := s.man.write(st); err != nil {
			return fmt.Errorf("server: writing the manifest: %w", err)
		}
		if lastSavePath != "" {
			os.Remove(lastSavePath) // the manifest holds the time now
		}
		if len(live) > 0 || len(present) > 0 {
			s.logger.Info("wrote a manifest for a data directory without one (an older ohbloom's)", "file", s.man.path(), "log_segments", len(live))
		}
	} else if err := s.man.open(ms); err != nil {
		return fmt.Errorf("server: manifest %s: %w", manifestPath, err)
	} else if err := s.man.forget(missing); err != nil {
		return fmt.Errorf("server: manifest %s: %w", manifestPath, err)
	}
	if c.DisableAppendLog {
		if len(live) > 0 {
			// A DEL without the log only removes the key's file: the
			// log must not hold the key any more.
			s.oldSegments = true
			if err := s.save(false); err != nil {
				return fmt.Errorf("server: with --appendonly no, the changes the log holds are saved, and its segments removed, before the server starts; that save failed: %w", err)
			}
			s.logger.Info("the append-only log is off: the changes it held are saved and its segments removed")
		}
		return nil
	}
	var last *segmentFile
	if len(live) > 0 {
		last = &live[len(live)-1]
	}
	s.log, err = openLog(s.dir, policy, last, s.man, s.logger)
	if err != nil {
		return err
	}
	s.log.recover = func() error { return s.save(false) }
	return nil
}

// liveSegments sorts the segments (sorted by gen) into those to replay,
// those a finished save superseded, and an empty one a rotation cut short
// left past the log; any other it refuses, naming it (see the top of this
// file).
func liveSegments(ms *manifestState, manifestPath string, segs []segmentFile) (live, stale []segmentFile, spare *segmentFile, err error) {
	if ms == nil {
		for i := 1; i < len(segs); i++ {
			if segs[i].gen != segs[i-1].gen+1 {
				return nil, nil, nil, fmt.Errorf("server: log segments %s and %s are not consecutive, and no manifest says which are live (a data directory of an older ohbloom, or one whose manifest was removed): move away the ones that do not belong to it", segs[i-1].path, segs[i].path)
			}
		}
		return segs, nil, nil, nil
	}
	next := ms.first // the next live segment expected
	for i := range segs {
		seg := segs[i]
		switch {
		case seg.gen < ms.first:
			stale = append(stale, seg)
		case seg.gen <= ms.last:
			if seg.gen != next {
				return nil, nil, nil, fmt.Errorf("server: log segment %s is missing: the manifest %s lists segments %d to %d as live", segmentPath(filepath.Dir(seg.path), next), manifestPath, ms.first, ms.last)
			}
			live = append(live, seg)
			next++
		case seg.gen == ms.last+1 && spare == nil && emptySegment(seg):
			spare = &segs[i]
		default:
			return nil, nil, nil, fmt.Errorf("server: log segment %s is not part of this directory's log: the manifest %s lists segments %d to %d as live, and after them only an empty segment %d (a save that stopped while starting it) can be; move it away", seg.path, manifestPath, ms.first, ms.last, ms.last+1)
		}
	}
	if next <= ms.last {
		return nil, nil, nil, fmt.Errorf("server: log segment %s is missing: the manifest %s lists segments %d to %d as live", segmentPath(filepath.Dir(manifestPath), next), manifestPath, ms.first, ms.last)
	}
	return live, stale, spare, nil
}

// emptySegment reports whether seg is a regular file holding only its
// header: what a rotation that stopped before the manifest recorded it
// leaves.
func emptySegment(seg segmentFile) bool {
	f, err := openRegular(seg.path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [segmentHeader + 1]byte
	n, _ := io.ReadFull(f, b[:])
	return n == segmentHeader && string(b[:8]) == segmentMagic && binary.LittleEndian.Uint64(b[8:]) == seg.gen
}

// reportMissing logs every data file the manifest lists that is gone
// without a recorded removal, and returns them: its key is lost.
func (s *store) reportMissing(ms *manifestState, present map[string]bool) []string {
	var missing []string
	for name := range ms.files {
		if !present[name] && !ms.removed[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	for i, name := range missing {
		if i == 20 {
			s.logger.Error("more data files the last save wrote are missing", "more", len(missing)-i)
			break
		}
		s.logger.Error("a data file the last save wrote is missing, and no DEL or FLUSHALL recorded its removal: its key is lost unless the log creates it again (restore the file and restart to get it back)", "file", filepath.Join(s.dir, name))
	}
	return missing
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

// replayFile replays one live segment. end is where the manifest says it
// ends (-1 for the newest, or when it does not say), synced how far it was
// fsynced (0 if unknown). It reports the size the file is to be cut to,
// without cutting it: the caller cuts once every file has been read.
func (s *store) replayFile(rp *replayer, seg segmentFile, end, synced int64) (good int64, dropped bool, err error) {
	fail := func(err error) (int64, bool, error) {
		return 0, false, fmt.Errorf("server: log segment %s: %w", seg.path, err)
	}
	f, err := openRegular(seg.path)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	size := st.Size()
	var r io.Reader = f
	if end >= 0 {
		if size < end {
			return fail(fmt.Errorf("it is %d bytes, but it held %d when the log moved past it: the records from offset %d on are lost (the file was cut)", size, end, size))
		}
		r = io.LimitReader(f, end)
	}
	good, torn, err := rp.replay(bufio.NewReaderSize(r, 1<<20), seg.gen)
	if mt := (*maybeTorn)(nil); end < 0 && errors.As(err, &mt) {
		if zeros, zerr := zeroTail(f, size, mt); zerr != nil {
			return fail(zerr)
		} else if zeros {
			good, torn, err = mt.start, tornZeroCut, nil
		}
	}
	if err != nil {
		return fail(err)
	}
	if end >= 0 {
		if torn != "" {
			return fail(fmt.Errorf("%s at offset %d, before %d, where the manifest says it ends", torn, good, end))
		}
		if size > end {
			s.logger.Info("dropping the bytes after the end the manifest records for a log segment: a write the log gave up on, whose records went to the next segment", "file", seg.path, "offset", end, "bytes", size-end)
			return end, true, nil
		}
		return end, false, nil
	}
	if good < synced {
		why := "it ends"
		if torn != "" {
			why = torn
		}
		return fail(fmt.Errorf("its whole records end at offset %d (%s), but it was fsynced up to %d: the records between were cut or damaged, and are lost", good, why, synced))
	}
	if torn == "" {
		return good, false, nil
	}
	if synced > 0 {
		s.logger.Warn("dropping the torn tail of a log segment: "+torn+", past the last fsync, so never acknowledged under always: a write that a crash cut short", "file", seg.path, "offset", good, "bytes", size-good, "fsynced_to", synced)
	} else {
		s.logger.Warn("dropping the torn tail of a log segment: "+torn+"; a crash cuts a write short so, but if the file was cut by other means the records past the cut are lost too", "file", seg.path, "offset", good, "bytes", size-good)
	}
	return good, true, nil
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
// compacts the log: it rotates the log first, writes the keys, writes the
// manifest whose live log starts at the new segment, and removes the old
// segments (see the top of this file). With the log off it removes the
// segments a start left to it. A key changed during its own save stays
// dirty for the next one.
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
	saved := map[string]bool{}
	for db := range s.dbs {
		for _, name := range s.names(db) {
			saved[filepath.Base(s.path(db, name))] = true
			s.mu.RLock()
			e := s.dbs[db].keys[name]
			s.mu.RUnlock()
			if e == nil || !(e.dirty.Swap(false) || force || e.oldRecord.Load()) {
				continue
			}
			if err := s.saveKey(db, name, e); err != nil {
				e.dirty.Store(true)
				errs = append(errs, err)
			}
		}
	}
	testSaveHook("written")
	if err := s.removeStale(saved); err != nil {
		errs = append(errs, err)
	}
	if err := syncDir(s.dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	now := s.now().Unix()
	st := s.man.state()
	st.saved = now
	st.dbmap = s.databaseMap()
	if s.log != nil {
		st.first = gen // the segments before it are in the snapshot
	} else {
		st.first = st.last + 1 // no segment is live
	}
	if err := s.man.write(st); err != nil {
		return fmt.Errorf("writing the manifest: %w", err)
	}
	s.lastSave.Store(now)
	testSaveHook("synced")
	if s.log != nil {
		s.log.cleared(gen)
		return s.log.removeBefore(gen)
	}
	if s.oldSegments {
		if err := removeSegments(s.dir, st.last+1); err != nil {
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
func (s *store) saveKey(db int, name string, e *entry) error {
	lock := s.stripeOf(db, name)
	lock.Lock()
	defer lock.Unlock()
	s.mu.RLock()
	now := s.dbs[db].keys[name]
	s.mu.RUnlock()
	if now != e {
		return nil
	}
	path := s.path(db, name)
	err := writeAtomic(path, func(w io.Writer) error {
		_, err := recordTo(w, s.identOf(db), name, e)
		return err
	})
	if err != nil {
		return fmt.Errorf("saving key '%s': %w", quoteArg([]byte(name)), err)
	}
	e.onDisk = true
	e.oldRecord.Store(false)
	return nil
}

// removeDataFile removes a key's data file, recording the removal in the
// manifest first.
func (s *store) removeDataFile(db int, name string) error {
	if s.man == nil {
		return nil
	}
	return s.man.remove(s.path(db, name))
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
		if !isDataFile(name) || live[name] {
			continue
		}
		var h0 byte
		fmt.Sscanf(name[:2], "%02x", &h0)
		lock := &s.stripe[h0%stripes]
		lock.Lock()
		// No save runs beside us, and a key created since the names
		// were listed has not been saved: the file is a gone key's.
		if err := s.man.remove(filepath.Join(s.dir, name)); err != nil {
			errs = append(errs, fmt.Errorf("removing the data file of a deleted key: %w", err))
		}
		lock.Unlock()
	}
	return errors.Join(errs...)
}

// fileWrite is f.Write, through testDisk (reserve.go).
func fileWrite(f *os.File, b []byte) (int, error) {
	if d := testDisk.Load(); d != nil {
		if fit, err := d.fit(f.Name(), len(b)); fit < len(b) {
			n, werr := f.Write(b[:max(fit, 0)])
			if werr == nil {
				werr = &fs.PathError{Op: "write", Path: f.Name(), Err: err}
			}
			return n, werr
		}
	}
	return f.Write(b)
}

// writeAt is f.WriteAt at the end of the file, through testDisk.
func writeAt(f *os.File, b []byte, off int64) (int, error) {
	if d := testDisk.Load(); d != nil {
		if fit, err := d.fit(f.Name(), len(b)); fit < len(b) {
			n, werr := f.WriteAt(b[:max(fit, 0)], off)
			if werr == nil {
				werr = &fs.PathError{Op: "write", Path: f.Name(), Err: err}
			}
			return n, werr
		}
	}
	return f.WriteAt(b, off)
}

type diskWriter struct{ f *os.File }

func (w diskWriter) Write(b []byte) (int, error) { return fileWrite(w.f, b) }

// writeAtomic writes path through a temporary file in its directory,
// synced and renamed over it, as ohbloom.SaveFile does, except that the
// caller syncs the directory: a save of many keys syncs it once, not once
// a key. Its errors name path: the temporary file is gone by the time
// anyone reads them.
func writeAtomic(path string, write func(io.Writer) error) (err error) {
	if err := replaceable(path); err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return namePath(err, path)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = namePath(err, path)
		}
	}()
	w := bufio.NewWriterSize(diskWriter{tmp}, 1<<20)
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

// namePath makes an error about a temporary file an error about path, the
// file it was to become.
func namePath(err error, path string) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return fmt.Errorf("writing %s: %w", path, err)
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
// closes the log and the manifest.
func (s *store) shutdown() error {
	err := s.save(false)
	if s.log != nil {
		err = errors.Join(err, s.log.close())
	}
	if s.man != nil {
		err = errors.Join(err, s.man.close())
	}
	return err
}

// writeRefusal is the error a change gets while the log is failing or
// has no reserved space left (reserve.go), or "". DEL and FLUSHALL do not
// ask: they free space, and wait until they are durable (aof.go's await).
func (s *store) writeRefusal() string {
	if s.log == nil || !s.log.refusing() {
		return ""
	}
	return s.log.refusal()
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
