package cli

import (
	"bufio"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startServe runs "ohbloom serve" on a free loopback port and returns the
// process, its address, read from its "listening" log line, and the rest
// of its log. Every line before that one must be a log line too.
func startServe(t *testing.T, args ...string) (*exec.Cmd, string, *logLines) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Not a synchronisation but a bound: a test waiting for a line that
	// never comes fails then instead of hanging until the test timeout.
	bound := time.AfterFunc(3*time.Minute, func() { cmd.Process.Kill() })
	t.Cleanup(func() { bound.Stop() })
	lines := &logLines{t: t, sc: bufio.NewScanner(stderr)}
	line := lines.waitFor("msg=listening")
	_, addr, _ := strings.Cut(line, "addr=")
	return cmd, addr, lines
}

// logLines reads a server's log, checking that every line is one of
// slog's text lines.
type logLines struct {
	t   *testing.T
	sc  *bufio.Scanner
	all strings.Builder
}

var logLine = regexp.MustCompile(`^time=\S+ level=(DEBUG|INFO|WARN|ERROR) msg=`)

// next returns the next line, or false at the end of the log.
func (l *logLines) next() (string, bool) {
	if !l.sc.Scan() {
		return "", false
	}
	line := l.sc.Text()
	l.all.WriteString(line + "\n")
	if !logLine.MatchString(line) {
		l.t.Errorf("a line of serve's stderr is not a log line: %q", line)
	}
	return line, true
}

// waitFor reads lines until one holds want, and returns it.
func (l *logLines) waitFor(want string) string {
	l.t.Helper()
	for {
		line, ok := l.next()
		if !ok {
			l.t.Fatalf("serve's log ended without %q:\n%s", want, l.all.String())
		}
		if strings.Contains(line, want) {
			return line
		}
	}
}

// rest reads the log to its end.
func (l *logLines) rest() string {
	for _, ok := l.next(); ok; _, ok = l.next() {
	}
	return l.all.String()
}

// SIGTERM saves every filter and exits 0; a new server on the same
// directory answers as the old one did.
func TestServeSavesOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cmd, addr, lines := startServe(t, "--dir", dir, "--save-interval", "-1s", "--requirepass", "pw")
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: "pw"})
	items := []any{"a", "b", "c"}
	if err := rdb.BFMAdd(ctx, "k", items...).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	var said string
	go func() {
		said = lines.rest() // until serve exits and its stderr closes
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v: %s", err, said)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit on SIGTERM")
	}
	if !strings.Contains(said, "saving filters") || !strings.Contains(said, "msg=\"saved, bye\"") {
		t.Fatalf("serve said %q", said)
	}

	_, addr, _ = startServe(t, "--dir", dir, "--requirepass", "pw")
	rdb = redis.NewClient(&redis.Options{Addr: addr, Password: "pw"})
	defer rdb.Close()
	found, err := rdb.BFMExists(ctx, "k", items...).Result()
	if err != nil || !found[0] || !found[1] || !found[2] {
		t.Fatalf("after restart: %v %v", found, err)
	}
}

func TestServeUsage(t *testing.T) {
	if _, errOut, code := run(t, "", "serve", "--save-interval", "0s"); code != ExitUsage || !strings.Contains(errOut, "--save-interval") {
		t.Fatalf("serve --save-interval 0: code %d, %q", code, errOut)
	}
	if _, errOut, code := run(t, "", "serve", "a.conf", "extra"); code != ExitUsage || !strings.Contains(errOut, "unexpected argument \"extra\"") {
		t.Fatalf("serve a.conf extra: code %d, %q", code, errOut)
	}
	// The first argument is a configuration file, as redis-server's.
	if _, errOut, code := run(t, "", "serve", "missing.conf"); code != ExitFailure || !strings.Contains(errOut, "missing.conf") {
		t.Fatalf("serve missing.conf: code %d, %q", code, errOut)
	}
	if _, errOut, code := run(t, "", "serve", "--maxmemory", "12xb"); code != ExitUsage || !strings.Contains(errOut, "argument must be a memory value") {
		t.Fatalf("serve --maxmemory 12xb: code %d, %q", code, errOut)
	}
	if _, errOut, code := run(t, "", "serve", "--max-buffered-bytes", "1000"); code != ExitFailure || !strings.Contains(errOut, "MaxBufferedBytes") {
		t.Fatalf("serve --max-buffered-bytes below --max-request-bytes: code %d, %q", code, errOut)
	}
	for _, bad := range []string{"-1", "1000", "600000000"} { // negative, below one client's share, above --max-buffered-bytes
		if _, errOut, code := run(t, "", "serve", "--max-unauth-buffered-bytes", bad); code != ExitFailure || !strings.Contains(errOut, "MaxUnauthBufferedBytes") {
			t.Fatalf("serve --max-unauth-buffered-bytes %s: code %d, %q", bad, code, errOut)
		}
	}
	if _, errOut, code := run(t, "", "serve", "--event-loops", "-1"); code != ExitFailure || !strings.Contains(errOut, "EventLoops") {
		t.Fatalf("serve --event-loops -1: code %d, %q", code, errOut)
	}
	for _, bad := range []string{"0", "-3"} {
		if _, errOut, code := run(t, "", "serve", "--databases", bad); code != ExitUsage || !strings.Contains(errOut, "--databases "+bad) {
			t.Fatalf("serve --databases %s: code %d, %q", bad, code, errOut)
		}
	}
	if _, errOut, code := run(t, "", "serve", "--databases", "2000000"); code != ExitFailure || !strings.Contains(errOut, "Databases") {
		t.Fatalf("serve --databases 2000000: code %d, %q", code, errOut)
	}
	if out, _, code := run(t, "", "serve", "--help"); code != ExitOK || !strings.Contains(out, "BF.RESERVE") || !strings.Contains(out, "max-buffered-bytes") {
		t.Fatalf("serve --help: code %d, %q", code, out)
	}
}
