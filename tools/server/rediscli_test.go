package server

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// redisCLI returns the path of the real redis-cli (Debian's redis-tools),
// which .ci/run installs. Outside CI a machine without it skips the test.
func redisCLI(t *testing.T) string {
	path, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must provide redis-cli (.ci/run installs redis-tools)")
		}
		t.Skip("redis-cli is not installed")
	}
	return path
}

func TestRedisCLI(t *testing.T) {
	cli := redisCLI(t)
	_, addr := start(t, Config{Password: "pw"})
	host, port, _ := net.SplitHostPort(addr)
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(cli, append([]string{"-h", host, "-p", port, "-a", "pw", "--no-auth-warning"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, c := range []struct{ args, want string }{
		{"BF.RESERVE blocks 0.001 10000", "OK"},
		{"BF.ADD blocks alice|bob", "1"},
		{"BF.ADD blocks alice|bob", "0"},
		{"BF.MADD blocks a b c", "1\n1\n1"},
		{"BF.EXISTS blocks alice|bob", "1"},
		{"BF.MEXISTS blocks a zzz", "1\n0"},
		{"BF.CARD blocks", "4"},
		{"BF.INFO blocks ITEMS", "4"},
		{"BF.ADD blocks", "ERR wrong number of arguments for 'bf.add' command"},
		{"BF.RESERVE blocks 0.01 10", "ERR item exists"},
		{"CF.ADD sessions s1", "1"},
		{"CF.COUNT sessions s1", "1"},
		{"CF.DEL sessions s1", "1"},
		{"TYPE sessions", "MBbloomCF"},
		{"DBSIZE", "2"},
	} {
		if got := run("", strings.Fields(c.args)...); got != c.want {
			t.Errorf("redis-cli %s: %q, want %q", c.args, got, c.want)
		}
	}
	// Bulk loading with --pipe, as operators load Redis: raw protocol on
	// stdin, a summary at the end.
	var proto strings.Builder
	for i := range 10_000 {
		item := fmt.Sprintf("did:plc:%024d", i)
		fmt.Fprintf(&proto, "*3\r\n$6\r\nBF.ADD\r\n$5\r\npiped\r\n$%d\r\n%s\r\n", len(item), item)
	}
	summary := run(proto.String(), "--pipe")
	if !strings.Contains(summary, "errors: 0, replies: 10000") {
		t.Fatalf("redis-cli --pipe: %s", summary)
	}
	if got := run("", "BF.EXISTS", "piped", "did:plc:000000000000000000009999"); got != "1" {
		t.Fatalf("after --pipe, the last item: %q", got)
	}
}

// redis-py (Debian's python3-redis, which .ci/run installs) uses its
// RedisBloom commands against the server unchanged.
func TestRedisPy(t *testing.T) {
	python := redisPy(t)
	_, addr := start(t, Config{Password: "pw"})
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command(python, "testdata/redispy_check.py", host, port, "pw").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
}
