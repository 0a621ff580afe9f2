//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// build -o and merge -o refuse a path that is not a regular file, before
// any work, and leave it as it was: the save renames its file over the
// path, which once replaced a named pipe, a symbolic link (not the file it
// points to) or, as root, a device node such as /dev/full with a regular
// file.
func TestOutputMustBeARegularFile(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.txt")
	os.WriteFile(keys, []byte(keyLines("k", 1000)), 0o644)
	good := filepath.Join(dir, "good.ohb")
	if _, errOut, code := run(t, "", "build", "-o", good, "--keys", keys); code != 0 {
		t.Fatal(errOut)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.ohb")
	if err := os.Symlink(filepath.Join(dir, "elsewhere.ohb"), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		path string
	}{
		{[]string{"build", "-o", fifo, "--keys", keys}, fifo},
		{[]string{"build", "-o", link, "--keys", keys}, link},
		{[]string{"merge", "-o", fifo, good, good}, fifo},
		{[]string{"merge", "-o", link, good, good}, link},
	} {
		before, _ := os.Lstat(c.path)
		_, errOut, code := run(t, "", c.args...)
		if code != ExitUsage || !strings.Contains(errOut, c.path+" is not a regular file") {
			t.Errorf("ohbloom %s: exit %d, %q", strings.Join(c.args, " "), code, errOut)
		}
		if after, err := os.Lstat(c.path); err != nil || after.Mode() != before.Mode() {
			t.Errorf("%s was %v, is now %v (%v)", c.path, before.Mode(), after.Mode(), err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere.ohb")); err == nil {
		t.Error("build -o a symbolic link wrote the file it points to")
	}
}
