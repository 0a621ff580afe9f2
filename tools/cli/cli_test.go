package cli

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ohbloom/ohbloom"
)

// binary is the ohbloom command, built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ohbloom-cli-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "ohbloom")
	build := exec.Command("go", "build", "-o", binary, "../cmd/ohbloom")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the command:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs the built command and returns its output and exit code.
func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func keyLines(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s%d\r\n", prefix, i)
	}
	b.WriteString("\n\n") // empty lines are skipped
	return b.String()
}

func TestBuildTestInfoMerge(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.txt")
	os.WriteFile(keys, []byte(keyLines("a", 5000)), 0o644)
	a, b, m := filepath.Join(dir, "a.ohb"), filepath.Join(dir, "b.ohb"), filepath.Join(dir, "m.ohb")

	out, errOut, code := run(t, "", "build", "-o", a, "--keys", keys, "-p", "0.001")
	if code != 0 || !strings.Contains(out, "5000 keys") {
		t.Fatalf("build from a file: code %d, %q %q", code, out, errOut)
	}
	f, err := ohbloom.Load(a)
	if err != nil || f.Capacity() != 5000 || f.TargetFPR() != 0.001 {
		t.Fatalf("the snapshot: %v, capacity %d", err, f.Capacity())
	}
	// From stdin, counting first, then with -n and the same size as a.
	if _, errOut, code := run(t, keyLines("b", 300), "build", "-o", b, "-p", "0.001", "-n", "5000"); code != 0 {
		t.Fatalf("build from stdin: %d %s", code, errOut)
	}
	if _, errOut, code := run(t, keyLines("c", 300), "build", "-o", filepath.Join(dir, "c.ohb")); code != 0 {
		t.Fatalf("build from stdin, counted: %d %s", code, errOut)
	}
	if c, _ := ohbloom.Load(filepath.Join(dir, "c.ohb")); c == nil || c.Capacity() != 300 {
		t.Fatal("stdin was not counted to 300 keys")
	}

	out, _, code = run(t, "", "test", a, "a1", "a4999")
	if code != 0 || strings.Count(out, "possibly present") != 2 {
		t.Fatalf("test of present keys: %d %q", code, out)
	}
	out, _, code = run(t, "a1\nnot-there\n", "test", a)
	if code != ExitAbsent || !strings.Contains(out, "not-there\tabsent") || !strings.Contains(out, "a1\tpossibly present") {
		t.Fatalf("test from stdin: %d %q", code, out)
	}
	if out, _, code := run(t, "", "test", "-q", a, "zzz"); code != ExitAbsent || out != "" {
		t.Fatalf("test -q: %d %q", code, out)
	}

	out, _, code = run(t, "", "info", a)
	for _, want := range []string{"checksum ok", "k=9", "sized for:       5000 keys at p=0.001", "estimated keys:"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("info lacks %q (code %d):\n%s", want, code, out)
		}
	}

	if _, errOut, code := run(t, "", "merge", "-o", m, a, b); code != 0 {
		t.Fatalf("merge: %d %s", code, errOut)
	}
	if out, _, code := run(t, "", "test", m, "a17", "b17"); code != 0 {
		t.Fatalf("the merge lacks keys: %q", out)
	}
	// Incompatible sizes: a failure, and nothing written.
	_, errOut, code = run(t, "", "merge", "-o", filepath.Join(dir, "bad.ohb"), a, filepath.Join(dir, "c.ohb"))
	if code != ExitFailure || !strings.Contains(errOut, "incompatible") {
		t.Fatalf("merge of incompatible snapshots: %d %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.ohb")); err == nil {
		t.Fatal("a failed merge wrote its output")
	}
}

