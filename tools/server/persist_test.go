package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zeebo/xxh3"
)

// Tests of persistence: the append-only log, saves, and the start.

// crashCopy copies the data directory as a crash would leave it: the
// files as they are now, with whatever the server has not yet written
// missing. The copy is a new directory; the server goes on with the old.
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		if !ent.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, ent.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// startOn runs a server on dir that saves only when told.
func startOn(t *testing.T, dir string, c Config) (*Server, *redis.Client) {
	t.Helper()
	c.DataDir = dir
	if c.SaveInterval == 0 {
		c.SaveInterval = -1
	}
	s, addr := start(t, c)
	return s, client(t, addr)
}

func segments(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "appendonly-*.ohbl"))
	slices.Sort(files)
	return files
}

// state is what a test compares between a server and its restart.
func state(t *testing.T, rdb *redis.Client, bfKeys, cfKeys []string, items []any) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	keys, _ := rdb.Keys(ctx, "*").Result()
	slices.Sort(keys)
	fmt.Fprintf(&b, "keys %q\n", keys)
	for _, k := range bfKeys {
		info, err := rdb.BFInfo(ctx, k).Result()
		found, _ := rdb.BFMExists(ctx, k, items...).Result()
		n := 0
		for _, f := range found {
			if f {
				n++
			}
		}
		fmt.Fprintf(&b, "%s: %+v %v, %d of %d found\n", k, info, err, n, len(items))
	}
	for _, k := range cfKeys {
		info, err := rdb.CFInfo(ctx, k).Result()
		fmt.Fprintf(&b, "%s: items %d deleted %d %v;", k, info.NumItemsInserted, info.NumItemsDeleted, err)
		for _, it := range items[:10] {
			c, _ := rdb.CFCount(ctx, k, it).Result()
			fmt.Fprintf(&b, " %d", c)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func numbered(prefix string, n int) []any {
	items := make([]any, n)
	for i := range items {
		items[i] = prefix + strconv.Itoa(i)
	}
	return items
}

// Every kind of change, acknowledged under always and never saved, comes
// back from the log alone; then again from a save and the log after it.
func TestLogReplaysEveryChange(t *testing.T) {
	setScanDumpChunk(t, 2048)
	dir := t.TempDir()
	_, rdb := startOn(t, dir, Config{AppendFsync: "always"})
	ctx := context.Background()
	items := numbered("item", 3000)
	change := func(round string) {
		t.Helper()
		for _, err := range []error{
			rdb.BFReserve(ctx, "bf"+round, 0.01, 500).Err(),
			rdb.BFMAdd(ctx, "bf"+round, items...).Err(),
			rdb.BFReserveNonScaling(ctx, "fixed"+round, 0.01, 10).Err(),
			rdb.BFAdd(ctx, "fixed"+round, items[0]).Err(),
			rdb.BFAdd(ctx, "created-by-add"+round, items[1]).Err(),
			rdb.CFReserve(ctx, "cf"+round, 1000).Err(),
			rdb.CFInsert(ctx, "cf"+round, nil, items[:10]...).Err(),
			rdb.CFAdd(ctx, "cf"+round, items[0]).Err(),
			rdb.CFAdd(ctx, "cf"+round, items[0]).Err(),
			rdb.CFDel(ctx, "cf"+round, items[1]).Err(),
			rdb.CFAdd(ctx, "gone"+round, "x").Err(),
			rdb.Del(ctx, "gone"+round).Err(),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		// A LOADCHUNK'd key, and one of the same name deleted and
		// created again.
		for iter := int64(0); ; {
			d, err := rdb.BFScanDump(ctx, "bf"+round, iter).Result()
			if err != nil {
				t.Fatal(err)
			}
			if d.Iter == 0 {
				break
			}
			if err := rdb.BFLoadChunk(ctx, "loaded"+round, d.Iter, d.Data).Err(); err != nil {
				t.Fatal(err)
			}
			iter = d.Iter
		}
		rdb.BFAdd(ctx, "again"+round, "first life")
		rdb.Del(ctx, "again"+round)
		rdb.CFAdd(ctx, "again"+round, items[2])
	}
	bfKeys := []string{"bf1", "fixed1", "created-by-add1", "loaded1"}
	cfKeys := []string{"cf1", "again1"}
	change("1")
	want := state(t, rdb, bfKeys, cfKeys, items)
	if files, _ := filepath.Glob(filepath.Join(dir, "*.ohbs")); len(files) != 0 {
		t.Fatalf("saved files %v: the test means to restore from the log alone", files)
	}
	_, again := startOn(t, crashCopy(t, dir), Config{})
	if got := state(t, again, bfKeys, cfKeys, items); got != want {
		t.Fatalf("from the log alone:\n%s\nwant\n%s", got, want)
	}

	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	change("2")
	rdb.FlushAll(ctx)
	change("3")
	bfKeys = append(bfKeys, "bf3", "fixed3", "created-by-add3", "loaded3")
	cfKeys = append(cfKeys, "cf3", "again3")
	want = state(t, rdb, bfKeys, cfKeys, items)
	_, again = startOn(t, crashCopy(t, dir), Config{})
	if got := state(t, again, bfKeys, cfKeys, items); got != want {
		t.Fatalf("from a save and the log:\n%s\nwant\n%s", got, want)
	}
}

// A CF add or delete replayed over a snapshot that holds it would count
// twice. Changes are acknowledged at every step of a save, and a crash
// there (a copy of the directory) restores the exact counts.
func TestSnapshotAndLogAgreeAtEveryStepOfASave(t *testing.T) {
	dir := t.TempDir()
	srv, rdb := startOn(t, dir, Config{AppendFsync: "always"})
	ctx := context.Background()
	adds, dels, bumps := 0, 0, 0
	// Each bump adds its own item three times and deletes it once: every
	// item counts 2 (far from the counters' 15).
	bump := func() {
		bumps++
		for range 3 {
			if err := rdb.CFAdd(ctx, "c", bumps).Err(); err != nil {
				t.Fatal(err)
			}
			adds++
		}
		if ok, err := rdb.CFDel(ctx, "c", bumps).Result(); err != nil || !ok {
			t.Fatalf("CF.DEL %v %v", ok, err)
		}
		dels++
		if err := rdb.BFAdd(ctx, "b", bumps).Err(); err != nil {
			t.Fatal(err)
		}
	}
	type crash struct {
		step              string
		dir               string
		adds, dels, bumps int
	}
	var crashes []crash
	snap := func(step string) {
		bump()
		crashes = append(crashes, crash{step, crashCopy(t, dir), adds, dels, bumps})
		bump()
	}
	snap("before the first save")
	saveHook = snap
	defer func() { saveHook = nil }()
	// The saves run on the test's goroutine, as the scheduled save runs
	// on its own: the hook's commands are then served while a save is
	// under way. (SAVE, like Redis's, would run on the event loop and
	// hold it.)
	for range 2 {
		if err := srv.Save(); err != nil {
			t.Fatal(err)
		}
	}
	saveHook = nil
	snap("after the saves")
	for _, c := range crashes {
		_, again := startOn(t, c.dir, Config{})
		info, err := again.CFInfo(ctx, "c").Result()
		if err != nil || int(info.NumItemsInserted) != c.adds-c.dels || int(info.NumItemsDeleted) != c.dels {
			t.Fatalf("crash at %q: CF.INFO %+v %v; want %d added, %d deleted", c.step, info, err, c.adds, c.dels)
		}
		for i := 1; i <= c.bumps; i++ {
			if n, _ := again.CFCount(ctx, "c", i).Result(); n != 2 {
				t.Fatalf("crash at %q: CF.COUNT of item %d is %d, want 2", c.step, i, n)
			}
			if ok, _ := again.BFExists(ctx, "b", i).Result(); !ok {
				t.Fatalf("crash at %q: BF item %d lost", c.step, i)
			}
		}
	}
	if got := segments(t, dir); len(got) != 1 {
		t.Fatalf("after saves, segments %v: want only the newest", got)
	}
}

// A crash leaves the last record of the log cut short, unwritten, or cut
// by zeros (the blocks a power loss left unwritten): the start drops it,
// saying how many bytes from where, and truncates the file. Records the
// log fsynced (under always, every acknowledged one) are never dropped:
// a segment cut or damaged before the manifest's fsync mark, and damage
// anywhere else, stop the start, naming the file and changing nothing.
func TestTornTailAndDamage(t *testing.T) {
	dir := t.TempDir()
	_, rdb := startOn(t, dir, Config{AppendFsync: "always"})
	ctx := context.Background()
	for _, item := range []string{"a", "b", "c"} {
		if err := rdb.BFAdd(ctx, "k", item).Err(); err != nil {
			t.Fatal(err)
		}
	}
	base := crashCopy(t, dir)
	seg := segments(t, base)[0]
	good, _ := os.ReadFile(seg)
	// The records: create k, then one add each, all fsynced.
	var ends []int
	for at := segmentHeader; at < len(good); {
		at += 8 + int(binary.LittleEndian.Uint32(good[at:])) + 8
		ends = append(ends, at)
	}
	if len(ends) != 4 || ends[3] != len(good) {
		t.Fatalf("record ends %v in %d bytes", ends, len(good))
	}
	if ms, err := readManifest(filepath.Join(base, manifestFile)); err != nil || ms.syncedGen != 1 || ms.syncedSize != int64(len(good)) {
		t.Fatalf("the manifest's fsync mark: %+v %v; want segment 1 at %d", ms, err, len(good))
	}
	lastRecord := good[ends[2]:]
	// A record written past the fsync mark, whose checksum fails.
	unsynced := withRecord(nil, recBloomAdd, "k", binary.LittleEndian.AppendUint64(nil, 7))
	unsynced[len(unsynced)-1] ^= 1
	zeros := make([]byte, 4096)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, c := range []struct {
		name string
		data []byte
		why  string
	}{
		{"a record's first bytes", cat(good, lastRecord[:5]), tornCut},
		{"a record without its checksum", cat(good, lastRecord[:len(lastRecord)-8]), tornCut},
		{"a last record whose checksum fails", cat(good, unsynced), tornChecksum},
		{"zeros after the last record", cat(good, zeros), tornZeros},
		{"a record cut by zeros", cat(good, lastRecord[:len(lastRecord)-5], zeros), tornZeroCut},
		{"a record's length cut by zeros", cat(good, lastRecord[:3], zeros), tornZeroCut},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := crashCopy(t, base)
			path := filepath.Join(d, filepath.Base(seg))
			os.WriteFile(path, c.data, 0o644)
			var logged syncBuffer
			_, again := startOn(t, d, Config{AppendFsync: "always", Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			for _, item := range []string{"a", "b", "c"} {
				if ok, _ := again.BFExists(ctx, "k", item).Result(); !ok {
					t.Fatalf("%s lost", item)
				}
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, good) {
				t.Fatalf("segment of %d bytes after the start, want its first %d", len(got), len(good))
			}
			for _, want := range []string{c.why, fmt.Sprintf("offset=%d bytes=%d", len(good), len(c.data)-len(good)), "past the last fsync"} {
				if !strings.Contains(logged.String(), want) {
					t.Fatalf("the start logged %q; want it to say %q", logged.String(), want)
				}
			}
			// The torn tail is gone: what the server appends next is
			// read back after another restart.
			if err := again.BFAdd(ctx, "k", "after").Err(); err != nil {
				t.Fatal(err)
			}
			_, third := startOn(t, crashCopy(t, d), Config{})
			if ok, _ := third.BFExists(ctx, "k", "after").Result(); !ok {
				t.Fatal("an add after a truncated tail was lost")
			}
		})
	}
	damaged := func(at int) []byte { b := bytes.Clone(good); b[at] ^= 0x10; return b }
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"a flipped bit in the first record", damaged(segmentHeader + 12)},
		{"a damaged length", damaged(ends[0] + 1)},
		{"a checksum failing before the last record", damaged(ends[1] - 2)},
		{"the fsynced last record's checksum failing", damaged(len(good) - 3)},
		{"a cut at a record boundary before the fsync mark", good[:ends[1]]},
		{"a cut inside a fsynced record", good[:ends[1]+5]},
		{"zeros from inside a fsynced record", cat(good[:ends[2]+9], zeros)},
		{"a foreign header", append([]byte("not a log segment!"), good[segmentHeader:]...)},
		{"a truncated header", good[:10]},
		{"a record of an unknown kind", withRecord(good, 99, "k", nil)},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := crashCopy(t, base)
			path := filepath.Join(d, filepath.Base(seg))
			os.WriteFile(path, c.data, 0o644)
			_, err := New(Config{DataDir: d, Logger: discard()})
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("%v, want an error naming %s", err, path)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, c.data) {
				t.Fatal("the damaged segment was changed")
			}
		})
	}
	// Without a manifest (a directory of an older ohbloom) nothing says
	// how far the log was fsynced: a cut is dropped as a torn tail, and
	// the line says what that may mean.
	t.Run("no manifest", func(t *testing.T) {
		d := crashCopy(t, base)
		os.Remove(filepath.Join(d, manifestFile))
		path := filepath.Join(d, filepath.Base(seg))
		os.WriteFile(path, good[:ends[2]+5], 0o644)
		var logged syncBuffer
		_, again := startOn(t, d, Config{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
		if ok, _ := again.BFExists(ctx, "k", "b").Result(); !ok {
			t.Fatal("b lost")
		}
		if !strings.Contains(logged.String(), "the records past the cut are lost too") || !strings.Contains(logged.String(), fmt.Sprintf("offset=%d bytes=5", ends[2])) {
			t.Fatalf("the start logged %q", logged.String())
		}
	})
}

// A segment the log moved past ends where the manifest says: one shorter
// is refused, naming it; bytes past that end (a write the log gave up on,
// whose records it wrote again in the next segment) are dropped.
func TestSegmentEndsRecordedAtRotation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, rdb := startOn(t, dir, Config{AppendFsync: "always"})
	rdb.BFMAdd(ctx, "k", "a", "b", "c")
	rdb.BFAdd(ctx, "k", "d")
	var crashed string
	saveHook = func(step string) {
		if step == "rotated" {
			rdb.BFAdd(ctx, "k", "e") // in segment 2
			crashed = crashCopy(t, dir)
		}
	}
	defer func() { saveHook = nil }()
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	saveHook = nil
	old := segmentPath(crashed, 1)
	data, _ := os.ReadFile(old)

	cut := crashCopy(t, crashed)
	os.WriteFile(segmentPath(cut, 1), data[:len(data)-9], 0o644)
	_, err := New(Config{DataDir: cut, Logger: discard()})
	if err == nil || !strings.Contains(err.Error(), segmentPath(cut, 1)) || !strings.Contains(err.Error(), "when the log moved past it") {
		t.Fatalf("a cut segment before the last: %v", err)
	}

	extra := crashCopy(t, crashed)
	os.WriteFile(segmentPath(extra, 1), append(bytes.Clone(data), lastRecordOf(data)[:7]...), 0o644)
	_, again := startOn(t, extra, Config{})
	for _, item := range []string{"a", "d", "e"} {
		if ok, _ := again.BFExists(ctx, "k", item).Result(); !ok {
			t.Fatalf("%s lost", item)
		}
	}
	if got, _ := os.ReadFile(segmentPath(extra, 1)); !bytes.Equal(got, data) {
		t.Fatalf("segment 1 is %d bytes after the start, want the %d the manifest records", len(got), len(data))
	}
}

