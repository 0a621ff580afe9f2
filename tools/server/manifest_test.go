package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// emptySegmentBytes is a valid segment holding no record.
func emptySegmentBytes(gen uint64) []byte {
	b := []byte(segmentMagic)
	return binary.LittleEndian.AppendUint64(b, gen)
}

// A segment numbered past the live log is not evidence that a save
// finished: the start refuses it, naming it, and changes nothing; the
// acknowledged change in the real log is there once it is moved away.
// Only an empty segment right after the log (a rotation cut short) is
// removed, and a segment a finished save superseded is removed.
func TestStraySegmentsDoNotHideTheLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, rdb := startOn(t, dir, Config{AppendFsync: "always"})
	if err := rdb.BFAdd(ctx, "k", "acknowledged").Err(); err != nil {
		t.Fatal(err)
	}
	base := crashCopy(t, dir) // kill -9 after the reply
	real := segmentPath(base, 1)
	realBytes, _ := os.ReadFile(real)
	withRecords := withRecord(emptySegmentBytes(3), recDelete, "k", nil)
	for _, c := range []struct {
		name string
		gen  uint64
		data []byte
	}{
		{"an empty segment two past the log", 3, emptySegmentBytes(3)},
		{"a segment holding a delete, two past the log", 3, withRecords},
		{"a segment with records right after the log", 2, withRecord(emptySegmentBytes(2), recDelete, "k", nil)},
		{"a far segment", 0x7f, emptySegmentBytes(0x7f)},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := crashCopy(t, base)
			stray := segmentPath(d, c.gen)
			os.WriteFile(stray, c.data, 0o644)
			_, err := New(Config{DataDir: d, AppendFsync: "always", SaveInterval: -1, Logger: discard()})
			if err == nil || !strings.Contains(err.Error(), stray) {
				t.Fatalf("start with %s beside the log: %v; want a refusal naming %s", c.name, err, stray)
			}
			if got, _ := os.ReadFile(segmentPath(d, 1)); !bytes.Equal(got, realBytes) {
				t.Fatal("the refused start changed the real segment")
			}
			os.Rename(stray, filepath.Join(t.TempDir(), "moved"))
			_, again := startOn(t, d, Config{AppendFsync: "always"})
			if ok, _ := again.BFExists(ctx, "k", "acknowledged").Result(); !ok {
				t.Fatal("the acknowledged add is lost")
			}
		})
	}
	t.Run("an empty segment right after the log", func(t *testing.T) {
		d := crashCopy(t, base)
		os.WriteFile(segmentPath(d, 2), emptySegmentBytes(2), 0o644)
		s, again := startOn(t, d, Config{AppendFsync: "always"})
		if ok, _ := again.BFExists(ctx, "k", "acknowledged").Result(); !ok {
			t.Fatal("the acknowledged add is lost")
		}
		if got := segments(t, d); len(got) != 1 || got[0] != segmentPath(d, 1) {
			t.Fatalf("segments %v, want only the live one", got)
		}
		// The log goes on in segment 1, and the next save moves to 2.
		again.BFAdd(ctx, "k", "after")
		if err := s.Save(); err != nil {
			t.Fatal(err)
		}
		_, third := startOn(t, crashCopy(t, d), Config{})
		if ok, _ := third.BFExists(ctx, "k", "after").Result(); !ok {
			t.Fatal("lost after the start removed the empty segment")
		}
	})
	t.Run("a segment a save superseded", func(t *testing.T) {
		d := crashCopy(t, base)
		s, again := startOn(t, d, Config{AppendFsync: "always"})
		if err := s.Save(); err != nil {
			t.Fatal(err)
		}
		again.Del(ctx, "k")
		after := crashCopy(t, d)
		// The old segment, back as a removal cut short would leave it:
		// it holds the creation of k, which the DEL in segment 2 undid.
		os.WriteFile(segmentPath(after, 1), realBytes, 0o644)
		_, third := startOn(t, after, Config{AppendFsync: "always"})
		if n, _ := third.Exists(ctx, "k").Result(); n != 0 {
			t.Fatal("a superseded segment was replayed: the deleted key is back")
		}
		if got := segments(t, after); len(got) != 1 || got[0] != segmentPath(after, 2) {
			t.Fatalf("segments %v, want the superseded one removed", got)
		}
	})
	t.Run("a live segment missing", func(t *testing.T) {
		d := crashCopy(t, base)
		s, again := startOn(t, d, Config{AppendFsync: "always"})
		again.BFAdd(ctx, "k", "more")
		// A crash in a save after its rotation: segments 1 and 2 are
		// both live.
		var after string
		saveHook = func(step string) {
			if step == "rotated" {
				after = crashCopy(t, d)
			}
		}
		defer func() { saveHook = nil }()
		if err := s.Save(); err != nil {
			t.Fatal(err)
		}
		saveHook = nil
		for _, gen := range []uint64{1, 2} {
			lost := crashCopy(t, after)
			os.Remove(segmentPath(lost, gen))
			_, err := New(Config{DataDir: lost, SaveInterval: -1, Logger: discard()})
			if err == nil || !strings.Contains(err.Error(), segmentPath(lost, gen)) || !strings.Contains(err.Error(), "missing") {
				t.Fatalf("start without live segment %d: %v", gen, err)
			}
		}
		_, third := startOn(t, after, Config{})
		if ok, _ := third.BFExists(ctx, "k", "more").Result(); !ok {
			t.Fatal("lost in a crash after a rotation")
		}
	})
}

