package server

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// infoFields parses INFO's text as Prometheus' redis_exporter does
// (exporter/info.go): "# Section" headers, then "key:value" lines; it
// fails on any line that is neither.
func infoFields(t *testing.T, text string) (sections []string, fields map[string]map[string]string) {
	t.Helper()
	fields = map[string]map[string]string{}
	cur := ""
	for _, line := range strings.Split(text, "\r\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "# "):
			cur = line[2:]
			sections = append(sections, cur)
			fields[cur] = map[string]string{}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok || cur == "" {
				t.Fatalf("INFO line %q is not key:value under a section", line)
			}
			fields[cur][k] = v
		}
	}
	return sections, fields
}

// infoText is the text of an INFO reply read from a raw connection in
// either protocol.
func infoText(t *testing.T, reply string) string {
	t.Helper()
	_, body, ok := strings.Cut(reply, "\r\n")
	if !ok {
		t.Fatalf("INFO reply %q", reply)
	}
	body = strings.TrimSuffix(body, "\r\n")
	return strings.TrimPrefix(body, "txt:")
}

// INFO's sections and their fields are Redis's: the same sections for
// no argument, "default", "all", "everything" and names in any case, and
// every field Redis prints in them (but its main thread's CPU, which a Go
// program has not).
func TestInfoSectionsMatchRedisServer(t *testing.T) {
	raddr := realRedis(t)
	_, addr := start(t, Config{})
	ours, theirs := dialProto(t, addr, 2), dialProto(t, raddr, 2)
	ours.run(t, "BF.ADD", "k", "x")
	for _, args := range [][]string{{"INFO"}, {"INFO", "default"}, {"INFO", "all"}, {"INFO", "everything"},
		{"INFO", "Server", "KEYSPACE"}, {"INFO", "commandstats"}, {"INFO", "errorstats", "cpu"}, {"INFO", "nosuchsection"}} {
		a, _ := infoFields(t, infoText(t, ours.run(t, args...)))
		b, _ := infoFields(t, infoText(t, theirs.run(t, args...)))
		if !slices.Equal(a, b) {
			t.Errorf("%v: sections %v, redis-server's %v", args, a, b)
		}
	}
	_, a := infoFields(t, infoText(t, ours.run(t, "INFO", "all")))
	_, b := infoFields(t, infoText(t, theirs.run(t, "INFO", "all")))
	for sec, fs := range b {
		if sec == "Commandstats" || sec == "Errorstats" || sec == "Keyspace" || sec == "Latencystats" || sec == "Modules" {
			continue
		}
		for f := range fs {
			if _, ok := a[sec][f]; !ok && f != "used_cpu_sys_main_thread" && f != "used_cpu_user_main_thread" {
				t.Errorf("INFO %s lacks %s", sec, f)
			}
		}
	}
	// RESP3: a verbatim string of format txt.
	if r := dialProto(t, addr, 3).run(t, "INFO", "cluster"); r != "=34\r\ntxt:# Cluster\r\ncluster_enabled:0\r\n\r\n" {
		t.Fatalf("RESP3 INFO cluster: %q", r)
	}
}