// lastRecordOf returns the last record of a segment's bytes.
func lastRecordOf(seg []byte) []byte {
	at, last := segmentHeader, segmentHeader
	for at < len(seg) {
		last = at
		at += 8 + int(binary.LittleEndian.Uint32(seg[at:])) + 8
	}
	return seg[last:]
}

// A data file the last save wrote that is gone without a DEL or FLUSHALL
// is reported, by name: its key is lost. Files DEL and FLUSHALL removed
// are not.
func TestMissingDataFileIsReported(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []string{"log", "no log"} {
		t.Run(policy, func(t *testing.T) {
			cfg := Config{AppendFsync: "always", DisableAppendLog: policy == "no log"}
			dir := t.TempDir()
			s, rdb := startOn(t, dir, cfg)
			for _, k := range []string{"lost", "deleted", "kept", "flushed"} {
				rdb.BFAdd(ctx, k, "x")
			}
			if err := s.Save(); err != nil {
				t.Fatal(err)
			}
			if n, err := rdb.Del(ctx, "deleted").Result(); n != 1 || err != nil {
				t.Fatalf("DEL %d %v", n, err)
			}
			d := crashCopy(t, dir)
			lost := s.store.path(0, "lost")
			os.Remove(filepath.Join(d, filepath.Base(lost)))
			var logged syncBuffer
			cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
			_, again := startOn(t, d, cfg)
			if n, _ := again.Exists(ctx, "lost", "deleted", "kept", "flushed").Result(); n != 2 {
				t.Fatalf("EXISTS %d, want kept and flushed", n)
			}
			if !strings.Contains(logged.String(), "missing") || !strings.Contains(logged.String(), filepath.Base(lost)) {
				t.Fatalf("the start logged %q; want the missing file named", logged.String())
			}
			if strings.Count(logged.String(), "missing") != 1 {
				t.Fatalf("the start logged %q; want only the lost file reported", logged.String())
			}
			// FLUSHALL's removals are recorded too.
			if err := again.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			var third syncBuffer
			cfg.Logger = slog.New(slog.NewTextHandler(&third, nil))
			startOn(t, crashCopy(t, d), cfg)
			if strings.Contains(third.String(), "missing") {
				t.Fatalf("after FLUSHALL the start logged %q", third.String())
			}
		})
	}
}

