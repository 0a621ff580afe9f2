//go:build unix

package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A save writes only regular files or new paths: a named pipe, a symbolic
// link or a device node where a key's file, the next log segment or the
// LASTSAVE file goes makes SAVE fail with an error that says what the path
// is, and the path is left as it was (the rename once replaced each of
// them with a regular file). With the path cleared, the next SAVE works.
func TestSaveRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	s, rdb := startOn(t, dir, Config{})
	ctx := context.Background()
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("someone else's"), 0o644); err != nil {
		t.Fatal(err)
	}
	type special struct {
		path, says string
	}
	var made []special
	mk := func(path, says string, make func(string) error) {
		if err := make(path); err != nil {
			t.Fatalf("making %s: %v", path, err)
		}
		made = append(made, special{path, says})
	}
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	for i, c := range []struct {
		key, says string
		make      func(string) error
	}{
		{"pipe", "is a named pipe", fifo},
		{"link", "is a symbolic link", func(p string) error { return os.Symlink(outside, p) }},
		{"device", "is a device", func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3) }},
	} {
		if err := rdb.BFAdd(ctx, c.key, i).Err(); err != nil {
			t.Fatal(err)
		}
		path := s.store.path(0, c.key)
		if c.key == "device" {
			// A node like /dev/null's, where this process may make one
			// (root, or CAP_MKNOD); never a real device of the machine.
			if err := c.make(path); err != nil {
				t.Logf("no device node case: mknod: %v", err)
				continue
			}
			made = append(made, special{path, c.says})
			continue
		}
		mk(path, c.says, c.make)
	}
	mk(segmentPath(dir, s.store.log.currentGen()+1), "is a named pipe", fifo)
	t.Cleanup(func() {
		for _, m := range made {
			os.Remove(m.path)
		}
	})

	err := rdb.Save(ctx).Err()
	if err == nil {
		t.Fatal("SAVE over a named pipe, a symbolic link and a device succeeded")
	}
	for _, m := range made {
		if !strings.Contains(err.Error(), filepath.Base(m.path)+" "+m.says+", not a regular file") {
			t.Errorf("SAVE's error does not say that %s %s: %v", m.path, m.says, err)
		}
		st, lerr := os.Lstat(m.path)
		if lerr != nil || st.Mode().IsRegular() {
			t.Errorf("%s was replaced: %v %v", m.path, st.Mode(), lerr)
		}
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "someone else's" {
		t.Errorf("the symbolic link's target changed: %q %v", b, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*")); len(leftovers) > 0 {
		t.Errorf("SAVE left %v", leftovers)
	}

	for _, m := range made {
		os.Remove(m.path)
	}
	// The manifest is written once every key is.
	lastSave := filepath.Join(dir, manifestFile)
	os.Remove(lastSave)
	if err := fifo(lastSave); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(lastSave) })
	err = rdb.Save(ctx).Err()
	if err == nil || !strings.Contains(err.Error(), manifestFile+" is a named pipe, not a regular file") {
		t.Errorf("SAVE over a named pipe as the manifest: %v", err)
	}
	if st, err := os.Lstat(lastSave); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the manifest pipe was replaced: %v", err)
	}
	os.Remove(lastSave)
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatalf("SAVE with the paths cleared: %v", err)
	}
	for _, key := range []string{"pipe", "link"} {
		if st, err := os.Lstat(s.store.path(0, key)); err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s's file after the second SAVE: %v", key, err)
		}
	}
}