// What INFO counts: commands (calls, time, refusals, failures), errors by
// code, keyspace hits and misses, connections, keys; the figures a
// Prometheus exporter reads.
func TestInfoCounts(t *testing.T) {
	_, addr := start(t, Config{})
	c := dialProto(t, addr, 2)
	c.run(t, "CONFIG", "RESETSTAT")
	c.run(t, "BF.RESERVE", "k", "0.01", "1000")
	for range 3 {
		c.run(t, "BF.ADD", "k", "x")
	}
	c.run(t, "BF.EXISTS", "k", "x")          // a hit
	c.run(t, "BF.EXISTS", "nothere", "x")    // a miss
	c.run(t, "BF.EXISTS", "k")               // refused: arity
	c.run(t, "BF.INFO", "nothere")           // failed: ERR not found
	c.run(t, "BF.RESERVE", "k", "0.01", "1") // failed: ERR item exists
	c.run(t, "NOSUCHCOMMAND")
	_, f := infoFields(t, infoText(t, c.run(t, "INFO", "all")))
	stat := regexp.MustCompile(`^calls=(\d+),usec=(\d+),usec_per_call=(\d+\.\d\d),rejected_calls=(\d+),failed_calls=(\d+)$`)
	want := map[string][3]int{ // calls, rejected, failed
		"cmdstat_bf.add": {3, 0, 0}, "cmdstat_bf.exists": {2, 1, 0}, "cmdstat_bf.info": {1, 0, 1},
		"cmdstat_bf.reserve": {2, 0, 1}, "cmdstat_config|resetstat": {1, 0, 0},
	}
	for k, w := range want {
		m := stat.FindStringSubmatch(f["Commandstats"][k])
		if m == nil {
			t.Fatalf("%s: %q", k, f["Commandstats"][k])
		}
		calls, _ := strconv.Atoi(m[1])
		rejected, _ := strconv.Atoi(m[4])
		failed, _ := strconv.Atoi(m[5])
		if calls != w[0] || rejected != w[1] || failed != w[2] {
			t.Errorf("%s: %s, want calls %d rejected %d failed %d", k, f["Commandstats"][k], w[0], w[1], w[2])
		}
	}
	if n := len(f["Commandstats"]); n != len(want) {
		t.Errorf("commandstats has %d commands: %v", n, f["Commandstats"])
	}
	for k, v := range map[string]string{"errorstat_ERR": "count=4", "total_error_replies": "4",
		"keyspace_hits": "1", "keyspace_misses": "2", "total_commands_processed": "9", "connected_clients": "1",
		"db0": "keys=1,expires=0,avg_ttl=0,subexpiry=0", "role": "master", "aof_enabled": "0",
		"maxmemory_policy": "noeviction", "maxmemory": "0", "cluster_enabled": "0"} {
		found := false
		for _, sec := range f {
			if got, ok := sec[k]; ok {
				found = true
				if got != v {
					t.Errorf("%s:%s, want %s", k, got, v)
				}
			}
		}
		if !found {
			t.Errorf("INFO lacks %s", k)
		}
	}
	for _, k := range []string{"used_memory", "used_memory_rss", "used_memory_peak", "mem_fragmentation_ratio", "instantaneous_ops_per_sec", "total_net_input_bytes", "uptime_in_seconds", "rdb_last_save_time"} {
		v := ""
		for _, sec := range f {
			if x, ok := sec[k]; ok {
				v = x
			}
		}
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			t.Errorf("%s:%q is not a number", k, v)
		}
	}
	if f["Memory"]["used_memory_human"] == "" || !strings.HasSuffix(f["Memory"]["used_memory_human"], "M") {
		t.Errorf("used_memory_human %q", f["Memory"]["used_memory_human"])
	}
	// CONFIG RESETSTAT zeroed the connections received; one more counts.
	if got := f["Stats"]["total_connections_received"]; got != "0" {
		t.Errorf("total_connections_received after RESETSTAT %s", got)
	}
	dialProto(t, addr, 2).run(t, "PING")
	if _, f = infoFields(t, infoText(t, c.run(t, "INFO", "stats"))); f["Stats"]["total_connections_received"] != "1" {
		t.Errorf("total_connections_received after a connection %s", f["Stats"]["total_connections_received"])
	}
}