// Turning the log off on a directory whose log holds keys: a DEL and a
// FLUSHALL acknowledged without the log stay done after kill -9 and a
// restart, with or without the log (the start without it saved the log's
// keys and removed its segments before it took a command).
func TestAppendOnlyNoKeepsDeletesOfLoggedKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, rdb := startOn(t, dir, Config{AppendFsync: "always"})
	for _, k := range []string{"a", "b", "c"} {
		if err := rdb.BFAdd(ctx, k, "x").Err(); err != nil {
			t.Fatal(err)
		}
	}
	off := crashCopy(t, dir) // kill -9: the keys are in the log only
	_, noLog := startOn(t, off, Config{DisableAppendLog: true})
	if n, _ := noLog.Exists(ctx, "a", "b", "c").Result(); n != 3 {
		t.Fatalf("EXISTS %d after the start without the log", n)
	}
	if segs := segments(t, off); len(segs) != 0 {
		t.Fatalf("segments %v left after a start without the log", segs)
	}
	if n, err := noLog.Del(ctx, "a").Result(); n != 1 || err != nil {
		t.Fatalf("DEL %d %v", n, err)
	}
	afterDel := crashCopy(t, off)
	if err := noLog.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	afterFlush := crashCopy(t, off)
	for _, cfg := range []Config{{DisableAppendLog: true}, {AppendFsync: "always"}} {
		_, r := startOn(t, crashCopy(t, afterDel), cfg)
		if n, _ := r.Exists(ctx, "a").Result(); n != 0 {
			t.Fatalf("a DEL acknowledged without the log is undone after a restart (log off: %v)", cfg.DisableAppendLog)
		}
		if n, _ := r.Exists(ctx, "b", "c").Result(); n != 2 {
			t.Fatalf("EXISTS b c = %d after the DEL of a", n)
		}
		_, r = startOn(t, crashCopy(t, afterFlush), cfg)
		if n, _ := r.DBSize(ctx).Result(); n != 0 {
			t.Fatalf("a FLUSHALL acknowledged without the log is undone after a restart: %d keys (log off: %v)", n, cfg.DisableAppendLog)
		}
	}
}

