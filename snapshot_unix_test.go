//go:build unix

package ohbloom

import (
	"net"
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

// Save replaces only a regular file: over a named pipe, a symbolic link
// (to a file or to nothing), a directory, a socket or a device node it
// fails, says what the path is, writes nothing and leaves the path as it
// was. It once renamed its file over any of them ("ohbloom build -o
// /dev/full", as root, replaced the device).
func TestSaveRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("not a filter"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{} // path: what the error must say
	add := func(name, says string, make func(string) error) {
		path := filepath.Join(dir, name)
		if err := make(path); err != nil {
			t.Fatalf("making %s: %v", name, err)
		}
		paths[path] = says
	}
	add("fifo", "is a named pipe", func(p string) error { return syscall.Mkfifo(p, 0o644) })
	add("link", "is a symbolic link", func(p string) error { return os.Symlink(target, p) })
	add("dangling", "is a symbolic link", func(p string) error { return os.Symlink(filepath.Join(dir, "nothing"), p) })
	add("dir", "is a directory", func(p string) error { return os.Mkdir(p, 0o755) })
	add("sock", "is a socket", func(p string) error {
		ln, err := net.Listen("unix", p)
		if err == nil {
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			ln.Close()
		}
		return err
	})
	// A device node like /dev/null's (1, 3), where this process may make
	// one (root, or CAP_MKNOD); never a real device of the machine.
	dev := filepath.Join(dir, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		paths[dev] = "is a character device"
	} else {
		t.Logf("no device node case: mknod: %v", err)
	}

	f := New(100, 0.01)
	for path, says := range paths {
		before, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		err = f.Save(path)
		if err == nil || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), "not a regular file") || strings.Count(err.Error(), path) != 1 {
			t.Errorf("Save over %s: %v, want an error saying it %s", path, err, says)
		}
		after, err := os.Lstat(path)
		if err != nil || after.Mode() != before.Mode() {
			t.Errorf("%s was %v, is now %v (%v)", path, before.Mode(), after.Mode(), err)
		}
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "not a filter" {
		t.Errorf("the symbolic link's target changed: %q %v", b, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*")); len(leftovers) > 0 {
		t.Errorf("Save left %v", leftovers)
	}
	// A regular file and a new path still take a snapshot.
	for _, path := range []string{target, filepath.Join(dir, "new")} {
		if err := f.Save(path); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err != nil {
			t.Fatal(err)
		}
	}
}
