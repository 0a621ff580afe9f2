package server

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// CONFIG SET and GET answer as redis-server does: several settings at
// once, all or none, Redis's errors, memory units, names in any case.
func TestConfigMatchesRedisServer(t *testing.T) {
	raddr := realRedis(t)
	_, addr := start(t, Config{})
	ours, theirs := dialProto(t, addr, 2), dialProto(t, raddr, 2)
	restore := map[string]string{}
	for _, k := range []string{"maxmemory", "slowlog-max-len", "slowlog-log-slower-than", "latency-monitor-threshold", "maxclients", "appendfsync"} {
		r := theirs.run(t, "CONFIG", "GET", k)
		f := strings.Split(r, "\r\n")
		restore[k] = f[len(f)-2]
	}
	t.Cleanup(func() {
		c := dialProto(t, raddr, 2)
		for k, v := range restore {
			c.run(t, "CONFIG", "SET", k, v)
		}
	})
	for _, cmd := range [][]string{
		{"CONFIG", "SET", "maxmemory", "abc"},
		{"CONFIG", "SET", "maxmemory", "-1"},
		{"CONFIG", "SET", "maxmemory", "1x"},
		{"CONFIG", "SET", "appendfsync", "sometimes"},
		{"CONFIG", "SET", "nosuchsetting", "1"},
		{"CONFIG", "SET", "slowlog-max-len", "5", "nosuchsetting", "1"},
		{"CONFIG", "SET", "slowlog-max-len", "5", "maxmemory", "x"},
		{"CONFIG", "GET", "slowlog-max-len"}, // unchanged: none of a failed SET applies
		{"CONFIG", "SET", "maxmemory", "1", "MAXMEMORY", "2"},
		{"CONFIG", "SET", "slowlog-log-slower-than", "-2"},
		{"CONFIG", "SET", "slowlog-max-len", "-1"},
		{"CONFIG", "SET", "latency-monitor-threshold", "x"},
		{"CONFIG", "SET", "maxclients", "0"},
		{"CONFIG", "SET", "aclfile", "/x"},
		{"CONFIG", "SET", "maxmemory"},
		{"CONFIG", "SET", "maxmemory", "100mb", "slowlog-max-len", "7", "Latency-Monitor-Threshold", "5"},
		{"CONFIG", "GET", "maxmemory", "SLOWLOG-MAX-LEN"},
		{"CONFIG", "GET", "latency-monitor-threshold"},
		{"CONFIG", "SET", "maxmemory", "2GB"},
		{"CONFIG", "GET", "maxmemory"},
		{"CONFIG", "SET", "maxmemory", "0", "slowlog-max-len", "128", "latency-monitor-threshold", "0"},
		{"CONFIG", "SET", "appendfsync", "everysec"},
		{"CONFIG", "GET", "appendfsync", "maxmemory-policy"},
		{"CONFIG", "GET", "nosuchsetting"},
		{"CONFIG", "GET", "maxmemory-p?licy"},
		{"CONFIG", "GET"},
		{"CONFIG", "RESETSTAT"},
		{"CONFIG", "RESETSTAT", "x"},
		{"CONFIG", "SET", "maxmemory-policy", "noeviction"},
	} {
		a, b := ours.run(t, cmd...), theirs.run(t, cmd...)
		if cmd[1] == "GET" {
			// Redis answers in the order of its hash table.
			a, b = sortedPairs(a), sortedPairs(b)
		}
		if a != b {
			t.Errorf("%v:\nohbloom %q\nredis   %q", cmd, a, b)
		}
	}
	// The only eviction policy is noeviction: the others are refused, in
	// the words Redis uses for a value it does not know.
	if r := ours.run(t, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru"); r != "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: noeviction\r\n" {
		t.Errorf("maxmemory-policy allkeys-lru: %q", r)
	}
	if r := ours.run(t, "CONFIG", "SET", "max-filter-bytes", "1mb"); r != "-ERR CONFIG SET failed (possibly related to argument 'max-filter-bytes') - can't set immutable config\r\n" {
		t.Errorf("max-filter-bytes: %q", r)
	}
	if r := ours.run(t, "CONFIG", "REWRITE"); r != "-ERR The server is running without a config file\r\n" {
		t.Errorf("CONFIG REWRITE without a file: %q", r)
	}
}

