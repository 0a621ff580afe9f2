package cli

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/tools/loader"
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
		args   []string
		code   int
		stdout string // what stdout holds, or "" to look at stderr
		stderr string
	}{
		{nil, ExitUsage, "", "usage: ohbloom"},
		{[]string{"frobnicate"}, ExitUsage, "", "unknown command"},
		{[]string{"help"}, ExitOK, "commands:", ""},
		{[]string{"--help"}, ExitOK, "commands:", ""},
		{[]string{"-h"}, ExitOK, "commands:", ""},
		{[]string{"build", "--help"}, ExitOK, "usage: ohbloom build", ""},
		{[]string{"build", "-h"}, ExitOK, "empty lines are not keys", ""},
		{[]string{"test", "--help"}, ExitOK, "empty lines are not keys", ""},
		{[]string{"info", "--help"}, ExitOK, "usage: ohbloom info", ""},
		{[]string{"merge", "--help"}, ExitOK, "usage: ohbloom merge", ""},
		{[]string{"demo", "--help"}, ExitOK, "usage: ohbloom demo", ""},
		{[]string{"build"}, ExitUsage, "", "-o is required"},
		{[]string{"build", "-o", "x", "-p", "1.5"}, ExitUsage, "", "-p must be in (0, 1)"},
		{[]string{"build", "-o", "x", "--sqlite", "a", "--postgres", "b", "--query", "q"}, ExitUsage, "", "exclude each other"},
		{[]string{"build", "-o", "x", "--sqlite", "a"}, ExitUsage, "", "--query is required"},
		{[]string{"build", "--bogus"}, ExitUsage, "", "flag provided but not defined"},
		{[]string{"test"}, ExitUsage, "", "a snapshot is required"},
		{[]string{"test", garbage, "a", ""}, ExitUsage, "", "empty keys are not keys"},
		{[]string{"info"}, ExitUsage, "", "exactly one snapshot"},
		{[]string{"merge", "-o", "x", "one"}, ExitUsage, "", "at least two"},
		{[]string{"demo", "-rows", "0"}, ExitUsage, "", "must be positive"},
		{[]string{"test", filepath.Join(dir, "missing"), "k"}, ExitFailure, "", "no such file"},
		{[]string{"info", garbage}, ExitFailure, "", "not an ohbloom filter"},
		{[]string{"build", "-o", filepath.Join(dir, "x"), "--keys", filepath.Join(dir, "missing")}, ExitFailure, "", "no such file"},
	}
	for _, c := range cases {
		out, errOut, code := run(t, "", c.args...)
		bad := code != c.code
		if c.stdout != "" {
			bad = bad || !strings.Contains(out, c.stdout) || errOut != ""
		} else {
			bad = bad || !strings.Contains(errOut, c.stderr)
		}
		if bad {
			t.Errorf("ohbloom %s: exit %d, want %d with %q; stdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, c.code, c.stdout+c.stderr, out, errOut)
		}
	}
}

