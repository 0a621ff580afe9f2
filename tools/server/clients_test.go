package server

import (
	"net"
	"os/exec"
	"strings"
	"testing"
)

// redis-cli -3 negotiates RESP3 and prints its maps ("key value" on one
// line, where RESP2's arrays print one element a line) and verbatim text.
func TestRedisCLIRESP3(t *testing.T) {
	cli := redisCLI(t)
	_, addr := start(t, Config{Password: "pw"})
	host, port, _ := net.SplitHostPort(addr)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(cli, append([]string{"-3", "-h", host, "-p", port, "-a", "pw", "--no-auth-warning"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli -3 %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run("HELLO"); !strings.Contains(got, "proto 3") {
		t.Fatalf("HELLO under redis-cli -3: %q", got)
	}
	if got := run("CONFIG", "GET", "maxclients"); !strings.HasPrefix(got, "maxclients ") {
		t.Fatalf("CONFIG GET under redis-cli -3: %q", got)
	}
	if got := run("INFO"); !strings.Contains(got, "redis_version:"+Version) {
		t.Fatalf("INFO under redis-cli -3: %q", got)
	}
	if got := run("BF.ADD", "k", "a"); got != "1" && got != "(true)" {
		t.Fatalf("BF.ADD under redis-cli -3: %q", got)
	}
}

// redis-py's pipeline() is a MULTI/EXEC transaction by default.
func TestRedisPyTransaction(t *testing.T) {
	python := redisPy(t)
	_, addr := start(t, Config{Password: "pw"})
	host, port, _ := net.SplitHostPort(addr)
	script := `
import sys, redis
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), password="pw")
p = r.pipeline()
p.bf().add("tx", "a")
p.bf().add("tx", "a")
p.bf().exists("tx", "a")
got = p.execute()
if got != [1, 0, 1]:
    sys.exit("pipeline: %r" % (got,))
try:
    with r.pipeline() as p:
        p.bf().add("tx", "b")
        p.execute_command("NOSUCH")
        p.execute()
    sys.exit("a transaction with an unknown command succeeded")
except redis.ResponseError as e:
    if "EXECABORT" not in str(e) and "unknown command" not in str(e):
        sys.exit("unexpected error: %s" % e)
if r.bf().exists("tx", "b"):
    sys.exit("an aborted transaction ran")
print("ok")
`
	out, err := exec.Command(python, "-c", script, host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
}