// The settings CONFIG SET changes take effect: maxclients refuses the
// next connection, the buffer budgets, appendfsync the log's fsyncs.
func TestConfigSetTakesEffect(t *testing.T) {
	s, addr := start(t, Config{DataDir: t.TempDir(), SaveInterval: -1})
	c := dialProto(t, addr, 2)
	if r := c.run(t, "CONFIG", "SET", "maxclients", "1"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	d := dial(t, addr)
	if r := d.line(t); r != "-ERR max number of clients reached" {
		t.Fatalf("a second client past maxclients 1: %q", r)
	}
	c.run(t, "CONFIG", "SET", "maxclients", "100")
	if runtime.GOOS == "linux" {
		if limit, ok := maxClientsForFiles(); ok {
			if r := c.run(t, "CONFIG", "SET", "maxclients", strconv.Itoa(limit+1)); !strings.Contains(r, "The operating system is not able to handle the specified number of clients, try with "+strconv.Itoa(limit)) {
				t.Fatalf("maxclients past the open-file limit: %q", r)
			}
		}
	}
	if r := c.run(t, "CONFIG", "SET", "max-buffered-bytes", "100"); !strings.Contains(r, "argument must be between") {
		t.Fatalf("max-buffered-bytes below max-request-bytes: %q", r)
	}
	if r := c.run(t, "CONFIG", "SET", "max-buffered-bytes", "1gb", "max-unauth-buffered-bytes", "64mb"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	if s.x.live.maxBufferedBytes.Load() != 1<<30 || s.x.live.maxUnauthBufferedBytes.Load() != 64<<20 {
		t.Fatal("the budgets did not change")
	}
	// appendfsync always: each change's reply waits for its own fsync.
	l := s.store.log
	if r := c.run(t, "CONFIG", "SET", "appendfsync", "always"); r != "+OK\r\n" || l.policy() != fsyncAlways {
		t.Fatalf("appendfsync always: %q, policy %v", r, l.policy())
	}
	syncs := l.syncs.Load()
	for i := range 3 {
		c.run(t, "BF.ADD", "k", strconv.Itoa(i))
	}
	if got := l.syncs.Load() - syncs; got < 3 {
		t.Fatalf("3 changes under always took %d fsyncs", got)
	}
	if r := c.run(t, "INFO", "persistence"); !strings.Contains(r, "aof_fsync:always") {
		t.Fatalf("INFO persistence %q", r)
	}
	c.run(t, "CONFIG", "SET", "appendfsync", "no")
	syncs = l.syncs.Load()
	for i := range 3 {
		c.run(t, "BF.ADD", "k", strconv.Itoa(i+10))
	}
	if got := l.syncs.Load() - syncs; got != 0 {
		t.Fatalf("3 changes under no took %d fsyncs", got)
	}
}

// A configuration file in Redis's syntax: read at start (flags over it),
// rewritten by CONFIG REWRITE with its comments and the lines it does not
// know kept, read back the same by the next start.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ohbloom.conf")
	os.WriteFile(path, []byte(`# the service's settings
maxmemory 100mb
loglevel notice
slowlog-max-len 5
requirepass "pass word"
maxclients 200
maxmemory 64mb
`), 0o600)
	var c Config
	if err := ReadConfigFile(path, &c); err != nil {
		t.Fatal(err)
	}
	if c.MaxMemory != 64<<20 || c.Password != "pass word" || c.MaxClients != 200 || c.ConfigFile != path ||
		len(c.Settings) != 1 || c.Settings[0] != [2]string{"slowlog-max-len", "5"} {
		t.Fatalf("read %+v", c)
	}
	s, addr := start(t, c)
	rdb := client(t, addr, func(o *redis.Options) { o.Password = "pass word" })
	ctx := context.Background()
	if v, _ := rdb.ConfigGet(ctx, "slowlog-max-len").Result(); v["slowlog-max-len"] != "5" {
		t.Fatalf("a setting applied at start: %v", v)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "200mb").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.ConfigSet(ctx, "latency-monitor-threshold", "25")
	if err := rdb.ConfigRewrite(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := `# the service's settings
maxmemory 200mb
loglevel notice
slowlog-max-len 5
requirepass "pass word"
maxclients 200
# Generated by CONFIG REWRITE
latency-monitor-threshold 25
`
	if string(got) != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", got, want)
	}
	s.Shutdown(ctx)
	var again Config
	if err := ReadConfigFile(path, &again); err != nil {
		t.Fatal(err)
	}
	_, addr = start(t, again)
	rdb = client(t, addr, func(o *redis.Options) { o.Password = "pass word" })
	v, err := rdb.ConfigGet(ctx, "*").Result()
	if err != nil || v["maxmemory"] != "209715200" || v["latency-monitor-threshold"] != "25" || v["maxclients"] != "200" {
		t.Fatalf("after a restart from the rewritten file: %v %v", v, err)
	}

	for _, bad := range []struct{ text, err string }{
		{"nosuch 1\n", "line 1: >>> 'nosuch 1': Bad directive or wrong number of arguments"},
		{"\n\nmaxmemory 1 2\n", "line 3: >>> 'maxmemory 1 2': Bad directive or wrong number of arguments"},
		{"maxmemory lots\n", ">>> 'maxmemory lots': argument must be a memory value"},
		{"requirepass \"open\n", "Unbalanced quotes in configuration line"},
		{"user bob on >pw\n", "users are read from an ACL file"},
		{"appendfsync sometimes\n", "argument(s) must be one of the following: everysec, always, no"},
	} {
		os.WriteFile(path, []byte(bad.text), 0o600)
		var c Config
		if err := ReadConfigFile(path, &c); err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("%q: %v, want %q", bad.text, err, bad.err)
		}
	}
	os.WriteFile(path, []byte("slowlog-max-len x\n"), 0o600)
	var late Config
	if err := ReadConfigFile(path, &late); err != nil {
		t.Fatal(err)
	}
	late.Logger = c.Logger
	if _, err := New(late); err == nil || !strings.Contains(err.Error(), "argument couldn't be parsed into an integer") {
		t.Fatalf("a bad run-time setting at start: %v", err)
	}
}