// Every error is one line that says "ohbloom COMMAND: " once and names the
// failing path once, and a usage error adds one line pointing to --help:
// no nested "ohbloom: " prefixes, no usage dump.
func TestErrorsSayItOnce(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.txt")
	os.WriteFile(keys, []byte(keyLines("k", 1000)), 0o644)
	good := filepath.Join(dir, "good.ohb")
	if _, errOut, code := run(t, "", "build", "-o", good, "--keys", keys); code != 0 {
		t.Fatal(errOut)
	}
	data, _ := os.ReadFile(good)
	damaged := filepath.Join(dir, "data.ohb")
	data[len(data)/2] ^= 1
	os.WriteFile(damaged, data, 0o644)
	missing := filepath.Join(dir, "nonexist.ohb")
	cases := []struct {
		args  []string
		code  int
		path  string // named exactly once, when not ""
		lines int    // lines on stderr
		want  string
	}{
		{[]string{"build", "-o", filepath.Join(dir, "x.ohb"), "-n", "1e15", "--keys", keys}, ExitUsage, "", 2, "filter too large"},
		{[]string{"build", "-o", filepath.Join(dir, "x.ohb"), "-n", "1.5", "--keys", keys}, ExitUsage, "", 2, "whole number of keys"},
		{[]string{"build", "-o", filepath.Join(dir, "x.ohb"), "-n", "lots", "--keys", keys}, ExitUsage, "", 2, "such as 1000000 or 1e6"},
		{[]string{"build", "-o", dir, "--keys", keys}, ExitUsage, dir + " ", 2, "is a directory"},
		{[]string{"build", "-o", filepath.Join(dir, "no", "x.ohb"), "--keys", keys}, ExitUsage, "", 2, "no such file or directory"},
		{[]string{"merge", "-o", dir, good, good}, ExitUsage, dir + " ", 2, "is a directory"},
		{[]string{"test", missing, "k1"}, ExitFailure, missing, 1, "no such file"},
		{[]string{"info", missing}, ExitFailure, missing, 1, "no such file"},
		{[]string{"test", damaged, "k1"}, ExitFailure, damaged, 1, "checksum mismatch"},
		{[]string{"info", damaged}, ExitFailure, damaged, 1, "checksum mismatch"},
		{[]string{"merge", "-o", filepath.Join(dir, "m.ohb"), good, damaged}, ExitFailure, damaged, 1, "checksum mismatch"},
		{[]string{"merge", "-o", filepath.Join(dir, "m.ohb"), damaged, good}, ExitFailure, damaged, 1, "checksum mismatch"},
	}
	for _, c := range cases {
		_, errOut, code := run(t, "", c.args...)
		cmd := "ohbloom " + c.args[0] + ": "
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		ok := code == c.code && strings.HasPrefix(errOut, cmd) && strings.Contains(lines[0], c.want) &&
			strings.Count(errOut, "ohbloom") == strings.Count(errOut, "ohbloom "+c.args[0]) && len(lines) == c.lines
		if c.path != "" {
			ok = ok && strings.Count(errOut, c.path) == 1
		}
		if !ok {
			t.Errorf("ohbloom %s: exit %d, want %d, one %q line%s, %q:\n%s", strings.Join(c.args, " "), code, c.code,
				cmd, map[bool]string{true: " naming " + c.path + " once", false: ""}[c.path != ""], c.want, errOut)
		}
	}
	// -n takes counts as people write them.
	out := filepath.Join(dir, "million.ohb")
	if _, errOut, code := run(t, "k1\n", "build", "-o", out, "-n", "1e6"); code != 0 {
		t.Fatalf("-n 1e6: %s", errOut)
	}
	if f, err := ohbloom.Load(out); err != nil || f.Capacity() != 1_000_000 {
		t.Fatalf("-n 1e6 sized for %v keys (%v)", f.Capacity(), err)
	}
}

// A filter past its capacity: build and merge warn with the false positive
// rate reached and still succeed; info says "saturated" when every bit is
// set, never a count of 2^64-1 keys.
func TestPastCapacity(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.txt")
	os.WriteFile(keys, []byte(keyLines("k", 5000)), 0o644)
	full := filepath.Join(dir, "full.ohb")
	_, errOut, code := run(t, "", "build", "-o", full, "-n", "10", "--keys", keys)
	if code != 0 || !strings.Contains(errOut, "ohbloom build: warning: 5000 keys read, more than the 10") || !strings.Contains(errOut, "false positive rate is now 1,") {
		t.Fatalf("build past capacity: exit %d, stderr %q", code, errOut)
	}
	out, errOut, code := run(t, "", "info", full)
	if code != 0 || !strings.Contains(out, "estimated keys:  saturated") || !strings.Contains(out, "FPR now:         saturated") ||
		strings.Contains(out, "18446744073709551615") || !strings.Contains(errOut, "warning") {
		t.Fatalf("info of a saturated filter: exit %d\n%s%s", code, out, errOut)
	}
	// Two filters, each at its capacity without a warning, merged: twice
	// the keys, and the warning gives the rate.
	a, b := filepath.Join(dir, "a.ohb"), filepath.Join(dir, "b.ohb")
	for i, path := range []string{a, b} {
		if _, errOut, code := run(t, keyLines(fmt.Sprint("set", i, "-"), 20_000), "build", "-o", path, "-n", "20000"); code != 0 || errOut != "" {
			t.Fatalf("build at capacity: exit %d, stderr %q", code, errOut)
		}
	}
	out, errOut, code = run(t, "", "merge", "-o", filepath.Join(dir, "m.ohb"), a, b)
	if code != 0 || !strings.Contains(errOut, "ohbloom merge: warning: the union holds more keys than the 20000") || !strings.Contains(out, "about") {
		t.Fatalf("merge past capacity: exit %d\n%s%s", code, out, errOut)
	}
	var fpr, target float64
	if _, err := fmt.Sscanf(errOut[strings.Index(errOut, "rate is now"):], "rate is now %g, not %g", &fpr, &target); err != nil || !(fpr > target) {
		t.Fatalf("merge warning: %q (%v)", errOut, err)
	}
}