// fakeDisk stands for a disk of a fixed capacity under a data directory:
// through testDisk, a write fits in what the directory's files leave
// free, so that removing a file frees space as it would, and the blocks
// reserved past a file's end (fallocate with FALLOC_FL_KEEP_SIZE) are
// taken from the free space, and written into without taking more.
type fakeDisk struct {
	dir      string
	capacity atomic.Int64
	// noReserve makes it a file system without fallocate.
	noReserve bool

	mu       sync.Mutex
	reserved map[string]int64 // by file name: where its reserved blocks end
}

func (d *fakeDisk) used() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.usedLocked()
}

func (d *fakeDisk) usedLocked() int64 {
	ents, _ := os.ReadDir(d.dir)
	var n int64
	for _, ent := range ents {
		if info, err := ent.Info(); err == nil {
			n += max(info.Size(), d.reserved[ent.Name()])
		}
	}
	return n
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// leave makes the disk full but for free bytes.
func (d *fakeDisk) leave(free int64) { d.capacity.Store(d.used() + free) }

// useDisk puts dir on a fakeDisk with free bytes free, until the test ends.
func useDisk(t *testing.T, dir string, free int64) *fakeDisk {
	d := &fakeDisk{dir: dir, reserved: map[string]int64{}}
	d.leave(free)
	hook := &diskHook{
		fit: func(path string, n int) (int, error) {
			d.mu.Lock()
			defer d.mu.Unlock()
			size := fileSize(path)
			room := max(d.reserved[filepath.Base(path)]-size, 0) + max(d.capacity.Load()-d.usedLocked(), 0)
			if room < int64(n) {
				return int(room), syscall.ENOSPC
			}
			return n, nil
		},
		reserve: func(path string, end int64) error {
			if d.noReserve {
				return errNoReserve
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			name := filepath.Base(path)
			more := end - max(fileSize(path), d.reserved[name])
			if more > d.capacity.Load()-d.usedLocked() {
				return syscall.ENOSPC
			}
			d.reserved[name] = max(d.reserved[name], end)
			return nil
		},
		release: func(path string) {
			d.mu.Lock()
			defer d.mu.Unlock()
			delete(d.reserved, filepath.Base(path))
		},
	}
	testDisk.Store(hook)
	t.Cleanup(func() { testDisk.Store(nil) })
	return d
}

// smallReserve makes the log reserve little space ahead, so that a test
// fills it quickly, until the test ends.
func smallReserve(t *testing.T) {
	step, keep, grow := reserveStep, reserveKeep, minGrow
	reserveStep, reserveKeep, minGrow = 256<<10, 16<<10, 4<<10
	t.Cleanup(func() { reserveStep, reserveKeep, minGrow = step, keep, grow })
}

// A full disk: every change acknowledged before the first error survives
// kill -9 once the log can be written again, without a save, and DEL and
// FLUSHALL, which free the space, work on the full disk. Error texts name
// files that exist.
func TestFullDisk(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []string{"everysec", "always"} {
		for _, how := range []string{"DEL", "FLUSHALL", "space returns", "a save first", "kill -9 while full"} {
			t.Run(policy+"/"+how, func(t *testing.T) {
				dir := t.TempDir()
				smallReserve(t)
				disk := useDisk(t, dir, 1<<30)
				s, rdb := startOn(t, dir, Config{AppendFsync: policy})
				// A key whose file a DEL frees.
				if err := rdb.BFReserve(ctx, "big", 0.0001, 100_000).Err(); err != nil {
					t.Fatal(err)
				}
				if err := s.Save(); err != nil {
					t.Fatal(err)
				}
				disk.leave(16 << 10)
				var acked []any
				var misconf string
				for i := 0; misconf == ""; i++ {
					items := numbered(fmt.Sprintf("b%d-", i), 50)
					err := rdb.BFMAdd(ctx, "k", items...).Err()
					switch {
					case err == nil:
						acked = append(acked, items...)
					case strings.HasPrefix(err.Error(), "MISCONF"):
						misconf = err.Error()
					case policy == "always":
						// The write failed under it: disconnected
						// unanswered.
					default:
						t.Fatal(err)
					}
					if i%10 == 9 {
						s.store.log.flush(true) // what the flusher does every second
					}
				}
				if len(acked) == 0 {
					t.Fatal("nothing acknowledged before the disk filled")
				}
				t.Logf("MISCONF %q acked %d", misconf, len(acked))
				if strings.Contains(misconf, ".tmp-") || !strings.Contains(misconf, segmentPath(dir, 2)) {
					t.Fatalf("MISCONF %q: want it to name the segment", misconf)
				}
				check := func(crashed string, wantItems bool, wantKeys int64) *redis.Client {
					t.Helper()
					testDisk.Store(nil)
					_, again := startOn(t, crashed, Config{})
					if wantItems {
						found, err := again.BFMExists(ctx, "k", acked...).Result()
						if err != nil {
							t.Fatal(err)
						}
						for i, ok := range found {
							if !ok {
								t.Fatalf("%v, acknowledged before the disk was full, is lost after kill -9", acked[i])
							}
						}
					}
					if n, _ := again.DBSize(ctx).Result(); n != wantKeys {
						t.Fatalf("%d keys after kill -9, want %d", n, wantKeys)
					}
					return again
				}
				switch how {
				case "DEL":
					if n, err := rdb.Del(ctx, "big").Result(); n != 1 || err != nil {
						t.Fatalf("DEL on a full disk: %d %v", n, err)
					}
					check(crashCopy(t, dir), true, 1)
				case "FLUSHALL":
					if err := rdb.FlushAll(ctx).Err(); err != nil {
						t.Fatalf("FLUSHALL on a full disk: %v", err)
					}
					check(crashCopy(t, dir), false, 0)
				case "space returns":
					disk.capacity.Add(1 << 20)
					if err := s.store.log.flush(true); err != nil { // the flusher's next try
						t.Fatalf("the log, tried again with room: %v", err)
					}
					check(crashCopy(t, dir), true, 2)
				case "a save first":
					err := rdb.Save(ctx).Err()
					if err == nil || strings.Contains(err.Error(), ".tmp-") || !strings.Contains(err.Error(), "no space left on device") {
						t.Fatalf("SAVE on a full disk: %v; want an error naming no temporary file", err)
					}
					disk.capacity.Add(1 << 20)
					if err := s.store.log.flush(true); err != nil {
						t.Fatalf("the log, tried again with room: %v", err)
					}
					check(crashCopy(t, dir), true, 2)
				case "kill -9 while full":
					// The flusher's next second, the disk still full,
					// then kill -9 before it has room.
					s.store.log.flush(true)
					check(crashCopy(t, dir), true, 2)
					disk.capacity.Add(1 << 20)
					if err := s.store.log.flush(true); err != nil {
						t.Fatalf("the log, tried again with room: %v", err)
					}
				}
				if info, _ := rdb.Info(ctx, "persistence").Result(); !strings.Contains(info, "aof_last_write_status:ok") {
					t.Fatalf("INFO after the disk had room again: %q", info)
				}
				if err := rdb.BFAdd(ctx, "k", "after").Err(); err != nil {
					t.Fatal(err)
				}
				s.store.log.flush(true)
				again := check(crashCopy(t, dir), how != "FLUSHALL", map[string]int64{"FLUSHALL": 1, "DEL": 1}[how]+map[bool]int64{true: 2}[how == "space returns" || how == "a save first" || how == "kill -9 while full"])
				if ok, _ := again.BFExists(ctx, "k", "after").Result(); !ok {
					t.Fatal("an add after the recovery is lost")
				}
			})
		}
	}
}

// withRecord appends a well-formed record (valid length and checksum) of
// any kind to a segment's bytes.
func withRecord(seg []byte, kind byte, key string, rest []byte) []byte {
	body := []byte{kind}
	body = binary.AppendUvarint(body, uint64(len(key)))
	body = append(body, key...)
	body = append(body, rest...)
	out := bytes.Clone(seg)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
	out = binary.LittleEndian.AppendUint32(out, ^uint32(len(body)))
	out = append(out, body...)
	return binary.LittleEndian.AppendUint64(out, xxh3Hash(body))
}

// makeUnremovable makes the files of dir impossible to remove or create,
// for root too (chattr +i), and undoes it at cleanup.
func makeUnremovable(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		os.Chmod(dir, 0o555)
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("running as root and chattr +i fails (%v: %s): no way to make a file unremovable here", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
	probe := filepath.Join(dir, "probe")
	if f, err := os.Create(probe); err == nil {
		f.Close()
		os.Remove(probe)
		t.Skip("the directory stays writable")
	}
}

// DEL's reply is what survives a restart: with the log, the deletion is
// its record even when the file cannot be removed; without it, the key is
// kept and the reply is an error.
func TestDelWhenTheFileCannotBeRemoved(t *testing.T) {
	ctx := context.Background()
	t.Run("log", func(t *testing.T) {
		dir := t.TempDir()
		s, rdb := startOn(t, dir, Config{AppendFsync: "always"})
		rdb.BFAdd(ctx, "k", "v")
		rdb.BFAdd(ctx, "kept", "v")
		if err := s.Save(); err != nil {
			t.Fatal(err)
		}
		makeUnremovable(t, dir)
		if n, err := rdb.Del(ctx, "k").Result(); err != nil || n != 1 {
			t.Fatalf("DEL: %d %v", n, err)
		}
		_, again := startOn(t, crashCopy(t, dir), Config{})
		if n, _ := again.Exists(ctx, "k", "kept").Result(); n != 1 {
			t.Fatalf("after DEL replied 1, EXISTS k kept = %d after a restart, want 1 (kept only)", n)
		}
	})
	t.Run("no log", func(t *testing.T) {
		dir := t.TempDir()
		s, rdb := startOn(t, dir, Config{DisableAppendLog: true})
		rdb.BFAdd(ctx, "k", "v")
		rdb.BFAdd(ctx, "never saved", "v")
		if err := s.Save(); err != nil {
			t.Fatal(err)
		}
		rdb.BFAdd(ctx, "never saved", "w") // no file to remove
		rdb.Del(ctx, "never saved")
		makeUnremovable(t, dir)
		wantErr(t, rdb.Del(ctx, "k").Err(), "could not remove the data file of key 'k' (the key is kept)")
		if n, _ := rdb.Exists(ctx, "k").Result(); n != 1 {
			t.Fatal("DEL failed and the key is gone anyway")
		}
		wantErr(t, rdb.FlushAll(ctx).Err(), "could not remove")
		_, again := startOn(t, crashCopy(t, dir), Config{DisableAppendLog: true})
		if ok, _ := again.BFExists(ctx, "k", "v").Result(); !ok {
			t.Fatal("the key a failed DEL kept is not there after a restart")
		}
	})
}

// A key that LOADCHUNK creates is one a restart restores: keys over the
// limit are refused as everywhere, and a key at the limit comes back.
func TestLoadChunkUnderAnyKeyLeavesAStartableDirectory(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"log", Config{AppendFsync: "always"}}, {"no log", Config{DisableAppendLog: true}}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s, rdb := startOn(t, dir, c.cfg)
			rdb.BFMAdd(ctx, "src", "a", "b", "c")
			d, err := rdb.BFScanDump(ctx, "src", 0).Result()
			if err != nil {
				t.Fatal(err)
			}
			huge := strings.Repeat("k", 100_000)
			wantErr(t, rdb.BFLoadChunk(ctx, huge, d.Iter, d.Data).Err(), errKeyTooLong)
			wantErr(t, rdb.CFLoadChunk(ctx, huge, d.Iter, d.Data).Err(), errKeyTooLong)
			wantErr(t, rdb.BFAdd(ctx, huge, "x").Err(), errKeyTooLong)
			longest := strings.Repeat("k", maxKeyBytes)
			if err := rdb.BFLoadChunk(ctx, longest, d.Iter, d.Data).Err(); err != nil {
				t.Fatal(err)
			}
			if n, _ := rdb.DBSize(ctx).Result(); n != 2 {
				t.Fatalf("DBSIZE %d", n)
			}
			if c.cfg.DisableAppendLog {
				if err := s.Save(); err != nil {
					t.Fatal(err)
				}
			}
			_, again := startOn(t, crashCopy(t, dir), c.cfg)
			if ok, err := again.BFExists(ctx, longest, "b").Result(); err != nil || !ok {
				t.Fatalf("the loaded key after a restart: %v %v", ok, err)
			}
		})
	}
}