// Past maxmemory, commands that may add memory are refused with Redis's
// text, alone, queued, or as an EXEC; reads and deletions go on.
func TestMaxmemory(t *testing.T) {
	_, addr := start(t, Config{})
	c := dialProto(t, addr, 2)
	c.run(t, "BF.ADD", "k", "a")
	c.run(t, "CF.ADD", "c", "x")
	c.run(t, "MULTI")
	c.run(t, "BF.ADD", "k", "queued-before")
	admin := dialProto(t, addr, 2)
	if r := admin.run(t, "CONFIG", "SET", "maxmemory", "1"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	const oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
	if r := c.run(t, "EXEC"); r != "-EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'.\r\n" {
		t.Fatalf("EXEC of a write past maxmemory: %q", r)
	}
	for _, x := range []struct {
		args []string
		want string
	}{
		{[]string{"BF.ADD", "k", "b"}, oom},
		{[]string{"BF.RESERVE", "n", "0.01", "100"}, oom},
		{[]string{"CF.ADD", "c", "y"}, oom},
		{[]string{"BF.EXISTS", "k", "a"}, ":1\r\n"},
		{[]string{"CF.DEL", "c", "x"}, ":1\r\n"}, // write, fast, not deny-oom: it frees
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"BF.ADD", "k", "c"}, oom},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"BF.EXISTS", "k", "a"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*1\r\n:1\r\n"},
		{[]string{"DEL", "k"}, ":1\r\n"},
	} {
		if r := c.run(t, x.args...); r != x.want {
			t.Fatalf("%v: %q, want %q", x.args, r, x.want)
		}
	}
	rdb := client(t, addr)
	wantErr(t, rdb.BFAdd(context.Background(), "k", "x").Err(), "OOM command not allowed when used memory > 'maxmemory'.")
	info := c.run(t, "INFO", "memory")
	if !strings.Contains(info, "\r\nmaxmemory:1\r\nmaxmemory_human:1B\r\nmaxmemory_policy:noeviction\r\n") {
		t.Fatalf("INFO memory %q", info)
	}
	if r := c.run(t, "INFO", "commandstats"); !strings.Contains(r, "cmdstat_bf.add:calls=1,") || !strings.Contains(r, "rejected_calls=3,failed_calls=0") {
		t.Fatalf("refusals in commandstats %q", r)
	}
	admin.run(t, "CONFIG", "SET", "maxmemory", "0")
	if r := c.run(t, "BF.ADD", "k", "b"); r != ":1\r\n" {
		t.Fatalf("after maxmemory 0: %q", r)
	}
	// Redis's own text, from the real server.
	if raddr := os_redis(); raddr != "" {
		r := dialProto(t, raddr, 2)
		r.run(t, "CONFIG", "SET", "maxmemory", "1")
		got := r.run(t, "SET", "ohbloom-oom-test", "x")
		r.run(t, "CONFIG", "SET", "maxmemory", "0")
		if got != oom {
			t.Fatalf("redis-server past maxmemory: %q", got)
		}
	}
}

func os_redis() string { return os.Getenv("OHBLOOM_REDIS_ADDR") }