// CLIENT LIST, INFO, KILL, SETNAME, SETINFO, NO-EVICT, NO-TOUCH: Redis's
// fields, flags and errors.
func TestClientCommands(t *testing.T) {
	raddr := realRedis(t)
	_, addr := start(t, Config{})
	ours, theirs := dialProto(t, addr, 2), dialProto(t, raddr, 2)
	keys := func(line string) []string {
		var out []string
		for _, f := range strings.Fields(line) {
			k, _, _ := strings.Cut(f, "=")
			out = append(out, k)
		}
		return out
	}
	// Redis 7.2 added watch=, lib-name= and lib-ver=, CLIENT SETINFO and
	// NO-TOUCH; CI's Redis is 7.0.
	v72 := redisAtLeast(t, raddr, 7, 2)
	a := infoText(t, ours.run(t, "CLIENT", "INFO"))
	b := infoText(t, theirs.run(t, "CLIENT", "INFO"))
	ka := keys(a)
	if !v72 {
		ka = slices.DeleteFunc(ka, func(k string) bool { return k == "watch" || k == "lib-name" || k == "lib-ver" })
	}
	if !slices.Equal(ka, keys(b)) {
		t.Fatalf("CLIENT INFO fields:\nohbloom %v\nredis   %v", keys(a), keys(b))
	}
	for _, want := range []string{"flags=N", "multi=-1", "cmd=client|info", "user=default", "resp=2", "laddr=" + addr} {
		if !strings.Contains(a, want) {
			t.Errorf("CLIENT INFO %q lacks %s", a, want)
		}
	}
	// Errors as Redis's.
	for _, cmd := range [][]string{
		{"CLIENT", "SETNAME", "a b"}, {"CLIENT", "SETINFO", "lib-name", "a b"}, {"CLIENT", "SETINFO", "nosuch", "x"},
		{"CLIENT", "SETINFO", "LIB-NAME", "go-redis(9,x)"}, {"CLIENT", "KILL", "1.2.3.4:5"}, {"CLIENT", "KILL", "ID", "0"},
		{"CLIENT", "KILL", "ID", "x"}, {"CLIENT", "KILL", "USER", "nosuchuser"}, {"CLIENT", "KILL", "TYPE", "bogus"},
		{"CLIENT", "KILL", "SKIPME", "maybe"}, {"CLIENT", "KILL", "ID", "999999"}, {"CLIENT", "KILL", "ADDR"},
		{"CLIENT", "LIST", "TYPE", "bogus"}, {"CLIENT", "LIST", "ID", "x"}, {"CLIENT", "LIST", "bogus"},
		{"CLIENT", "NO-EVICT", "maybe"}, {"CLIENT", "NOSUCH"}, {"CLIENT"}, {"CLIENT", "GETNAME", "x"},
		{"CLIENT", "SETNAME", "me"}, {"CLIENT", "GETNAME"}, {"CLIENT", "SETNAME", ""}, {"CLIENT", "GETNAME"},
		{"CLIENT", "NO-EVICT", "on"}, {"CLIENT", "NO-TOUCH", "ON"},
	} {
		if !v72 && len(cmd) > 1 && (cmd[1] == "SETINFO" || cmd[1] == "NO-TOUCH") {
			ours.run(t, cmd...)
			continue
		}
		if x, y := ours.run(t, cmd...), theirs.run(t, cmd...); x != y {
			t.Errorf("%v:\nohbloom %q\nredis   %q", cmd, x, y)
		}
	}
	if a := infoText(t, ours.run(t, "CLIENT", "INFO")); !strings.Contains(a, " flags=eT ") || !strings.Contains(a, " lib-name=go-redis(9,x) ") {
		t.Errorf("flags of NO-EVICT and NO-TOUCH, lib-name: %q", a)
	}
	ours.run(t, "CLIENT", "NO-EVICT", "off")
	ours.run(t, "CLIENT", "NO-TOUCH", "off")
	// KILL: by id, by address, by user, the old form; SKIPME.
	victim := dialProto(t, addr, 2)
	victim.run(t, "CLIENT", "SETNAME", "victim")
	vid := strings.TrimSuffix(strings.TrimPrefix(victim.run(t, "CLIENT", "ID"), ":"), "\r\n")
	list := infoText(t, ours.run(t, "CLIENT", "LIST", "ID", vid))
	if !strings.Contains(list, "name=victim") || strings.Count(list, "\n") != 1 {
		t.Fatalf("CLIENT LIST ID %s: %q", vid, list)
	}
	if r := ours.run(t, "CLIENT", "KILL", "ID", vid); r != ":1\r\n" {
		t.Fatalf("CLIENT KILL ID: %q", r)
	}
	closed := func(c *compatConn) {
		t.Helper()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.r.ReadByte(); err == nil {
			t.Fatal("a killed connection stayed open")
		}
	}
	closed(victim)
	victim = dialProto(t, addr, 2)
	victim.run(t, "PING") // served: registered
	if r := ours.run(t, "CLIENT", "KILL", victim.LocalAddr().String()); r != "+OK\r\n" {
		t.Fatalf("CLIENT KILL addr: %q", r)
	}
	closed(victim)
	ours.run(t, "ACL", "SETUSER", "k1", "on", "nopass", "+@all", "~*")
	v1, v2 := dialProto(t, addr, 2), dialProto(t, addr, 2)
	v1.run(t, "AUTH", "k1", "x")
	v2.run(t, "AUTH", "k1", "y")
	if r := ours.run(t, "CLIENT", "KILL", "USER", "k1", "LADDR", addr); r != ":2\r\n" {
		t.Fatalf("CLIENT KILL USER: %q", r)
	}
	closed(v1)
	closed(v2)
	if r := ours.run(t, "CLIENT", "KILL", "LADDR", addr); r != ":0\r\n" {
		t.Fatalf("CLIENT KILL skips the caller: %q", r)
	}
	if r := ours.run(t, "CLIENT", "KILL", "LADDR", addr, "SKIPME", "no"); r != ":1\r\n" {
		t.Fatalf("CLIENT KILL SKIPME no: %q", r)
	}
	closed(ours)
}

