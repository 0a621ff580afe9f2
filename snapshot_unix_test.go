//go:build unix

package ohbloom

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Snapshots follow the umask, as files made by cp or tar do, so that other
// services can read them: 0644 under umask 022, 0600 under 077.
func TestSaveFollowsUmask(t *testing.T) {
	dir := t.TempDir()
	f := New(100, 0.01)
	for _, c := range []struct {
		umask int
		want  os.FileMode
	}{{0o022, 0o644}, {0o077, 0o600}, {0o002, 0o664}} {
		old := syscall.Umask(c.umask)
		path := filepath.Join(dir, "snap")
		err := f.Save(path)
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != c.want {
			t.Errorf("umask %#o: the snapshot is %v, want %v", c.umask, st.Mode().Perm(), c.want)
		}
	}
}

// A save that cannot start names the path it was asked for, once, and
// not the temporary file.
func TestSaveErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	f := New(100, 0.01)
	missing := filepath.Join(dir, "no-such-dir", "snap")
	err := f.Save(missing)
	if err == nil || strings.Count(err.Error(), missing) != 1 || strings.Contains(err.Error(), ".tmp-") || strings.Count(err.Error(), "ohbloom: ") != 1 {
		t.Errorf("Save into a missing directory: %v", err)
	}
	err = f.Save(dir)
	if err == nil || !strings.Contains(err.Error(), "is a directory") || strings.Contains(err.Error(), ".tmp-") {
		t.Errorf("Save over a directory: %v", err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".*tmp-*")); len(leftovers) > 0 {
		t.Errorf("Save left %v", leftovers)
	}
}