// Blank lines are not keys, for build and test alike; a line past 16 MiB is
// an error that names the limit.
func TestLinesAreKeys(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "s.ohb")
	out, errOut, code := run(t, "a\n\r\n\nb\r\n\n", "build", "-o", snap)
	if code != 0 || !strings.Contains(out, " 2 keys") {
		t.Fatalf("build: %d %q %q", code, out, errOut)
	}
	if f, _ := ohbloom.Load(snap); f == nil || f.Capacity() != 2 {
		t.Fatal("blank lines were counted as keys")
	}
	out, _, code = run(t, "a\n\r\n\nb\r\n\n", "test", snap)
	if code != 0 || out != "a\tpossibly present\nb\tpossibly present\n" {
		t.Fatalf("test: %d %q", code, out)
	}
	long := strings.Repeat("x", 17<<20)
	if _, errOut, code := run(t, "a\n"+long+"\n", "build", "-o", snap); code != ExitFailure || !strings.Contains(errOut, "line 2 is longer than 16 MiB") {
		t.Fatalf("build of a 17 MiB line: %d %q", code, errOut)
	}
	if _, errOut, code := run(t, "a\n"+long+"\n", "test", snap); code != ExitFailure || !strings.Contains(errOut, "line 2 is longer than 16 MiB") {
		t.Fatalf("test of a 17 MiB line: %d %q", code, errOut)
	}
}