// SLOWLOG keeps the commands slower than slowlog-log-slower-than, with
// Redis's entry (passwords hidden); LATENCY the ones past
// latency-monitor-threshold.
func TestSlowlogAndLatency(t *testing.T) {
	_, addr := start(t, Config{})
	c := dialProto(t, addr, 2)
	rdb := client(t, addr)
	ctx := context.Background()
	c.run(t, "CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "3")
	c.run(t, "CLIENT", "SETNAME", "slow1")
	c.run(t, "SLOWLOG", "RESET")
	long := strings.Repeat("x", 200)
	c.run(t, "BF.ADD", "k", long)
	c.run(t, "AUTH", "default", "secret")
	args := []string{"BF.MADD", "k"}
	for i := range 40 {
		args = append(args, fmt.Sprint(i))
	}
	c.run(t, args...)
	c.run(t, "CONFIG", "SET", "slowlog-log-slower-than", "-1")
	entries, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil || len(entries) != 3 {
		t.Fatalf("SLOWLOG GET -1: %v %v", entries, err)
	}
	// Newest first; the CONFIG SET that turned it off is not in it.
	madd := entries[0]
	if len(madd.Args) != 32 || madd.Args[31] != "... (11 more arguments)" || madd.ClientName != "slow1" || madd.ClientAddr != c.LocalAddr().String() {
		t.Fatalf("slowlog entry of a long command: %+v", madd)
	}
	if auth := entries[1]; !slices.Equal(auth.Args, []string{"AUTH", "(redacted)", "(redacted)"}) || auth.ID != madd.ID-1 {
		t.Fatalf("slowlog entry of AUTH: %+v", auth)
	}
	if add := entries[2]; !slices.Equal(add.Args, []string{"BF.ADD", "k", strings.Repeat("x", 128) + "... (72 more bytes)"}) {
		t.Fatalf("slowlog entry of a long argument: %+v", add)
	}
	if n, _ := rdb.Do(ctx, "SLOWLOG", "LEN").Int(); n != 3 {
		t.Fatalf("SLOWLOG LEN %d", n)
	}
	if r := c.run(t, "SLOWLOG", "GET", "-2"); r != "-ERR count should be greater than or equal to -1\r\n" {
		t.Fatal(r)
	}
	c.run(t, "SLOWLOG", "RESET")
	if r := c.run(t, "SLOWLOG", "LEN"); r != ":0\r\n" {
		t.Fatal(r)
	}
	// A large BF.MADD takes well over 1 ms.
	if r := c.run(t, "LATENCY", "DOCTOR"); !strings.Contains(r, "Latency monitoring is disabled") {
		t.Fatalf("LATENCY DOCTOR off: %q", r)
	}
	c.run(t, "CONFIG", "SET", "latency-monitor-threshold", "1")
	items := []any{"BF.MADD", "big"}
	for i := range 200_000 {
		items = append(items, i)
	}
	start := time.Now()
	if err := rdb.Do(ctx, items...).Err(); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 2*time.Millisecond {
		t.Skip("the BF.MADD was too fast to cross 1 ms")
	}
	latest, err := rdb.Do(ctx, "LATENCY", "LATEST").Slice()
	if err != nil || len(latest) != 1 {
		t.Fatalf("LATENCY LATEST: %v %v", latest, err)
	}
	ev := latest[0].([]any)
	if ev[0] != "command" || ev[2].(int64) < 1 || ev[3].(int64) < ev[2].(int64) {
		t.Fatalf("LATENCY LATEST event %v", ev)
	}
	if h, _ := rdb.Do(ctx, "LATENCY", "HISTORY", "command").Slice(); len(h) != 1 {
		t.Fatalf("LATENCY HISTORY %v", h)
	}
	if r := c.run(t, "LATENCY", "DOCTOR"); !strings.Contains(r, "1. command: 1 latency spikes") {
		t.Fatalf("LATENCY DOCTOR: %q", r)
	}
	if n, _ := rdb.Do(ctx, "LATENCY", "RESET").Int(); n != 1 {
		t.Fatalf("LATENCY RESET %d", n)
	}
}

// COMMAND and its subcommands answer as redis-server does for the
// commands both serve: the same entries, byte for byte, in both
// protocols (with Redis 7.0, as CI has, for the commands whose metadata
// 7.4 did not change; COMMAND DOCS with 7.4, whose summaries 7.2
// rewrote).
func TestCommandMatchesRedisServer(t *testing.T) {
	raddr := realRedis(t)
	_, addr := start(t, Config{})
	v74 := redisAtLeast(t, raddr, 7, 4)
	same := []string{"ping", "echo", "auth", "hello", "quit", "select", "multi", "exec", "discard", "watch", "unwatch",
		"del", "unlink", "exists", "type", "keys", "dbsize", "flushall", "flushdb", "save", "bgsave", "lastsave",
		"info", "time", "role", "config|get", "config|set", "client|list", "client|kill", "client|info", "client|id",
		"client|getname", "client|no-evict", "acl|getuser", "acl|cat", "acl|log", "acl|list", "acl|whoami",
		"object|encoding", "object|idletime", "object|freq", "object|refcount", "memory|usage", "memory|stats",
		"memory|doctor", "slowlog|get", "slowlog|len", "slowlog|reset", "latency|latest", "latency|history",
		"command|info", "command|docs", "command|count", "command|list", "module|list",
		"expire", "pexpire", "expireat", "pexpireat", "ttl", "pttl", "expiretime", "pexpiretime", "persist",
		"rename", "renamenx", "copy", "move", "swapdb"}
	changed := []string{"scan", "config|resetstat", "config|rewrite", "client|setname", "client|setinfo",
		"client|no-touch", "acl|setuser", "acl|deluser", "command|getkeys"}
	names := same
	if v74 {
		names = append(names, changed...)
	}
	for _, proto := range []int{2, 3} {
		ours, theirs := dialProto(t, addr, proto), dialProto(t, raddr, proto)
		for _, n := range names {
			if a, b := ours.run(t, "COMMAND", "INFO", n), theirs.run(t, "COMMAND", "INFO", n); a != b {
				t.Errorf("RESP%d COMMAND INFO %s:\nohbloom %q\nredis   %q", proto, n, a, b)
			}
			if !v74 {
				continue
			}
			if a, b := ours.run(t, "COMMAND", "DOCS", n), theirs.run(t, "COMMAND", "DOCS", n); a != b {
				t.Errorf("RESP%d COMMAND DOCS %s:\nohbloom %q\nredis   %q", proto, n, a, b)
			}
		}
		for _, cmd := range [][]string{
			{"COMMAND", "INFO", "nosuchcommand", "PING"}, {"COMMAND", "GETKEYS", "DEL", "a", "b"},
			{"COMMAND", "GETKEYSANDFLAGS", "DEL", "a", "b"}, {"COMMAND", "GETKEYS", "PING"},
			{"COMMAND", "GETKEYS", "NOSUCH", "x"}, {"COMMAND", "GETKEYS", "EXISTS"}, {"COMMAND", "GETKEYS", "MEMORY", "USAGE", "k"},
			{"COMMAND", "GETKEYS", "CONFIG", "GET", "x"}, {"COMMAND", "GETKEYS", "RENAME", "a", "b"},
			{"COMMAND", "GETKEYSANDFLAGS", "COPY", "a", "b", "DB", "2"}, {"COMMAND", "GETKEYS", "SWAPDB", "0", "1"}, {"COMMAND", "LIST", "FILTERBY", "bogus", "x"},
			{"COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuchcategory"}, {"COMMAND", "LIST", "FILTERBY", "MODULE", "nosuch"},
			{"COMMAND", "NOSUCH"}, {"CONFIG", "NOSUCH"}, {"CONFIG"}, {"OBJECT", "ENCODING", "nothere"},
			{"MEMORY", "USAGE", "nothere"}, {"MEMORY", "USAGE", "k", "SAMPLES"}, {"MEMORY", "USAGE", "k", "SAMPLES", "-1"},
			{"SLOWLOG", "GET", "x"}, {"LATENCY", "HISTORY", "nosuchevent"}, {"ROLE"},
		} {
			if !v74 && len(cmd) == 3 && cmd[1] == "GETKEYS" {
				continue // Redis 7.0's COMMAND GETKEYS took at least 2 arguments
			}
			if a, b := ours.run(t, cmd...), theirs.run(t, cmd...); a != b {
				t.Errorf("RESP%d %v:\nohbloom %q\nredis   %q", proto, cmd, a, b)
			}
		}
		// Containers list the subcommands served; each is Redis's.
		if r := ours.run(t, "COMMAND", "COUNT"); r != fmt.Sprintf(":%d\r\n", len(commands)) {
			t.Errorf("COMMAND COUNT %q", r)
		}
	}
	// RedisBloom's commands as Redis 7.4 registers a module's: arity -1,
	// key at 1, full access; the categories RedisBloom declares.
	c := dialProto(t, addr, 2)
	want := "*1\r\n*10\r\n$6\r\nbf.add\r\n:-1\r\n*3\r\n+write\r\n+denyoom\r\n+module\r\n:1\r\n:1\r\n:1\r\n*2\r\n+@write\r\n+@bloom\r\n*0\r\n" +
		"*1\r\n*6\r\n$5\r\nflags\r\n*3\r\n+RW\r\n+access\r\n+update\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n" +
		"$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n"
	if r := c.run(t, "COMMAND", "INFO", "BF.ADD"); r != want {
		t.Errorf("COMMAND INFO BF.ADD %q", r)
	}
	if r := c.run(t, "COMMAND", "DOCS", "cf.del"); r != "*2\r\n$6\r\ncf.del\r\n*4\r\n$5\r\ngroup\r\n$6\r\nmodule\r\n$6\r\nmodule\r\n$2\r\nbf\r\n" {
		t.Errorf("COMMAND DOCS cf.del %q", r)
	}
	if r := c.run(t, "COMMAND", "GETKEYS", "BF.MADD", "k", "a", "b"); r != "*1\r\n$1\r\nk\r\n" {
		t.Errorf("COMMAND GETKEYS BF.MADD %q", r)
	}
	list := c.run(t, "COMMAND", "LIST", "FILTERBY", "MODULE", "bf")
	if !strings.HasPrefix(list, "*24\r\n") || !strings.Contains(list, "$9\r\nbf.exists\r\n") {
		t.Errorf("COMMAND LIST FILTERBY MODULE bf %q", list)
	}
	if r := c.run(t, "COMMAND", "LIST", "FILTERBY", "ACLCAT", "cuckoo"); !strings.HasPrefix(r, "*14\r\n") {
		t.Errorf("COMMAND LIST FILTERBY ACLCAT cuckoo %q", r)
	}
}

// The clients read COMMAND: go-redis (its command-info cache, which its
// cluster client uses for key positions) and redis-py.
func TestClientsReadCommand(t *testing.T) {
	_, addr := start(t, Config{})
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		rdb := client(t, addr, func(o *redis.Options) { o.Protocol = proto })
		info, err := rdb.Command(ctx).Result()
		if err != nil {
			t.Fatalf("RESP%d go-redis COMMAND: %v", proto, err)
		}
		if len(info) != len(commands) {
			t.Fatalf("RESP%d go-redis read %d commands of %d", proto, len(info), len(commands))
		}
		add := info["bf.add"]
		if add == nil || add.FirstKeyPos != 1 || add.LastKeyPos != 1 || add.StepCount != 1 || add.ReadOnly || !slices.Contains(add.Flags, "denyoom") {
			t.Fatalf("RESP%d go-redis bf.add: %+v", proto, add)
		}
		if del := info["del"]; del == nil || del.FirstKeyPos != 1 || del.LastKeyPos != -1 || !slices.Contains(del.ACLFlags, "@keyspace") {
			t.Fatalf("RESP%d go-redis del: %+v", proto, del)
		}
		if ex := info["bf.exists"]; ex == nil || !ex.ReadOnly {
			t.Fatalf("RESP%d go-redis bf.exists: %+v", proto, ex)
		}
		keys, err := rdb.CommandGetKeys(ctx, "BF.MEXISTS", "blocks", "a", "b").Result()
		if err != nil || !slices.Equal(keys, []string{"blocks"}) {
			t.Fatalf("RESP%d go-redis COMMAND GETKEYS: %v %v", proto, keys, err)
		}
		if n, err := rdb.Do(ctx, "COMMAND", "COUNT").Int(); err != nil || n != len(commands) {
			t.Fatalf("COMMAND COUNT %d %v", n, err)
		}
	}
	py := redisPyPath()
	if py == "" {
		return
	}
	host, port := splitAddr(t, addr)
	script := `
import redis, sys
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]))
cmds = r.command()
assert cmds["bf.add"]["first_key_pos"] == 1 and cmds["bf.add"]["arity"] == -1, cmds["bf.add"]
assert "denyoom" in cmds["bf.add"]["flags"], cmds["bf.add"]
assert r.command_getkeys("DEL", "a", "b") == ["a", "b"], r.command_getkeys("DEL", "a", "b")
assert r.command_count() == len(cmds)
print("ok", len(cmds))
`
	out, err := exec.Command(py, "-c", script, host, port).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok ") {
		t.Fatalf("redis-py COMMAND: %v %s", err, out)
	}
}