// The memory limit counts what the server holds: a filter made, and the
// clients' buffers, appear in used_memory as they are allocated, and the
// next write past the limit is refused.
func TestMaxmemoryCountsFilters(t *testing.T) {
	s, addr := start(t, Config{})
	c := dialProto(t, addr, 2)
	before := s.memoryReport().used
	limit := before + 32<<20
	c.run(t, "CONFIG", "SET", "maxmemory", strconv.FormatInt(limit, 10))
	// 48 MB of filter: allowed, since the server held less than the
	// limit when it came (as in Redis), and then past it.
	if r := c.run(t, "BF.RESERVE", "big", "0.0001", "20000000", "NONSCALING"); r != "+OK\r\n" {
		t.Fatalf("BF.RESERVE under the limit: %q", r)
	}
	size := int64(s.store.get(0, "big").sizeBytes())
	if size < 40<<20 {
		t.Fatalf("the filter has %d bytes", size)
	}
	if used := s.memoryReport().used; used-before < size*9/10 {
		t.Fatalf("used_memory grew by %d for a filter of %d bytes", used-before, size)
	}
	if r := c.run(t, "BF.ADD", "big", "x"); !strings.HasPrefix(r, "-OOM") {
		t.Fatalf("a write past maxmemory: %q", r)
	}
	// Freed, and collected: writes again.
	c.run(t, "DEL", "big")
	runtime.GC()
	s.x.mem.stale()
	if r := c.run(t, "BF.ADD", "small", "x"); r != ":1\r\n" {
		t.Fatalf("a write once the filter is gone: %q", r)
	}
}

// A client that read a filter and went idle does not keep it: once
// another client deletes it, its memory leaves used_memory, and a write
// past maxmemory is allowed again.
func TestIdleClientKeepsNoDeletedFilter(t *testing.T) {
	s, addr := start(t, Config{})
	reader, writer := dialProto(t, addr, 2), dialProto(t, addr, 2)
	writer.run(t, "BF.RESERVE", "big", "0.0001", "20000000", "NONSCALING")
	size := int64(s.store.get(0, "big").sizeBytes())
	// Pipelined, so that the second command's lookup is the first's.
	if r := reader.run(t, "BF.EXISTS", "big", "x"); r != ":0\r\n" {
		t.Fatal(r)
	}
	runtime.GC()
	s.x.mem.stale()
	held := s.memoryReport().used
	if r := writer.run(t, "DEL", "big"); r != ":1\r\n" {
		t.Fatal(r)
	}
	runtime.GC()
	s.x.mem.stale()
	if freed := held - s.memoryReport().used; freed < size*9/10 {
		t.Fatalf("deleting a filter of %d bytes that an idle client read freed %d", size, freed)
	}
}

// After filling a filter, used_memory is within 5% of the process's RSS
// (docs/server.md has the measure at 1 GB).
func TestUsedMemoryNearRSS(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("fills 256 MB of filter; the race detector's shadow memory is RSS of its own")
	}
	if runtime.GOOS != "linux" {
		t.Skip("RSS is read from /proc")
	}
	s, addr := start(t, Config{})
	rdb := client(t, addr)
	ctx := context.Background()
	if err := rdb.BFReserveNonScaling(ctx, "big", 0.0001, 100_000_000).Err(); err != nil {
		t.Fatal(err)
	}
	if size := s.store.get(0, "big").sizeBytes(); size < 200<<20 {
		t.Fatalf("filter of %d bytes", size)
	}
	// Enough items that every page of the filter is written.
	for i := 0; i < 3_000_000; i += 50_000 {
		if errs := madd(t, rdb, "big", "i", i, 50_000); len(errs) > 0 {
			t.Fatal(errs[0])
		}
	}
	rdb.Do(ctx, "MEMORY", "PURGE") // what earlier tests in this process freed goes back
	_, f := infoFields(t, infoText(t, dialProto(t, addr, 2).run(t, "INFO", "memory")))
	used, _ := strconv.ParseFloat(f["Memory"]["used_memory"], 64)
	rss, _ := strconv.ParseFloat(f["Memory"]["used_memory_rss"], 64)
	if ratio := used / rss; ratio < 0.95 || ratio > 1.05 {
		t.Fatalf("used_memory %.0f, RSS %.0f: ratio %.3f", used, rss, ratio)
	}
	t.Logf("used_memory %.0f, RSS %.0f: ratio %.3f", used, rss, used/rss)
}

// sortedPairs sorts the pairs of a RESP2 map reply of bulk strings.
func sortedPairs(r string) string {
	lines := strings.Split(strings.TrimSuffix(r, "\r\n"), "\r\n")
	if len(lines) < 1 || !strings.HasPrefix(lines[0], "*") {
		return r
	}
	var pairs []string
	for i := 1; i+3 < len(lines); i += 4 {
		pairs = append(pairs, strings.Join(lines[i:i+4], "\r\n"))
	}
	slices.Sort(pairs)
	return lines[0] + "\r\n" + strings.Join(pairs, "\r\n")
}