// A data directory written before the manifest existed (segments, data
// files, ohbloom-lastsave) starts: its segments are replayed, LASTSAVE is
// kept, and a manifest is written. With a gap in its numbering nothing
// says which segments are live, and the start refuses, naming both sides.
func TestDirectoryWithoutAManifest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, rdb := startOn(t, dir, Config{AppendFsync: "always"})
	rdb.BFAdd(ctx, "saved", "x")
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	rdb.BFAdd(ctx, "logged", "y")
	old := crashCopy(t, dir)
	os.Remove(filepath.Join(old, manifestFile))
	os.WriteFile(filepath.Join(old, lastSaveFile), []byte("1000000000\n"), 0o644)

	gap := crashCopy(t, old)
	os.WriteFile(segmentPath(gap, 5), emptySegmentBytes(5), 0o644)
	_, err := New(Config{DataDir: gap, SaveInterval: -1, Logger: discard()})
	if err == nil || !strings.Contains(err.Error(), segmentPath(gap, 2)) || !strings.Contains(err.Error(), segmentPath(gap, 5)) {
		t.Fatalf("start with a gap and no manifest: %v", err)
	}

	_, again := startOn(t, old, Config{AppendFsync: "always"})
	for key, item := range map[string]string{"saved": "x", "logged": "y"} {
		if ok, _ := again.BFExists(ctx, key, item).Result(); !ok {
			t.Fatalf("%s lost", key)
		}
	}
	if got, _ := again.LastSave(ctx).Result(); got != 1000000000 {
		t.Fatalf("LASTSAVE %d, want the old file's", got)
	}
	ms, err := readManifest(filepath.Join(old, manifestFile))
	if err != nil || ms.first != 2 || ms.last != 2 || ms.saved != 1000000000 {
		t.Fatalf("the manifest written: %+v %v", ms, err)
	}
	if _, err := os.Stat(filepath.Join(old, lastSaveFile)); err == nil {
		t.Fatal("the old LASTSAVE file stays beside the manifest")
	}
}

// The manifest, written and read back, says what was written; the journal
// folds in; a journal line cut short at the end is ignored, a damaged one
// refused.
func TestManifestRoundTrip(t *testing.T) {
	st := &manifestState{saved: 1234, first: 3, last: 5, ended: map[uint64]int64{3: 100, 4: 16}, syncedGen: 5, syncedSize: 999,
		dbmap: map[int]int{0: 7, 7: 0, 2: 3, 3: 2}}
	files := []string{"0123456789abcdef0123456789abcdef.ohbs", "ffffffffffffffffffffffffffffffff.ohbs"}
	data := encodeManifest(st, files)
	data = append(data, checked("segment "+hex16(6)+" "+hex16(4096))+"\n"...)
	data = append(data, checked("removed ffffffffffffffffffffffffffffffff")+"\n"...)
	got, err := parseManifest(bufio.NewReader(bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	want := &manifestState{saved: 1234, first: 3, last: 6, ended: map[uint64]int64{3: 100, 4: 16, 5: 4096},
		syncedGen: 5, syncedSize: 999, size: int64(len(data)),
		files:   map[string]bool{files[0]: true, files[1]: true},
		removed: map[string]bool{files[1]: true}, dbmap: st.dbmap}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v\nwant %+v", got, want)
	}
	torn := append(slices.Clone(data), "removed 01234"...)
	if got, err := parseManifest(bufio.NewReader(bytes.NewReader(torn))); err != nil || got.size != int64(len(data)) {
		t.Fatalf("a journal line cut short: %v, size %d", err, got.size)
	}
	// (The last byte is left alone: a last line without its \n is one
	// whose append was cut short.)
	for i := len(manifestHead) + syncedLen; i < len(data)-1; i++ {
		damaged := slices.Clone(data)
		damaged[i] ^= 0x01
		if got, err := parseManifest(bufio.NewReader(bytes.NewReader(damaged))); err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("a flipped bit at %d read as %+v", i, got)
		}
	}
}

// FuzzManifest reads arbitrary bytes as a manifest: an error or a state,
// never a panic; a state written back reads the same.
func FuzzManifest(f *testing.F) {
	st := &manifestState{saved: 1, first: 2, last: 3, ended: map[uint64]int64{2: 20}, syncedGen: 3, syncedSize: 40}
	data := encodeManifest(st, []string{"0123456789abcdef0123456789abcdef.ohbs"})
	f.Add(data)
	f.Add(append(slices.Clone(data), checked("segment "+hex16(4)+" "+hex16(64))+"\n"...))
	f.Add(append(slices.Clone(data), checked("removed 0123456789abcdef0123456789abcdef")+"\n"...))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseManifest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		if got.first == 0 || got.first > got.last+1 || got.size > int64(len(data)) {
			t.Fatalf("accepted %+v from %d bytes", got, len(data))
		}
		var files []string
		for name := range got.files {
			files = append(files, name)
		}
		slices.Sort(files)
		again, err := parseManifest(bufio.NewReader(bytes.NewReader(encodeManifest(got, files))))
		if err != nil {
			t.Fatalf("written back, it does not read: %v", err)
		}
		for g := range got.ended {
			if g >= got.last {
				t.Fatalf("an end recorded for segment %d, not before the last (%d)", g, got.last)
			}
		}
		if again.first != got.first || again.last != got.last || again.saved != got.saved ||
			!reflect.DeepEqual(again.ended, got.ended) || len(again.files) != len(got.files) {
			t.Fatalf("written back %+v, read %+v", got, again)
		}
	})
}