// TIME, ROLE, HELLO's modules, MODULE LIST, OBJECT and MEMORY.
func TestServerCommands(t *testing.T) {
	s, addr := start(t, Config{})
	ctx := context.Background()
	rdb := client(t, addr)
	before := time.Now()
	tm, err := rdb.Time(ctx).Result()
	if err != nil || tm.Before(before.Add(-time.Second)) || tm.After(time.Now().Add(time.Second)) {
		t.Fatalf("TIME %v %v", tm, err)
	}
	c := dialProto(t, addr, 2)
	if r := c.run(t, "ROLE"); r != "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n" {
		t.Fatalf("ROLE %q", r)
	}
	if r := c.run(t, "MODULE", "LIST"); !strings.HasPrefix(r, "*1\r\n*8\r\n$4\r\nname\r\n$2\r\nbf\r\n$3\r\nver\r\n:20820\r\n$4\r\npath\r\n") {
		t.Fatalf("MODULE LIST %q", r)
	}
	rdb.BFReserve(ctx, "f", 0.01, 100000)
	if r := c.run(t, "OBJECT", "ENCODING", "f"); r != "$3\r\nraw\r\n" {
		t.Fatalf("OBJECT ENCODING %q", r)
	}
	if r := c.run(t, "OBJECT", "REFCOUNT", "f"); r != ":1\r\n" {
		t.Fatalf("OBJECT REFCOUNT %q", r)
	}
	if r := c.run(t, "OBJECT", "FREQ", "f"); !strings.HasPrefix(r, "-ERR An LFU maxmemory policy is not selected") {
		t.Fatalf("OBJECT FREQ %q", r)
	}
	if r := c.run(t, "OBJECT", "IDLETIME", "f"); r != ":0\r\n" {
		t.Fatalf("OBJECT IDLETIME of a key just used %q", r)
	}
	// The key's access time is seconds since start; a key idle for 2 s
	// reads 2 (the clock is the server's own, moved here).
	e := s.store.get(0, "f")
	e.access.Store(s.x.clock() - 2)
	if r := c.run(t, "OBJECT", "IDLETIME", "f"); r != ":2\r\n" {
		t.Fatalf("OBJECT IDLETIME of a key idle for 2 s %q", r)
	}
	c.run(t, "BF.EXISTS", "f", "x")
	if r := c.run(t, "OBJECT", "IDLETIME", "f"); r != ":0\r\n" {
		t.Fatalf("OBJECT IDLETIME after a read %q", r)
	}
	e.access.Store(s.x.clock() - 2)
	c.run(t, "CLIENT", "NO-TOUCH", "on")
	c.run(t, "BF.EXISTS", "f", "x")
	if r := c.run(t, "OBJECT", "IDLETIME", "f"); r != ":2\r\n" {
		t.Fatalf("OBJECT IDLETIME after a NO-TOUCH read %q", r)
	}
	usage, err := rdb.MemoryUsage(ctx, "f").Result()
	if size := int64(e.sizeBytes()); err != nil || usage < size || usage > size+1024 {
		t.Fatalf("MEMORY USAGE %d %v, filter %d bytes", usage, err, size)
	}
	stats, err := rdb.Do(ctx, "MEMORY", "STATS").Result()
	if m, ok := stats.(map[any]any); err != nil || !ok || m["keys.count"] != int64(1) || m["dataset.bytes"] != int64(e.sizeBytes()) {
		t.Fatalf("MEMORY STATS %v %v", stats, err)
	}
	if r := c.run(t, "MEMORY", "DOCTOR"); !strings.HasPrefix(r, "$") || !strings.Contains(r, "Sam") {
		t.Fatalf("MEMORY DOCTOR %q", r)
	}
	if r := c.run(t, "MEMORY", "PURGE"); r != "+OK\r\n" {
		t.Fatalf("MEMORY PURGE %q", r)
	}
	if r := c.run(t, "CLIENT", "HELP"); !strings.HasPrefix(r, "*") {
		t.Fatalf("CLIENT HELP %q", r)
	}
	help, _ := rdb.Do(ctx, "OBJECT", "HELP").StringSlice()
	if len(help) == 0 || help[0] != "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" || help[len(help)-1] != "    Print this help." {
		t.Fatalf("OBJECT HELP %q", help)
	}
}

// The limits of unauthenticated clients apply on every listener the
// server serves, and follow the default user: a server without a password
// that gets one holds new connections to them.
func TestUnauthLimitsFollowTheDefaultUser(t *testing.T) {
	_, addr := start(t, Config{})
	admin := dialProto(t, addr, 2)
	admin.run(t, "CONFIG", "SET", "requirepass", "pw")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Redis's limit before AUTH: at most 10 arguments.
	args := make([]string, 12)
	for i := range args {
		args[i] = "x"
	}
	c.Write([]byte(resp(args...)))
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 256)
	n, _ := c.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "-ERR Protocol error: unauthenticated multibulk length") {
		t.Fatalf("12 arguments before AUTH: %q", buf[:n])
	}
}
