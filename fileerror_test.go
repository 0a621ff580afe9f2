package ohbloom

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An error about a snapshot file says "ohbloom: " once and names the file
// once, whatever it wraps: a sentinel of its own, or an os error that
// names the path itself.
func TestFileErrorsSayItOnce(t *testing.T) {
	dir := t.TempDir()
	f := New(1000, 0.01)
	f.AddString("k")
	good := filepath.Join(dir, "good.ohb")
	if err := f.Save(good); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	damaged := filepath.Join(dir, "damaged.ohb")
	bad := append([]byte(nil), data...)
	bad[len(bad)/2] ^= 1
	os.WriteFile(damaged, bad, 0o644)
	long := filepath.Join(dir, "long.ohb")
	os.WriteFile(long, append(append([]byte(nil), data...), 0), 0o644)
	short := filepath.Join(dir, "short.ohb")
	os.WriteFile(short, data[:len(data)-1], 0o644)
	garbage := filepath.Join(dir, "garbage.ohb")
	os.WriteFile(garbage, []byte(strings.Repeat("not a filter ", 20)), 0o644)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)

	load := func(p string) error { _, err := Load(p); return err }
	open := func(p string) error {
		s, err := Open(p)
		if err == nil {
			s.Close()
		}
		return err
	}
	cases := []struct {
		what string
		call func(string) error
		path string
		is   error
	}{
		{"Load of a damaged file", load, damaged, ErrChecksum},
		{"Open of a damaged file", open, damaged, ErrChecksum},
		{"Load with a byte after the filter", load, long, ErrCorrupt},
		{"Open with a byte after the filter", open, long, ErrCorrupt},
		{"Load of a cut file", load, short, ErrTruncated},
		{"Open of a cut file", open, short, ErrTruncated},
		{"Load of garbage", load, garbage, ErrNotFilter},
		{"Open of garbage", open, garbage, ErrNotFilter},
		{"Open of a directory", open, sub, nil},
		{"Save over a directory", func(p string) error { return f.Save(p) }, sub, nil},
		{"Save into a missing directory", func(p string) error { return f.Save(p) }, filepath.Join(dir, "no", "x.ohb"), nil},
	}
	for _, c := range cases {
		err := c.call(c.path)
		if err == nil || (c.is != nil && !errors.Is(err, c.is)) {
			t.Errorf("%s: %v, want an error wrapping %v", c.what, err, c.is)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "ohbloom: ") || strings.Count(msg, "ohbloom: ") != 1 || strings.Count(msg, c.path) != 1 {
			t.Errorf("%s: %q, want \"ohbloom: \" once and %s once", c.what, msg, c.path)
		}
	}
}