// Saves leave no temporary files behind, but a crash in one does: the
// next start removes ours, by name, and nothing else.
func TestStartRemovesTemporaryFilesOfInterruptedSaves(t *testing.T) {
	dir := t.TempDir()
	ours := []string{
		".0123456789abcdef0123456789abcdef.ohbs.tmp-123456",
		".appendonly-0000000000000002.ohbl.tmp-99",
		"." + lastSaveFile + ".tmp-7",
	}
	theirs := []string{".notes.tmp-1", "backup.ohbs.tmp-3", ".0123.ohbs.tmp-1"}
	for _, name := range append(slices.Clone(ours), theirs...) {
		os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644)
	}
	startOn(t, dir, Config{})
	for _, name := range ours {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", name, err)
		}
	}
	for _, name := range theirs {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s, not ours, removed: %v", name, err)
		}
	}
}

// A FIFO (or any file that is not regular) named like a data file would
// block the start on its open: it is refused, by name, unopened.
func TestNonRegularFilesAreRefused(t *testing.T) {
	for _, name := range []string{"0123456789abcdef0123456789abcdef.ohbs", "appendonly-0000000000000001.ohbl", lastSaveFile, manifestFile} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			if err := mkfifo(path); err != nil {
				t.Skip("no FIFOs here:", err)
			}
			done := make(chan error, 1)
			go func() {
				s, err := New(Config{DataDir: dir, Logger: discard()})
				if err == nil {
					s.Shutdown(context.Background())
				}
				done <- err
			}()
			select {
			case err := <-done:
				if name == lastSaveFile {
					if err != nil {
						t.Fatalf("a FIFO in place of the LASTSAVE file: %v", err)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "named pipe") {
					t.Fatalf("%v, want an error naming %s as a named pipe", err, path)
				}
			case <-time.After(time.Minute): // only a hang ends here
				w, _ := os.OpenFile(path, os.O_WRONLY, 0) // unblock the open
				w.Close()
				t.Fatal("the start blocked on a FIFO")
			}
		})
	}
}

