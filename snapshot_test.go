package ohbloom

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSaveLoadOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "blocks.ohbloom")
	f := New(50_000, 0.001)
	keys := make([][]byte, 50_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k%d", i)
	}
	f.AddBatch(keys)
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Equal(f) || loaded.Capacity() != f.Capacity() || loaded.TargetFPR() != f.TargetFPR() {
		t.Fatal("Load gives a different filter")
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	if s.mapping != nil && blockAddress(&s.blocks[0])%64 != 0 {
		t.Fatal("mapped blocks are not 64-byte aligned")
	}
	results := make([]bool, len(keys))
	s.TestBatch(keys, results)
	for i, k := range keys {
		if !s.Test(k) || !s.TestString(string(k)) || !s.TestHash(f.Hash(k)) || !results[i] {
			t.Fatalf("key %d not found in the snapshot", i)
		}
	}
	absent := 0
	for i := range 10_000 {
		if s.TestString(fmt.Sprint("absent", i)) != f.TestString(fmt.Sprint("absent", i)) {
			t.Fatal("snapshot and filter disagree")
		}
		if !s.TestString(fmt.Sprint("absent", i)) {
			absent++
		}
	}
	if absent == 0 {
		t.Fatal("the snapshot answers true to everything")
	}
	// Handing over to a live filter, and saving an AtomicFilter.
	live := s.ToAtomic()
	live.AddString("new")
	if !live.TestString("new") || !live.ToFilter().Equal(func() *Filter { g := f.Clone(); g.AddString("new"); return g }()) {
		t.Fatal("ToAtomic lost bits")
	}
	if err := live.Save(path); err != nil {
		t.Fatal(err)
	}
	again, err := Load(path)
	if err != nil || !again.TestString("new") {
		t.Fatalf("reload after AtomicFilter.Save: %v", err)
	}
	if !s.ToFilter().Equal(f) {
		t.Fatal("the open snapshot changed when its file was replaced")
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(leftovers) > 0 {
		t.Fatalf("Save left %v", leftovers)
	}
}

func TestSnapshotErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	f := New(1000, 0.01)
	f.AddString("x")
	if err := f.Save(good); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := append([]byte(nil), data...)
	flipped[headerSize+10] ^= 1
	cases := []struct {
		path       string
		open, load error // what Open and Load say
	}{
		{filepath.Join(dir, "missing"), os.ErrNotExist, os.ErrNotExist},
		{write("empty", nil), ErrTruncated, ErrTruncated},
		{write("foreign", []byte("SQLite format 3\x00 and a lot more bytes than that, enough for a header........................................................................")), ErrNotFilter, ErrNotFilter},
		{write("truncated", data[:len(data)-9]), ErrTruncated, ErrTruncated},
		{write("long", append(append([]byte(nil), data...), 0)), ErrCorrupt, ErrCorrupt},
		{write("flipped", flipped), nil, ErrChecksum},
	}
	for _, c := range cases {
		s, err := Open(c.path)
		if c.open == nil {
			if err != nil {
				t.Errorf("Open(%s): %v", filepath.Base(c.path), err)
			} else if verr := s.Verify(); !errors.Is(verr, ErrChecksum) {
				t.Errorf("Verify(%s): %v, want ErrChecksum", filepath.Base(c.path), verr)
			}
		} else if !errors.Is(err, c.open) || !strings.Contains(err.Error(), filepath.Base(c.path)) {
			t.Errorf("Open(%s): %v, want %v naming the file", filepath.Base(c.path), err, c.open)
		}
		if _, err := Load(c.path); !errors.Is(err, c.load) {
			t.Errorf("Load(%s): %v, want %v", filepath.Base(c.path), err, c.load)
		}
	}
	// A save that fails leaves the old file alone.
	if err := f.Save(filepath.Join(dir, "no-such-dir", "x")); err == nil {
		t.Error("Save into a missing directory succeeded")
	}
	if err := New(5, 0.1).Save(dir); err == nil { // a directory stands there
		t.Error("Save over a directory succeeded")
	}
	if after, _ := os.ReadFile(good); string(after) != string(data) {
		t.Error("a failed save changed another file")
	}
}

// TestSaveSurvivesKill kills a process that saves snapshots in a loop, many
// times at random moments, and checks that the file it leaves behind is
// always a whole, valid snapshot of one of the versions it was writing.
func TestSaveSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills 30 processes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "snap")
	r := rand.New(rand.NewPCG(9, 9))
	killedMidWrite := 0
	for round := range 30 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSaveForever$")
		cmd.Env = append(os.Environ(), "OHBLOOM_SAVE_FOREVER="+path, "OHBLOOM_SAVE_ROUND="+strconv.Itoa(round))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+r.IntN(80)) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()

		if temps, _ := filepath.Glob(filepath.Join(dir, ".snap.tmp-*")); len(temps) > 0 {
			killedMidWrite++
			for _, p := range temps {
				os.Remove(p)
			}
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && round == 0 {
			continue // killed before its first rename
		}
		g, err := Load(path)
		if err != nil {
			t.Fatalf("round %d: the file left behind is not valid: %v", round, err)
		}
		// Version v of round r holds keys "r/v/0".."r/v/999": find the
		// version in the file and check it is whole.
		version := ""
		for r := round; r >= 0 && version == ""; r-- {
			for v := range 10_000 {
				if p := fmt.Sprintf("%d/%d/", r, v); g.TestString(p+"0") && g.TestString(p+"999") {
					version = p
					break
				}
			}
		}
		if version == "" {
			t.Fatalf("round %d: no version found in the file", round)
		}
		for i := range 1000 {
			if !g.TestString(version + strconv.Itoa(i)) {
				t.Fatalf("round %d: version %s is missing key %d", round, version, i)
			}
		}
	}
	t.Logf("%d of 30 kills landed while a temporary file was being written", killedMidWrite)
	if killedMidWrite == 0 {
		t.Fatal("no kill landed mid-write: the test did not test anything")
	}
}

// TestHelperSaveForever is the writer process of TestSaveSurvivesKill: with
// OHBLOOM_SAVE_FOREVER set it saves versions 0, 1, 2, ... of an 8 MiB filter
// to that path until it is killed.
func TestHelperSaveForever(t *testing.T) {
	path := os.Getenv("OHBLOOM_SAVE_FOREVER")
	if path == "" {
		t.Skip("the writer process of TestSaveSurvivesKill")
	}
	round := os.Getenv("OHBLOOM_SAVE_ROUND")
	for v := 0; ; v++ {
		f, _ := NewWithConfig(Config{Blocks: 1 << 17, K: 6})
		for i := range 1000 {
			f.AddString(fmt.Sprintf("%s/%d/%d", round, v, i))
		}
		if err := f.Save(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