func TestBuildFromSQLite(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "k.db")
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec("CREATE TABLE k (v TEXT)")
	for i := range 1000 {
		db.Exec("INSERT INTO k VALUES (?)", fmt.Sprint("row", i))
	}
	db.Close()
	out := filepath.Join(dir, "s.ohb")
	if _, errOut, code := run(t, "", "build", "-o", out, "--sqlite", dbPath, "--query", "SELECT v FROM k", "--progress"); code != 0 {
		t.Fatalf("build --sqlite: %d %s", code, errOut)
	}
	if got, _, code := run(t, "", "test", out, "row0", "row999"); code != 0 {
		t.Fatalf("keys from SQLite not found: %q", got)
	}
	if _, errOut, code := run(t, "", "build", "-o", out, "--sqlite", filepath.Join(dir, "missing.db"), "--query", "SELECT 1"); code != ExitFailure || !strings.Contains(errOut, "missing.db") {
		t.Fatalf("build from a missing database: %d %q", code, errOut)
	}
}

func TestUsageAndFailures(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("this is not a filter at all, but it is long enough to hold a header......................................................................................................"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, ExitUsage, "usage: ohbloom"},
		{[]string{"frobnicate"}, ExitUsage, "unknown command"},
		{[]string{"help"}, ExitOK, "commands:"},
		{[]string{"build", "--help"}, ExitOK, "usage: ohbloom build"},
		{[]string{"test", "--help"}, ExitOK, "usage: ohbloom test"},
		{[]string{"info", "--help"}, ExitOK, "usage: ohbloom info"},
		{[]string{"merge", "--help"}, ExitOK, "usage: ohbloom merge"},
		{[]string{"demo", "--help"}, ExitOK, "usage: ohbloom demo"},
		{[]string{"build"}, ExitUsage, "-o is required"},
		{[]string{"build", "-o", "x", "-p", "1.5"}, ExitUsage, "-p must be in (0, 1)"},
		{[]string{"build", "-o", "x", "--sqlite", "a", "--postgres", "b", "--query", "q"}, ExitUsage, "exclude each other"},
		{[]string{"build", "-o", "x", "--sqlite", "a"}, ExitUsage, "--query is required"},
		{[]string{"build", "--bogus"}, ExitUsage, "flag provided but not defined"},
		{[]string{"test"}, ExitUsage, "a snapshot is required"},
		{[]string{"info"}, ExitUsage, "exactly one snapshot"},
		{[]string{"merge", "-o", "x", "one"}, ExitUsage, "at least two"},
		{[]string{"demo", "-rows", "0"}, ExitUsage, "must be positive"},
		{[]string{"test", filepath.Join(dir, "missing"), "k"}, ExitFailure, "no such file"},
		{[]string{"info", garbage}, ExitFailure, "not an ohbloom filter"},
		{[]string{"build", "-o", filepath.Join(dir, "x"), "--keys", filepath.Join(dir, "missing")}, ExitFailure, "no such file"},
	}
	for _, c := range cases {
		_, errOut, code := run(t, "", c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("ohbloom %s: exit %d, want %d with %q; stderr:\n%s", strings.Join(c.args, " "), code, c.code, c.want, errOut)
		}
	}
}

func TestDemo(t *testing.T) {
	rows := "100000"
	if testing.Short() {
		rows = "20000"
	}
	out, errOut, code := run(t, "", "demo", "-rows", rows, "-queries", "50000")
	if code != 0 {
		t.Fatalf("demo: %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"block relations", "filter loaded", "keys/s", "reached the database", "false positives", "no blocked pair missed"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

func TestBuildFromPostgres(t *testing.T) {
	url := os.Getenv("OHBLOOM_POSTGRES_URL")
	if url == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must set OHBLOOM_POSTGRES_URL (.ci/run starts PostgreSQL)")
		}
		t.Skip("OHBLOOM_POSTGRES_URL is not set")
	}
	out := filepath.Join(t.TempDir(), "pg.ohb")
	query := "SELECT 'pg' || g::text FROM generate_series(1, 20000) AS g"
	if _, errOut, code := run(t, "", "build", "-o", out, "--postgres", url, "--query", query); code != 0 {
		t.Fatalf("build --postgres: %d %s", code, errOut)
	}
	if got, _, code := run(t, "", "test", out, "pg1", "pg20000"); code != 0 {
		t.Fatalf("keys from PostgreSQL not found: %q", got)
	}
	f, _ := ohbloom.Load(out)
	if f.Capacity() != 20000 {
		t.Fatalf("sized for %d keys, the query returns 20000", f.Capacity())
	}
}