// LASTSAVE after a restart is the time of the last save on disk, not of
// the start.
func TestLastSaveAfterRestart(t *testing.T) {
	dir := t.TempDir()
	past := time.Date(2001, 9, 9, 1, 46, 40, 0, time.UTC)
	_, addr := startWithClock(t, Config{DataDir: dir, SaveInterval: -1}, func() time.Time { return past })
	rdb := client(t, addr)
	ctx := context.Background()
	if t0, _ := rdb.LastSave(ctx).Result(); t0 != 0 {
		t.Fatalf("LASTSAVE %d before any save", t0)
	}
	rdb.BFAdd(ctx, "k", "v")
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := rdb.LastSave(ctx).Result(); got != past.Unix() {
		t.Fatalf("LASTSAVE %d, want %d", got, past.Unix())
	}
	_, again := startOn(t, crashCopy(t, dir), Config{})
	if got, _ := again.LastSave(ctx).Result(); got != past.Unix() {
		t.Fatalf("LASTSAVE after a restart %d, want the save's %d", got, past.Unix())
	}
}

// CF.DEL of an item added many times: as many deletes as adds succeed,
// then none; the filter grew for the copies, and the deletes compacted it
// back (RedisBloom's numbers, as the dup-counts golden file shows at
// scale); other items are untouched.
func TestCFDelAsManyAsAdded(t *testing.T) {
	_, addr := start(t, Config{})
	rdb := client(t, addr)
	ctx := context.Background()
	rdb.CFAdd(ctx, "c", "y")
	for range 20 {
		rdb.CFAdd(ctx, "c", "x")
	}
	if info, _ := rdb.CFInfo(ctx, "c").Result(); info.NumFilters < 2 {
		t.Fatalf("CF.INFO %+v: 20 copies of one item should have grown the filter", info)
	}
	var replies []bool
	for range 25 {
		ok, err := rdb.CFDel(ctx, "c", "x").Result()
		if err != nil {
			t.Fatal(err)
		}
		replies = append(replies, ok)
	}
	for i, ok := range replies {
		if ok != (i < 20) {
			t.Fatalf("CF.DEL replies %v: want 20 deletes, then none", replies)
		}
	}
	info, _ := rdb.CFInfo(ctx, "c").Result()
	if info.NumItemsInserted != 1 || info.NumFilters != 1 {
		t.Fatalf("CF.INFO %+v, want 1 item in 1 filter after compaction", info)
	}
	if n, _ := rdb.CFCount(ctx, "c", "y").Result(); n != 1 {
		t.Fatalf("CF.COUNT of y %d", n)
	}
}