// --version prints the version of CHANGELOG.md's latest release and the Go
// version that built the command.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version", "-version"} {
		out, errOut, code := run(t, "", arg)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "ohbloom "+Version) || !strings.Contains(out, runtime.Version()) {
			t.Fatalf("ohbloom %s: %d %q %q", arg, code, out, errOut)
		}
	}
	changelog, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\]`).FindSubmatch(changelog)
	if m == nil || string(m[1]) != Version {
		t.Fatalf("CHANGELOG.md's latest release is %q, the command says %s", m, Version)
	}
}

// ohbloom test never answers "absent" for an added key from a damaged
// snapshot: every byte changed, in the header, the blocks or the trailer,
// and every truncation is an error, and nothing is printed.
func TestTestRefusesDamagedSnapshots(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ohb")
	if _, errOut, code := run(t, keyLines("key-", 500), "build", "-o", good); code != 0 {
		t.Fatal(errOut)
	}
	data, _ := os.ReadFile(good)
	args := []string{"test", filepath.Join(dir, "damaged.ohb")}
	for i := range 500 {
		args = append(args, fmt.Sprint("key-", i))
	}
	try := func(what string, b []byte) {
		if err := os.WriteFile(args[1], b, 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr strings.Builder
		code := Main(args, strings.NewReader(""), &stdout, &stderr)
		if code != ExitFailure || stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), "ohbloom test: ") {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", what, code, stdout.String(), stderr.String())
		}
	}
	damaged := make([]byte, len(data))
	for i := range data {
		for _, x := range []byte{0x01, 0x80} {
			copy(damaged, data)
			damaged[i] ^= x
			try(fmt.Sprintf("byte %d ^ %#x", i, x), damaged)
		}
	}
	for n := range len(data) {
		try(fmt.Sprintf("cut to %d bytes", n), data[:n])
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
	// Progress, as plain lines since stderr is not a terminal: each phase
	// starts and ends with a line.
	for _, want := range []string{"rows inserted", "rows loaded", "new blocks applied",
		"database queries saved", "rows checked", "done in"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("demo progress lacks %q:\n%s", want, errOut)
		}
	}
	// The filter is sized for the rows and the whole stream, so the rate
	// its bits give is within the target.
	var measured, target, bits float64
	i := strings.Index(out, "unblocked pairs = ")
	if i < 0 {
		t.Fatalf("no false positive line:\n%s", out)
	}
	if _, err := fmt.Sscanf(out[i:], "unblocked pairs = %g%% (target %g%%, from the bits %g%%)", &measured, &target, &bits); err != nil {
		t.Fatal(err)
	}
	if bits > target {
		t.Errorf("the filter's bits give %.3f%%, above the %.3f%% target", bits, target)
	}
}

// A failure of the live stream (here: no table to insert into) is
// reported by stop, not lost.
func TestDemoStreamError(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "empty.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f := ohbloom.NewAtomic(1000, 0.01)
	s := startStream(db, newWorld(1000), &loader.Loader{Filter: f, DB: db}, 0, 1_000_000, 1000)
	s.wg.Wait() // the stream ends by itself at its first insert, which fails
	if _, err := s.stop(); err == nil || !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("stop after a failed insert: %v", err)
	}
}

// A meter writes a line when its phase starts, one per tick, and one when
// it ends; on a terminal it redraws one line with a bar.
func TestMeter(t *testing.T) {
	var done atomic.Uint64
	for _, terminal := range []bool{false, true} {
		w := &lineWriter{lines: make(chan string, 10)}
		tick := make(chan time.Time)
		m := (&meter{w: w, terminal: terminal, name: "filter", unit: "rows loaded", total: 1000, done: done.Load,
			extra: func() string { return "stream: 7" }, tick: tick}).startMeter()
		if first := <-w.lines; !strings.Contains(first, "0 of 1,000 rows loaded (0%)") {
			t.Errorf("first line %q", first)
		}
		for i := range 3 {
			done.Store(uint64(250 * (i + 1)))
			tick <- time.Now()
			line := <-w.lines
			want := fmt.Sprintf("%s of 1,000 rows loaded (%d%%)", thousands(done.Load()), 25*(i+1))
			if !strings.Contains(line, want) || !strings.Contains(line, "stream: 7") || !strings.Contains(line, "/s") {
				t.Errorf("tick %d: %q, want %q", i, line, want)
			}
			if terminal != strings.HasPrefix(line, "\r") || terminal != strings.Contains(line, "[") {
				t.Errorf("tick %d on a terminal=%v: %q", i, terminal, line)
			}
		}
		m.finish()
		if last := <-w.lines; !strings.Contains(last, "done in") || !strings.HasSuffix(last, "\n") {
			t.Errorf("last line %q", last)
		}
		done.Store(0)
	}
	if got := thousands(1234567); got != "1,234,567" {
		t.Errorf("thousands(1234567) = %s", got)
	}
}

// lineWriter hands each Write to a channel.
type lineWriter struct{ lines chan string }

func (w *lineWriter) Write(b []byte) (int, error) {
	w.lines <- string(b)
	return len(b), nil
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
	stdout, errOut, code := run(t, "", "build", "-o", out, "--postgres", url, "--query", query)
	if code != 0 || !strings.Contains(stdout, "sized for 20000 at p=0.01 (counted)") {
		t.Fatalf("build --postgres: %d %s %s", code, stdout, errOut)
	}
	if got, _, code := run(t, "", "test", out, "pg1", "pg20000"); code != 0 {
		t.Fatalf("keys from PostgreSQL not found: %q", got)
	}
	f, _ := ohbloom.Load(out)
	if f.Capacity() != 20000 {
		t.Fatalf("sized for %d keys, the query returns 20000", f.Capacity())
	}

	// A plain scan of an analyzed table is sized from the planner's
	// estimate, plus 2%, without counting. ANALYZE reads every page of a
	// table this small, so the estimate is the count.
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const rows = 150_000
	for _, q := range []string{"DROP TABLE IF EXISTS ohbloom_cli_users",
		"CREATE TABLE ohbloom_cli_users (id text) WITH (autovacuum_enabled = false)",
		fmt.Sprintf("INSERT INTO ohbloom_cli_users SELECT 'user:' || g FROM generate_series(1, %d) AS g", rows),
		"INSERT INTO ohbloom_cli_users VALUES (NULL)",
		"ANALYZE ohbloom_cli_users"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	stdout, errOut, code = run(t, "", "build", "-o", out, "--postgres", url, "--query", "SELECT id FROM ohbloom_cli_users")
	want := fmt.Sprintf("wrote %s: %d keys", out, rows)
	estimate := fmt.Sprintf("sized for %d at p=0.01 (PostgreSQL's estimate for public.ohbloom_cli_users, %d rows, +2%%)", rows+1+((rows+1)*2+99)/100, rows+1)
	if code != 0 || !strings.HasPrefix(stdout, want) || !strings.Contains(stdout, estimate) || !strings.Contains(errOut, "1 rows had a NULL key and were skipped") {
		t.Fatalf("build --postgres from a table: exit %d\n%s%s\nwant %q and %q", code, stdout, errOut, want, estimate)
	}
	if got, _, code := run(t, "", "test", out, "user:1", fmt.Sprint("user:", rows)); code != 0 {
		t.Fatalf("keys from the table not found: %q", got)
	}
}
