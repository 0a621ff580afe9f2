package cli

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ohbloom/ohbloom"
)

// The command refuses what it cannot mean: a flag after an argument, two
// sources of keys, binary key input, no keys without -n.
func TestRefusesWhatItCannotMean(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.txt")
	os.WriteFile(keys, []byte(keyLines("user:", 100)), 0o644)
	snap := filepath.Join(dir, "users.ohb")
	if _, errOut, code := run(t, "", "build", "-o", snap, "--keys", keys); code != 0 {
		t.Fatal(errOut)
	}
	binary := filepath.Join(dir, "binary.bin")
	os.WriteFile(binary, []byte("key1\nkey2\nke\x00y3\n"), 0o644)
	db := filepath.Join(dir, "k.db")
	sdb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	sdb.Exec("CREATE TABLE k (v TEXT)")
	sdb.Close()
	out := filepath.Join(dir, "out.ohb")
	cases := []struct {
		args []string
		code int
		want string
	}{
		// Go's flag package stops at the first argument: -q would be a key.
		{[]string{"test", snap, "-q", "user:1"}, ExitUsage, "-q after an argument"},
		{[]string{"test", snap, "user:1", "-q"}, ExitUsage, "-q after an argument"},
		{[]string{"info", snap, "-v"}, ExitUsage, "-v after an argument"},
		{[]string{"merge", "-o", out, snap, snap, "-o", out}, ExitUsage, "-o after an argument"},
		{[]string{"build", "-o", out, "--keys", keys, "--sqlite", db, "--query", "SELECT v FROM k"}, ExitUsage, "--keys and --sqlite exclude each other"},
		{[]string{"build", "-o", out, "--keys", "-", "--postgres", "postgres://nowhere", "--query", "SELECT 1"}, ExitUsage, "--keys and --postgres exclude each other"},
		{[]string{"build", "-o", out, "--keys", snap}, ExitFailure, snap + ": this is an ohbloom snapshot, not keys"},
		{[]string{"build", "-o", out, "--keys", snap, "-n", "10"}, ExitFailure, snap + ": this is an ohbloom snapshot, not keys"},
		{[]string{"build", "-o", out, "--keys", binary}, ExitFailure, binary + ": line 3 holds a NUL byte"},
		{[]string{"build", "-o", out, "--keys", os.DevNull}, ExitFailure, "no keys in " + os.DevNull + ": give -n"},
		{[]string{"build", "-o", out, "--keys", dir}, ExitFailure, dir + " is a directory"},
		{[]string{"build", "-o", out, "--sqlite", db, "--query", "SELECT v FROM k"}, ExitFailure, "no keys in the query's rows: give -n"},
	}
	for _, c := range cases {
		stdout, errOut, code := run(t, "", c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) || stdout != "" {
			t.Errorf("ohbloom %s: exit %d, want %d with %q; stdout %q, stderr %q", strings.Join(c.args, " "), code, c.code, c.want, stdout, errOut)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("ohbloom %s wrote %s", strings.Join(c.args, " "), out)
		}
	}
	// A binary stdin is refused as a file is.
	if _, errOut, code := run(t, "a\nb\x00\n", "build", "-o", out); code != ExitFailure || !strings.Contains(errOut, "stdin: line 2 holds a NUL byte") {
		t.Errorf("binary stdin: exit %d, %q", code, errOut)
	}
	// After --, an argument that starts with - is a key.
	stdout, errOut, code := run(t, "", "test", "--", snap, "-q", "user:1")
	if code != ExitAbsent || stdout != "-q\tabsent\nuser:1\tpossibly present\n" {
		t.Errorf("test -- FILE -q user:1: exit %d, %q %q", code, stdout, errOut)
	}
	// With -n, no keys is an empty filter, and a warning; no rate of
	// nothing in the progress line.
	stdout, errOut, code = run(t, "", "build", "-o", out, "--keys", os.DevNull, "-n", "1000", "--progress")
	if code != 0 || !strings.Contains(errOut, "warning: no keys read: the filter is empty") || !strings.Contains(stdout, "0 keys") ||
		strings.Contains(errOut, "/s") || strings.Contains(errOut, "/hr") || !strings.Contains(errOut, "0 of 1,000 keys") {
		t.Errorf("build of no keys with -n: exit %d, %q %q", code, stdout, errOut)
	}
	if f, err := ohbloom.Load(out); err != nil || f.Capacity() != 1000 || f.EstimatedCount() != 0 {
		t.Errorf("the empty filter: %v", err)
	}
}

// SQLite's errors name the file, once.
func TestSQLiteErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "not-a-database.db")
	os.WriteFile(notDB, []byte(strings.Repeat("this is not SQLite\n", 100)), 0o644)
	good := filepath.Join(dir, "good.db")
	db, err := sql.Open("sqlite", good)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec("CREATE TABLE k (v TEXT)")
	db.Exec("INSERT INTO k VALUES ('a')")
	db.Close()
	out := filepath.Join(dir, "out.ohb")
	for _, c := range []struct {
		path, query, want string
	}{
		{notDB, "SELECT 1", "file is not a database"},
		{good, "SELECT v FROM missing", "no such table"},
		{good, "SELECT nonsense(", "incomplete input"},
		{filepath.Join(dir, "missing.db"), "SELECT 1", "no such file"},
	} {
		for _, n := range []string{"0", "10"} { // counted first, or not
			_, errOut, code := run(t, "", "build", "-o", out, "-n", n, "--sqlite", c.path, "--query", c.query)
			if code != ExitFailure || !strings.Contains(errOut, c.want) || strings.Count(errOut, c.path) != 1 || strings.Count(errOut, "\n") != 1 {
				t.Errorf("build --sqlite %s --query %q -n %s: exit %d, want one line naming the file once with %q: %q", c.path, c.query, n, code, c.want, errOut)
			}
		}
	}
}