// While the log cannot be written, changes are refused (under always, the
// client whose change was not made durable gets no reply; under everysec
// it was acknowledged, and is kept); a DEL that can free nothing is not
// acknowledged; once the disk has room the flusher's next try writes what
// waited, and the log works again without a save. The disk is full for
// saves too, so that the flusher's recovery save cannot end the failure
// before the test looks.
func TestLogWriteFailure(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []string{"always", "everysec"} {
		t.Run(policy, func(t *testing.T) {
			dir := t.TempDir()
			// A file system without fallocate: the log reserves nothing,
			// and its writes fail on the full disk.
			disk := useDisk(t, dir, 1<<30)
			disk.noReserve = true
			s, rdb := startOn(t, dir, Config{AppendFsync: policy})
			if err := rdb.BFAdd(ctx, "k", "before").Err(); err != nil {
				t.Fatal(err)
			}
			rdb.BFAdd(ctx, "gone", "x")
			s.store.log.flush(true)
			disk.leave(0)
			err := rdb.BFAdd(ctx, "k", "during").Err()
			if policy == "always" {
				if err == nil || strings.HasPrefix(err.Error(), "ERR") {
					t.Fatalf("a change whose record failed got a reply: %v", err)
				}
			} else if err != nil {
				t.Fatal(err) // acknowledged, then the flusher fails
			}
			s.store.log.flush(true)
			wantErr(t, rdb.BFAdd(ctx, "k", "refused").Err(), "MISCONF")
			if info, _ := rdb.Info(ctx, "persistence").Result(); !strings.Contains(info, "aof_last_write_status:err") {
				t.Fatalf("INFO while failing: %q", info)
			}
			if ok, _ := rdb.BFExists(ctx, "k", "before").Result(); !ok {
				t.Fatal("reads fail too")
			}
			if n, err := rdb.Del(ctx, "gone").Result(); err == nil {
				t.Fatalf("a DEL that could not be made durable replied %d", n)
			}
			disk.capacity.Add(1 << 20)
			if err := s.store.log.flush(true); err != nil { // the flusher's next try
				t.Fatal(err)
			}
			if err := rdb.BFAdd(ctx, "k", "after").Err(); err != nil {
				t.Fatal(err)
			}
			s.store.log.flush(true) // what the flusher does within a second
			testDisk.Store(nil)
			_, again := startOn(t, crashCopy(t, dir), Config{})
			want := []string{"before", "after"}
			if policy == "everysec" {
				want = append(want, "during")
			}
			for _, item := range want {
				if ok, _ := again.BFExists(ctx, "k", item).Result(); !ok {
					t.Fatalf("%s lost", item)
				}
			}
		})
	}
}

// A save compacts the log: the older segments go, and a server started
// with --appendonly no replays what an earlier one logged, saves it and
// removes the segments before it serves.
func TestLogCompaction(t *testing.T) {
	dir := t.TempDir()
	s, rdb := startOn(t, dir, Config{AppendFsync: "always"})
	ctx := context.Background()
	rdb.BFMAdd(ctx, "k", numbered("i", 1000)...)
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	segs := segments(t, dir)
	if len(segs) != 1 || !strings.HasSuffix(segs[0], "0002.ohbl") {
		t.Fatalf("segments after a save: %v", segs)
	}
	if st, _ := os.Stat(segs[0]); st.Size() != segmentHeader {
		t.Fatalf("the new segment holds %d bytes, no change since", st.Size())
	}
	rdb.BFAdd(ctx, "k", "logged only")
	if info, _ := rdb.ConfigGet(ctx, "appendonly").Result(); info["appendonly"] != "yes" {
		t.Fatalf("CONFIG GET appendonly %v", info)
	}

	off := crashCopy(t, dir)
	_, again := startOn(t, off, Config{DisableAppendLog: true})
	if ok, _ := again.BFExists(ctx, "k", "logged only").Result(); !ok {
		t.Fatal("a server without the log did not replay the one on disk")
	}
	if segs := segments(t, off); len(segs) != 0 {
		t.Fatalf("segments left after a start without the log: %v", segs)
	}
	_, third := startOn(t, crashCopy(t, off), Config{DisableAppendLog: true})
	if ok, _ := third.BFExists(ctx, "k", "logged only").Result(); !ok {
		t.Fatal("lost when the log was compacted into the snapshot")
	}
}

