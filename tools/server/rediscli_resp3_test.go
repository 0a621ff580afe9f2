package server

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ohbloom/ohbloom/internal/redisbloomtest"
)

// redis-cli -3 and -2 (Debian's redis-tools 7.0) show every BF.* and CF.*
// reply in the type RedisBloom sends it: booleans, maps, nil.
func TestRedisCLIBothProtocols(t *testing.T) {
	cli := redisCLI(t)
	_, addr := start(t, Config{})
	host, port, _ := net.SplitHostPort(addr)
	run := func(proto string, args ...string) string {
		t.Helper()
		out, err := exec.Command(cli, append([]string{"-h", host, "-p", port, proto, "--no-raw"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %s %v: %v\n%s", proto, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, c := range []struct{ proto, args, want string }{
		{"-3", "BF.RESERVE k 0.01 100 EXPANSION 4", "OK"},
		{"-3", "BF.ADD k a", "(true)"},
		{"-3", "BF.ADD k a", "(false)"},
		{"-2", "BF.ADD k a", "(integer) 0"},
		{"-3", "BF.MADD k a b", "1) (false)\n2) (true)"},
		{"-2", "BF.MADD k a c", "1) (integer) 0\n2) (integer) 1"},
		{"-3", "BF.INSERT k ITEMS d", "1) (true)"},
		{"-3", "BF.EXISTS k a", "(true)"},
		{"-2", "BF.EXISTS k zz", "(integer) 0"},
		{"-3", "BF.MEXISTS k a zz", "1) (true)\n2) (false)"},
		{"-3", "BF.CARD k", "(integer) 4"},
		{"-3", "BF.INFO k CAPACITY", "1# Capacity => (integer) 100"},
		{"-2", "BF.INFO k CAPACITY", "1) (integer) 100"},
		{"-3", "BF.INFO k EXPANSION", "1# Expansion rate => (integer) 4"},
		{"-3", "BF.RESERVE n 0.01 10 NONSCALING", "OK"},
		{"-3", "BF.INFO n EXPANSION", "1# Expansion rate => (nil)"},
		{"-2", "BF.INFO n EXPANSION", "1) (nil)"},
		{"-3", "BF.INFO n", "1# Capacity => (integer) 10\n2# Size => (integer) 64\n3# Number of filters => (integer) 1\n" +
			"4# Number of items inserted => (integer) 0\n5# Expansion rate => (nil)"},
		{"-2", "BF.INFO n", "1) Capacity\n 2) (integer) 10\n 3) Size\n 4) (integer) 64\n 5) Number of filters\n 6) (integer) 1\n" +
			" 7) Number of items inserted\n 8) (integer) 0\n 9) Expansion rate\n10) (nil)"},
		{"-3", "BF.RESERVE k 0.01 10", "(error) ERR item exists"},
		{"-3", "BF.RESERVE x 0.01 100 NONSCALING EXPANSION 2", "(error) Nonscaling filters cannot expand"},
		{"-3", "BF.INSERT x FOO ITEMS a", "(error) Unknown argument received"},
		{"-3", "BF.INFO k COLOR", "(error) Invalid information value"},
		{"-3", "BF.SCANDUMP missing 0", "(error) ERR not found"},
		{"-3", "BF.ADD k", "(error) ERR wrong number of arguments for 'bf.add' command"},
		{"-3", "CF.RESERVE c 1000 BUCKETSIZE 4", "OK"},
		{"-3", "CF.ADD c x", "(true)"},
		{"-3", "CF.ADDNX c x", "(false)"},
		{"-3", "CF.INSERT c ITEMS y", "1) (true)"},
		{"-3", "CF.INSERTNX c ITEMS y z", "1) (integer) 0\n2) (integer) 1"},
		{"-3", "CF.EXISTS c x", "(true)"},
		{"-3", "CF.MEXISTS c x q", "1) (true)\n2) (false)"},
		{"-3", "CF.COUNT c x", "(integer) 1"},
		{"-3", "CF.DEL c x", "(true)"},
		{"-2", "CF.DEL c x", "(integer) 0"},
		{"-3", "CF.DEL none x", "(error) Not found"},
		{"-3", "CF.RESERVE c2 3", "(error) Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"},
	} {
		if got := run(c.proto, strings.Fields(c.args)...); got != c.want {
			t.Errorf("redis-cli %s %s: %q, want %q", c.proto, c.args, got, c.want)
		}
	}
	info := run("-3", "CF.INFO", "c")
	if !strings.HasPrefix(info, "1# Size => (integer) ") || !strings.Contains(info, "8# Max iterations => (integer) 20") {
		t.Errorf("redis-cli -3 CF.INFO: %q", info)
	}
}

// redis-py 4.3 (RESP2) drives every command and error, a transaction, and
// a RedisBloom dump there and back (testdata/redispy_compat.py).
func TestRedisPyCompat(t *testing.T) {
	python := redisPy(t)
	_, addr := start(t, Config{})
	host, port, _ := net.SplitHostPort(addr)
	dump := loadRBGoldenPath(t, "cap1000-e0.01-grown.json")
	out, err := exec.Command(python, "testdata/redispy_compat.py", host, port, dump).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
}

// redisPy returns Debian's python3 with redis-py, which .ci/run installs.
// It skips the test where there is none, and fails it in CI.
func redisPy(t *testing.T) string {
	t.Helper()
	if path := redisPyPath(); path != "" {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI must provide python3 with redis-py (.ci/run installs python3-redis)")
	}
	t.Skip("python3 with redis-py is not installed")
	return ""
}

// loadRBGoldenPath is the path of one RedisBloom dump, the shared one first.
func loadRBGoldenPath(t *testing.T, name string) string {
	for _, dir := range redisbloomtest.Dirs("../..") {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	t.Fatalf("no %s", name)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