// The log adds no allocation to an add: a record is a copy into a reused
// buffer.
func TestAddAllocatesNothingForTheLog(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	allocs := func(c Config) float64 {
		s, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown(context.Background())
		sess := &session{authed: true, log: logWait{deferred: true}}
		args := [][]byte{[]byte("BF.ADD"), []byte("k"), []byte("item")}
		var w nullReplier
		s.exec(sess, w, args)
		return testing.AllocsPerRun(200, func() {
			s.exec(sess, w, args)
			s.syncLog(sess)
		})
	}
	off := allocs(Config{Logger: discard()})
	t.Logf("BF.ADD allocates %v times without the log", off)
	for _, policy := range []string{"always", "everysec"} {
		if on := allocs(Config{DataDir: t.TempDir(), AppendFsync: policy, SaveInterval: -1, Logger: discard()}); on != off {
			t.Fatalf("BF.ADD allocates %v times with the log (%s), %v without", on, policy, off)
		}
	}
}

type nullReplier struct{}

func (nullReplier) WriteError(string)      {}
func (nullReplier) WriteString(string)     {}
func (nullReplier) WriteBulk([]byte)       {}
func (nullReplier) WriteBulkString(string) {}
func (nullReplier) WriteInt64(int64)       {}
func (nullReplier) WriteArray(int)         {}
func (nullReplier) WriteNull()             {}
func (nullReplier) WriteNullArray()        {}
func (nullReplier) WriteBool(bool)         {}
func (nullReplier) WriteDouble(float64)    {}
func (nullReplier) WriteMap(int)           {}
func (nullReplier) WriteSet(int)           {}
func (nullReplier) WriteVerbatim(string)   {}
func (nullReplier) Proto() int             { return 2 }

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func xxh3Hash(b []byte) uint64 { return xxh3.Hash(b) }

// startWithClock is start with the store's clock replaced before the
// server serves.
func startWithClock(t *testing.T, c Config, now func() time.Time) (*Server, string) {
	t.Helper()
	if c.Logger == nil {
		c.Logger = discard()
	}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	s.store.now = now
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s, ln.Addr().String()
}

// Under everysec, while a record older than two seconds is not fsynced
// (the disk stalls), replies to changes wait for the flusher, as Redis's
// do: the loss a crash can cause stays bounded.
func TestEverysecWritersWaitForAStalledDisk(t *testing.T) {
	dir := t.TempDir()
	s, rdb := startOn(t, dir, Config{})
	ctx := context.Background()
	l := s.store.log
	fake := &fakeClock{t: time.Unix(0, 0).Add(time.Hour)}
	clock := func() time.Duration { return fake.now().Sub(time.Unix(0, 0)) }
	l.testClock.Store(&clock)
	// blocked holds the first signal until the test takes it: the
	// flusher's tick may take the record before the test waits.
	release, blocked := make(chan struct{}), make(chan struct{}, 1)
	hold := func() error {
		select {
		case blocked <- struct{}{}:
		default:
		}
		<-release
		return nil
	}
	logFault.Store(&hold)
	defer logFault.Store(nil)
	// Whichever flush takes this record (ours or the flusher's tick) is
	// stuck in its write.
	if err := rdb.BFAdd(ctx, "k", "first").Err(); err != nil {
		t.Fatal(err)
	}
	go l.flush(true)
	<-blocked
	fake.advance(3 * time.Second)
	reply := make(chan error, 1)
	go func() { reply <- rdb.BFAdd(ctx, "k", "second").Err() }()
	for l.stalledWriters.Load() == 0 {
		select {
		case err := <-reply:
			t.Fatalf("a change was acknowledged while a 3-second-old record was not synced: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	logFault.Store(nil)
	close(release)
	if err := <-reply; err != nil {
		t.Fatal(err)
	}
	if ok, _ := rdb.BFExists(ctx, "k", "second").Result(); !ok {
		t.Fatal("the waiting add was lost")
	}
}

// A save's rotation on a disk with no room to reserve the new segment: a
// change made while the rotation writes the old segment is not
// acknowledged before its record is written (it is sure to fit in
// neither segment's reservation), changes are not refused meanwhile,
// and once the old segment gives back its reserved blocks the new one
// takes them: changes are taken, and nothing acknowledged is lost.
func TestRotationOnAFullDisk(t *testing.T) {
	ctx := context.Background()
	smallReserve(t)
	dir := t.TempDir()
	disk := useDisk(t, dir, 1<<30)
	s, addr := start(t, Config{DataDir: dir, AppendFsync: "everysec", SaveInterval: -1, EventLoops: 1})
	rdb := client(t, addr)
	if err := rdb.BFAdd(ctx, "k", "before").Err(); err != nil {
		t.Fatal(err)
	}
	l := s.store.log
	l.flush(true)
	disk.leave(2 << 10) // room for a segment's header, not for its reservation
	held, release := holdLogWrites(t, nil)
	let := sync.OnceFunc(func() { close(release) })
	defer let() // a failure lets the save end before the server shuts down
	saved := make(chan error, 1)
	go func() { saved <- s.Save() }()
	<-held
	waitFor(t, "the rotation to write the old segment", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.old != nil
	})
	during := dial(t, addr)
	during.Write([]byte("BF.ADD k during\r\n"))
	waitFor(t, "the change to wait for the log", func() bool { return waitingOnLog(l) == 1 })
	noReplyYet(t, during, "a change made during the rotation")
	if info, _ := rdb.Info(ctx, "persistence").Result(); !strings.Contains(info, "aof_last_write_status:ok") {
		t.Fatalf("INFO during the rotation: %q", info)
	}
	let()
	expect(t, during, "", ":1\r\n")
	<-saved // it may fail for lack of room: the disk is full
	if err := rdb.BFAdd(ctx, "k", "after").Err(); err != nil {
		t.Fatalf("a change after the rotation: %v", err)
	}
	l.flush(true)
	testDisk.Store(nil)
	_, again := startOn(t, crashCopy(t, dir), Config{})
	for _, item := range []string{"before", "during", "after"} {
		if ok, _ := again.BFExists(ctx, "k", item).Result(); !ok {
			t.Fatalf("%s, acknowledged, is lost after kill -9", item)
		}
	}
}
