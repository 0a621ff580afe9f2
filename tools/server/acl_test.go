package server

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// realRedis is the address of the redis-server CI starts
// (OHBLOOM_REDIS_ADDR), whose replies generic commands are compared with.
func realRedis(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("OHBLOOM_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must set OHBLOOM_REDIS_ADDR (.ci/run starts redis-server)")
		}
		t.Skip("OHBLOOM_REDIS_ADDR is not set")
	}
	return addr
}

// A user allowed only reads gets BF.EXISTS's answers and NOPERM for
// BF.ADD, with Redis's text, whether reads are its category or single
// commands, in both protocols; a user held to ~blocks:* reads no other
// key.
func TestACLReaderUser(t *testing.T) {
	_, addr := start(t, Config{})
	admin := dial(t, addr)
	for _, cmd := range [][]string{
		{"BF.ADD", "blocks:alice", "bob"},
		{"BF.ADD", "other", "x"},
		{"ACL", "SETUSER", "reader", "on", ">rpw", "~*", "+@read"},
		{"ACL", "SETUSER", "single", "on", ">spw", "~*", "+bf.exists", "+bf.mexists"},
		{"ACL", "SETUSER", "blocks", "on", ">bpw", "~blocks:*", "+@all"},
	} {
		if r := admin.do(t, cmd...); r[0] == '-' {
			t.Fatalf("%v: %s", cmd, r)
		}
	}
	for _, proto := range []int{2, 3} {
		for _, u := range [][2]string{{"reader", "rpw"}, {"single", "spw"}} {
			c := dialProto(t, addr, 2)
			if r := c.run(t, "AUTH", u[0], u[1]); r != "+OK\r\n" {
				t.Fatalf("AUTH %s: %q", u[0], r)
			}
			if proto == 3 {
				c.run(t, "HELLO", "3")
			}
			if r := c.run(t, "BF.EXISTS", "blocks:alice", "bob"); r != boolReply(proto, true) {
				t.Fatalf("RESP%d %s: BF.EXISTS: %q", proto, u[0], r)
			}
			if r := c.run(t, "BF.MEXISTS", "other", "x", "y"); r != "*2\r\n"+boolReply(proto, true)+boolReply(proto, false) {
				t.Fatalf("RESP%d %s: BF.MEXISTS: %q", proto, u[0], r)
			}
			want := "-NOPERM User " + u[0] + " has no permissions to run the 'bf.add' command\r\n"
			if r := c.run(t, "BF.ADD", "blocks:alice", "carol"); r != want {
				t.Fatalf("RESP%d %s: BF.ADD: %q, want %q", proto, u[0], r, want)
			}
			if r := c.run(t, "bf.add", "x", "y"); r != want {
				t.Fatalf("RESP%d %s: bf.add: %q", proto, u[0], r)
			}
		}
		c := dialProto(t, addr, proto)
		if r := c.run(t, "HELLO", fmt.Sprint(proto), "AUTH", "blocks", "bpw"); r[0] == '-' {
			t.Fatalf("HELLO AUTH blocks: %q", r)
		}
		if r := c.run(t, "BF.EXISTS", "blocks:alice", "bob"); r != boolReply(proto, true) {
			t.Fatalf("blocks user on its key: %q", r)
		}
		if r := c.run(t, "BF.EXISTS", "other", "x"); r != "-NOPERM No permissions to access a key\r\n" {
			t.Fatalf("blocks user on another key: %q", r)
		}
		if r := c.run(t, "BF.ADD", fmt.Sprint("blocks:new", proto), "x"); r != boolReply(proto, true) {
			t.Fatalf("blocks user adding to its keys: %q", r)
		}
		if r := c.run(t, "DEL", "blocks:new", "other"); r != "-NOPERM No permissions to access a key\r\n" {
			t.Fatalf("DEL of a key it may not touch: %q", r)
		}
	}
	// The same denials from the clients.
	ctx := context.Background()
	rdb := client(t, addr, func(o *redis.Options) { o.Username, o.Password = "reader", "rpw" })
	if ok, err := rdb.BFExists(ctx, "blocks:alice", "bob").Result(); err != nil || !ok {
		t.Fatalf("go-redis reader BFExists: %v %v", ok, err)
	}
	wantErr(t, rdb.BFAdd(ctx, "blocks:alice", "x").Err(), "NOPERM User reader has no permissions to run the 'bf.add' command")
	if n, err := rdb.Exists(ctx, "blocks:alice").Result(); err != nil || n != 1 {
		t.Fatalf("go-redis reader EXISTS: %d %v", n, err)
	}
	wantErr(t, rdb.Do(ctx, "ACL", "SETUSER", "x").Err(), "NOPERM User reader has no permissions to run the 'acl|setuser' command")
	if cli := redisCLIPath(); cli != "" {
		host, port := splitAddr(t, addr)
		out, _ := exec.Command(cli, "-h", host, "-p", port, "--user", "reader", "--pass", "rpw", "--no-auth-warning", "BF.ADD", "k", "v").CombinedOutput()
		if got := strings.TrimSpace(string(out)); got != "NOPERM User reader has no permissions to run the 'bf.add' command" {
			t.Fatalf("redis-cli as reader: %q", got)
		}
	}
	if py := redisPyPath(); py != "" {
		host, port := splitAddr(t, addr)
		script := `
import redis, sys
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), username="reader", password="rpw")
assert r.execute_command("BF.EXISTS", "blocks:alice", "bob") == 1
try:
    r.execute_command("BF.ADD", "blocks:alice", "x")
    print("added")
except redis.exceptions.NoPermissionError as e:
    print(e)
`
		out, err := exec.Command(py, "-c", script, host, port).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "User reader has no permissions to run the 'bf.add' command" {
			t.Fatalf("redis-py as reader: %v %q", err, out)
		}
	}
}

// redisAtLeast reports whether the real redis-server's version is at
// least major.minor: CI's is Debian's 7.0, whose ACL texts and rule
// descriptions 7.2 changed to what 7.4 and this server answer.
func redisAtLeast(t *testing.T, addr string, major, minor int) bool {
	t.Helper()
	c := dialProto(t, addr, 2)
	info := c.run(t, "INFO", "server")
	i := strings.Index(info, "redis_version:")
	if i < 0 {
		t.Fatalf("INFO server of %s: %q", addr, info)
	}
	var ma, mi int
	fmt.Sscanf(info[i+len("redis_version:"):], "%d.%d", &ma, &mi)
	return ma > major || ma == major && mi >= minor
}

// as74 rewrites Redis 7.0's NOPERM texts into 7.2's, which 7.4 and this
// server answer: "this user" became the user's name, and a key's denial
// lost its detail.
func as74(reply, user string) string {
	reply = strings.ReplaceAll(reply, "NOPERM this user has no permissions to run", "NOPERM User "+user+" has no permissions to run")
	reply = strings.ReplaceAll(reply, "NOPERM this user has no permissions to access one of the keys used as arguments", "NOPERM No permissions to access a key")
	return reply
}

func redisCLIPath() string {
	p, _ := exec.LookPath("redis-cli")
	return p
}

// redisPyPath is a python3 with redis-py, or "": Debian's first, as
// Debian's python3-redis serves it and it may not be first on the PATH
// (pyenv).
func redisPyPath() string {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import redis").Run() == nil {
			return path
		}
	}
	return ""
}

func splitAddr(t *testing.T, addr string) (string, string) {
	t.Helper()
	i := strings.LastIndexByte(addr, ':')
	return addr[:i], addr[i+1:]
}

// AUTH and HELLO's AUTH as Redis 7 answers them, with and without a
// password for the default user, and a disabled user.
func TestAuthForms(t *testing.T) {
	_, addr := start(t, Config{})
	c := dialProto(t, addr, 2)
	for _, x := range []struct {
		args []string
		want string
	}{
		{[]string{"AUTH", "pw"}, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"},
		{[]string{"AUTH", "default", "anything"}, "+OK\r\n"}, // the default user has nopass
		{[]string{"AUTH", "nobody", "x"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{[]string{"AUTH", "a", "b", "c"}, "-ERR syntax error\r\n"},
		{[]string{"ACL", "SETUSER", "off1", "off", ">p"}, "+OK\r\n"},
		{[]string{"AUTH", "off1", "p"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{[]string{"ACL", "WHOAMI"}, "$7\r\ndefault\r\n"},
		{[]string{"ACL", "SETUSER", "on1", "on", ">p1", ">p2", "+@all", "~*"}, "+OK\r\n"},
		{[]string{"AUTH", "on1", "p2"}, "+OK\r\n"},
		{[]string{"ACL", "WHOAMI"}, "$3\r\non1\r\n"},
		{[]string{"ACL", "SETUSER", "on1", "<p2"}, "+OK\r\n"},
		{[]string{"AUTH", "on1", "p2"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{[]string{"ACL", "WHOAMI"}, "$3\r\non1\r\n"}, // a failed AUTH keeps the user
	} {
		if r := c.run(t, x.args...); r != x.want {
			t.Fatalf("%v: %q, want %q", x.args, r, x.want)
		}
	}
	if r := c.run(t, "HELLO", "3", "AUTH", "default", "whatever"); !strings.HasPrefix(r, "%7\r\n") {
		t.Fatalf("HELLO AUTH of the nopass default user: %q", r)
	}
	// requirepass is the default user's password; CONFIG SET changes it.
	if r := c.run(t, "CONFIG", "SET", "requirepass", "secret"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	d := dialProto(t, addr, 2)
	if r := d.run(t, "PING"); r != "-NOAUTH Authentication required.\r\n" {
		t.Fatalf("after CONFIG SET requirepass: %q", r)
	}
	if r := d.run(t, "AUTH", "nope"); r != "-WRONGPASS invalid username-password pair or user is disabled.\r\n" {
		t.Fatal(r)
	}
	if r := d.run(t, "AUTH", "secret"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	if r := c.run(t, "ACL", "GETUSER", "default"); !strings.Contains(r, hashPassword([]byte("secret"))) {
		t.Fatalf("the default user's password hash: %q", r)
	}
	if r := d.run(t, "CONFIG", "GET", "requirepass"); r != "*2\r\n$11\r\nrequirepass\r\n$6\r\nsecret\r\n" {
		t.Fatalf("CONFIG GET requirepass: %q", r)
	}
	if r := c.run(t, "CONFIG", "SET", "requirepass", ""); r != "+OK\r\n" {
		t.Fatal(r)
	}
	if r := dialProto(t, addr, 2).run(t, "PING"); r != "+PONG\r\n" {
		t.Fatalf("after requirepass \"\": %q", r)
	}
}

// ACL DELUSER closes the deleted user's connections; the default user
// stays.
func TestACLDeluserClosesItsClients(t *testing.T) {
	_, addr := start(t, Config{})
	admin := dialProto(t, addr, 2)
	admin.run(t, "ACL", "SETUSER", "gone", "on", ">p", "+@all", "~*")
	victim := dialProto(t, addr, 2)
	if r := victim.run(t, "AUTH", "gone", "p"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	if r := admin.run(t, "ACL", "DELUSER", "default"); r != "-ERR The 'default' user cannot be removed\r\n" {
		t.Fatal(r)
	}
	if r := admin.run(t, "ACL", "DELUSER", "gone", "never"); r != ":1\r\n" {
		t.Fatal(r)
	}
	victim.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := victim.r.ReadByte(); err == nil {
		t.Fatal("the deleted user's connection stayed open")
	}
}

// The ACL commands answer as the real redis-server does, byte for byte,
// in both protocols, for the same rules: ACL LIST and GETUSER's
// descriptions (rule order, compaction, key permissions, selectors), the
// errors of bad rules, CAT of unknown categories, DRYRUN.
func TestACLMatchesRedisServer(t *testing.T) {
	raddr := realRedis(t)
	_, addr := start(t, Config{})
	users := []string{"t_a", "t_b", "t_c", "t_d"}
	cleanup := func() {
		c := dialProto(t, raddr, 2)
		c.run(t, append([]string{"ACL", "DELUSER"}, users...)...)
	}
	cleanup()
	t.Cleanup(cleanup)
	script := [][]string{
		{"ACL", "SETUSER", "t_a"},
		{"ACL", "SETUSER", "t_a", "on", ">pw1", ">pw2", "~k*", "%R~r*", "%W~w*", "+@read", "-@dangerous", "+ping", "+client|list", "-keys"},
		{"ACL", "SETUSER", "t_a", "+@read"}, // moves the category rule to the end
		{"ACL", "SETUSER", "t_b", "on", "nopass", "allkeys", "allcommands", "-flushall", "-config|set"},
		{"ACL", "SETUSER", "t_c", "on", "#" + hashPassword([]byte("x")), "resetchannels", "&chan*", "+@all", "(~sel* +@read)", "(%R~x* +ping)"},
		{"ACL", "SETUSER", "t_d", "reset"},
		{"ACL", "SETUSER", "t_d", "on", ">p", "~*", "+select|0", "+@connection", "-@all", "+info"},
		{"ACL", "SETUSER", "t_a", "nosuchrule"},
		{"ACL", "SETUSER", "t_a", "+nosuchcommand"},
		{"ACL", "SETUSER", "t_a", "+@nosuchcategory"},
		{"ACL", "SETUSER", "t_a", "#abc"},
		{"ACL", "SETUSER", "t_a", "<notapassword"},
		{"ACL", "SETUSER", "t_b", "~x"},
		{"ACL", "SETUSER", "t_a", "(~x", "+get"},
		{"ACL", "SETUSER", "t_a", "+config|get|x"},
		{"ACL", "SETUSER", "bad name"},
		{"ACL", "GETUSER", "t_a"},
		{"ACL", "GETUSER", "t_b"},
		{"ACL", "GETUSER", "t_c"},
		{"ACL", "GETUSER", "t_d"},
		{"ACL", "GETUSER", "nosuchuser"},
		{"ACL", "CAT", "nosuchcategory"},
		{"ACL", "DRYRUN", "t_a", "keys", "*"},
		{"ACL", "DRYRUN", "t_a", "exists", "nothere"},
		{"ACL", "DRYRUN", "t_a", "exists", "k1"},
		{"ACL", "DRYRUN", "t_a", "del", "w1"},
		{"ACL", "DRYRUN", "t_a", "ping"},
		{"ACL", "DRYRUN", "nosuchuser", "ping"},
		{"ACL", "DRYRUN", "t_a", "nosuchcommand"},
		{"ACL", "DELUSER", "t_d", "nosuchuser"},
		{"ACL", "LOG", "nonumber"},
		{"ACL", "GENPASS", "0"},
		{"ACL", "SAVE"},
		{"ACL", "LOAD"},
	}
	// Redis 7.0 describes rules from its bitmaps (7.2 keeps them as
	// given) and has no sanitize-payload flag in descriptions, and its
	// DRYRUN says "This user": those are compared with 7.2 and later.
	v72 := redisAtLeast(t, raddr, 7, 2)
	for _, proto := range []int{2, 3} {
		ours, theirs := dialProto(t, addr, proto), dialProto(t, raddr, proto)
		for _, cmd := range script {
			a, b := ours.run(t, cmd...), theirs.run(t, cmd...)
			if !v72 && (cmd[1] == "GETUSER" || cmd[1] == "DRYRUN") {
				continue
			}
			if a != b {
				t.Errorf("RESP%d %v:\nohbloom %q\nredis   %q", proto, cmd, a, b)
			}
		}
		// ACL LIST: our lines for these users equal Redis's.
		pick := func(r string) []string {
			var out []string
			for _, l := range strings.Split(r, "\r\n") {
				if strings.HasPrefix(l, "user t_") {
					out = append(out, l)
				}
			}
			return out
		}
		if a, b := pick(ours.run(t, "ACL", "LIST")), pick(theirs.run(t, "ACL", "LIST")); v72 && !slices.Equal(a, b) {
			t.Errorf("RESP%d ACL LIST:\nohbloom %q\nredis   %q", proto, a, b)
		}
		ours.run(t, "ACL", "SETUSER", "t_d", "on", ">p", "~*", "+select|0", "+@connection", "-@all", "+info")
		theirs.run(t, "ACL", "SETUSER", "t_d", "on", ">p", "~*", "+select|0", "+@connection", "-@all", "+info")
	}
	// Denials as a user: the texts of NOPERM.
	for _, proto := range []int{2, 3} {
		ours, theirs := dialProto(t, addr, proto), dialProto(t, raddr, proto)
		for _, c := range []*compatConn{ours, theirs} {
			c.run(t, "AUTH", "t_a", "pw1")
		}
		for _, cmd := range [][]string{
			{"KEYS", "*"}, {"EXISTS", "nothere"}, {"EXISTS", "k1", "r1"}, {"DEL", "w1"}, {"DEL", "r1"},
			{"FLUSHALL"}, {"CONFIG", "GET", "maxmemory"}, {"CLIENT", "LIST"}, {"PING"},
			{"ACL", "WHOAMI"}, {"MULTI"}, {"EXISTS", "k"}, {"EXEC"},
		} {
			a, b := ours.run(t, cmd...), as74(theirs.run(t, cmd...), "t_a")
			if cmd[0] == "CLIENT" {
				a, b = a[:1], b[:1] // both answer, with their own clients
			}
			if a != b {
				t.Errorf("RESP%d as t_a %v:\nohbloom %q\nredis   %q", proto, cmd, a, b)
			}
		}
	}
}

// Users survive a restart: kept in the data directory at every change,
// or in --aclfile by ACL SAVE; --requirepass sets the default user's
// password at start.
func TestUsersSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	s, addr := start(t, Config{DataDir: dir, SaveInterval: -1})
	c := dialProto(t, addr, 2)
	c.run(t, "BF.ADD", "blocks:1", "x")
	c.run(t, "ACL", "SETUSER", "reader", "on", ">rpw", "~blocks:*", "+@read")
	c.run(t, "ACL", "SETUSER", "gone", "on", ">x")
	c.run(t, "ACL", "DELUSER", "gone")
	before := c.run(t, "ACL", "LIST")
	s.Shutdown(context.Background())

	_, addr = start(t, Config{DataDir: dir, SaveInterval: -1, Password: "adminpw"})
	c = dialProto(t, addr, 2)
	if r := c.run(t, "AUTH", "reader", "rpw"); r != "+OK\r\n" {
		t.Fatalf("the reader after a restart: %q", r)
	}
	if r := c.run(t, "BF.EXISTS", "blocks:1", "x"); r != ":1\r\n" {
		t.Fatal(r)
	}
	if r := c.run(t, "BF.ADD", "blocks:1", "y"); r != "-NOPERM User reader has no permissions to run the 'bf.add' command\r\n" {
		t.Fatal(r)
	}
	if r := c.run(t, "AUTH", "gone", "x"); r != "-WRONGPASS invalid username-password pair or user is disabled.\r\n" {
		t.Fatalf("a deleted user came back: %q", r)
	}
	if r := c.run(t, "AUTH", "adminpw"); r != "+OK\r\n" {
		t.Fatalf("--requirepass at start: %q", r)
	}
	after := c.run(t, "ACL", "LIST")
	wantDefault := "user default on sanitize-payload #" + hashPassword([]byte("adminpw")) + " ~* &* +@all"
	if !strings.Contains(after, wantDefault) || !strings.Contains(before, "user reader on sanitize-payload #") ||
		strings.Count(after, "user reader") != 1 {
		t.Fatalf("ACL LIST before %q after %q", before, after)
	}
	if _, err := os.Stat(filepath.Join(dir, usersFile)); err != nil {
		t.Fatal(err)
	}

	// --aclfile: ACL SAVE writes it, a restart and ACL LOAD read it.
	aclFile := filepath.Join(t.TempDir(), "users.acl")
	os.WriteFile(aclFile, []byte("user default on nopass ~* &* +@all\nuser w on >wpw ~* +@write -@dangerous\n"), 0o600)
	s, addr = start(t, Config{ACLFile: aclFile})
	c = dialProto(t, addr, 2)
	if r := c.run(t, "AUTH", "w", "wpw"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	c.run(t, "AUTH", "default", "")
	c.run(t, "ACL", "SETUSER", "r2", "on", ">r2", "+@read", "~*")
	if r := c.run(t, "ACL", "SAVE"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	os.WriteFile(aclFile+".bad", nil, 0o600)
	data, _ := os.ReadFile(aclFile)
	if !strings.Contains(string(data), "user r2 on sanitize-payload #") {
		t.Fatalf("ACL SAVE wrote %q", data)
	}
	// A bad file changes nothing, and says which line.
	os.WriteFile(aclFile, append(data, "user bad on +nosuchcommand\n"...), 0o600)
	if r := c.run(t, "ACL", "LOAD"); !strings.Contains(r, ":4: Error in applying operation '+nosuchcommand': Unknown command or category name in ACL") {
		t.Fatalf("ACL LOAD of a bad file: %q", r)
	}
	if r := c.run(t, "AUTH", "r2", "r2"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	os.WriteFile(aclFile, data, 0o600)
	s.Shutdown(context.Background())
	_, addr = start(t, Config{ACLFile: aclFile})
	if r := dialProto(t, addr, 2).run(t, "AUTH", "r2", "r2"); r != "+OK\r\n" {
		t.Fatalf("after a restart with --aclfile: %q", r)
	}
	// Without --aclfile, ACL SAVE and LOAD answer Redis's error.
	_, addr = start(t, Config{})
	if r := dialProto(t, addr, 2).run(t, "ACL", "SAVE"); r != "-"+errNoACLFile+"\r\n" {
		t.Fatal(r)
	}
}

// ACL LOG records denials and failed AUTHs, as Redis's entries.
func TestACLLog(t *testing.T) {
	_, addr := start(t, Config{})
	c := dialProto(t, addr, 2)
	c.run(t, "ACL", "SETUSER", "r", "on", ">p", "+@read", "~a*")
	u := dialProto(t, addr, 2)
	u.run(t, "AUTH", "r", "wrong")
	u.run(t, "AUTH", "r", "p")
	u.run(t, "BF.ADD", "a1", "x")
	u.run(t, "BF.ADD", "a1", "x")
	u.run(t, "EXISTS", "b")
	rdb := client(t, addr)
	entries, err := rdb.ACLLog(context.Background(), 10).Result()
	if err != nil || len(entries) != 3 {
		t.Fatalf("ACL LOG: %v %v", entries, err)
	}
	if e := entries[0]; e.Reason != "key" || e.Object != "b" || e.Username != "r" || e.Count != 1 || e.Context != "toplevel" {
		t.Fatalf("key entry %+v", e)
	}
	if e := entries[1]; e.Reason != "command" || e.Object != "bf.add" || e.Count != 2 {
		t.Fatalf("command entry %+v", e)
	}
	if e := entries[2]; e.Reason != "auth" || e.Object != "AUTH" || e.Username != "r" {
		t.Fatalf("auth entry %+v", e)
	}
	info := c.run(t, "INFO", "stats")
	for _, f := range []string{"acl_access_denied_auth:1", "acl_access_denied_cmd:2", "acl_access_denied_key:1"} {
		if !strings.Contains(info, f) {
			t.Fatalf("INFO stats lacks %s", f)
		}
	}
	if r := c.run(t, "ACL", "LOG", "RESET"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	if r := c.run(t, "ACL", "LOG"); r != "*0\r\n" {
		t.Fatal(r)
	}
}

// A queued command the user may not run aborts the EXEC; one whose
// permission was taken between MULTI and EXEC is refused in EXEC's
// array, with Redis's texts.
func TestACLInTransactions(t *testing.T) {
	_, addr := start(t, Config{})
	admin := dialProto(t, addr, 2)
	admin.run(t, "ACL", "SETUSER", "u", "on", ">p", "~*", "+@all", "-bf.add")
	c := dialProto(t, addr, 2)
	c.run(t, "AUTH", "u", "p")
	for _, x := range []struct {
		args []string
		want string
	}{
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"BF.ADD", "k", "x"}, "-NOPERM User u has no permissions to run the 'bf.add' command\r\n"},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"BF.EXISTS", "k", "x"}, "+QUEUED\r\n"},
	} {
		if r := c.run(t, x.args...); r != x.want {
			t.Fatalf("%v: %q, want %q", x.args, r, x.want)
		}
	}
	admin.run(t, "ACL", "SETUSER", "u", "-bf.exists")
	if r := c.run(t, "EXEC"); r != "*1\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand\r\n" {
		t.Fatalf("EXEC after the rules changed: %q", r)
	}
}

// Key patterns of any length are checked as Redis checks them: past
// 1,087 tokens the matcher once indexed past a fixed buffer, and every
// command of such a user was answered with an internal error.
func TestACLLongKeyPatterns(t *testing.T) {
	_, addr := start(t, Config{})
	admin := dial(t, addr)
	patterns := []string{
		strings.Repeat("k", 1088),
		strings.Repeat("[kq]", 1100),                                             // 1,100 tokens
		"r:" + strings.Repeat("?*[^x]\\*", 1000),                                 // 3,002 tokens, 1,000 stars apart
		strings.Repeat("*a", 1001),                                               // 1,001 stars apart: Redis's nesting limit
		"s" + strings.Repeat("*", 5000) + "[" + strings.Repeat("st", 3000) + "]", // long runs
	}
	setuser := []string{"ACL", "SETUSER", "long", "on", ">pw", "+@all"}
	for _, p := range patterns {
		setuser = append(setuser, "~"+p)
	}
	if r := admin.do(t, setuser...); r != "+OK" {
		t.Fatalf("ACL SETUSER: %q", r)
	}
	c := dial(t, addr)
	if r := c.do(t, "AUTH", "long", "pw"); r != "+OK" {
		t.Fatalf("AUTH: %q", r)
	}
	mixed := "r:" + strings.Repeat("ab*", 999) + "zzb*"
	keys := []string{
		patterns[0], patterns[0] + "k", patterns[0][1:],
		strings.Repeat("q", 1100), strings.Repeat("kq", 550), strings.Repeat("q", 1099), strings.Repeat("q", 1099) + "x",
		mixed, mixed[:len(mixed)-1] + "a", mixed + "x", strings.Replace(mixed, "b", "x", 1),
		strings.Repeat("a", 1001), "b" + strings.Repeat("a", 1001), strings.Repeat("a", 1000) + "b",
		"st", "sxyzt", "s", "ss" + strings.Repeat("x", 9000) + "t", "s" + strings.Repeat("x", 9000) + "u",
	}
	allowed := 0
	for _, key := range keys {
		want := "-NOPERM No permissions to access a key"
		for _, p := range patterns {
			if redisMatch(p, key, false) {
				want = ":0"
				allowed++
				break
			}
		}
		if r := c.do(t, "BF.EXISTS", key, "x"); r != want {
			t.Fatalf("BF.EXISTS of a key of %d bytes (%.30q…): %q, Redis's matcher says %q", len(key), key, r, want)
		}
	}
	if allowed < 6 || allowed > len(keys)-6 {
		t.Fatalf("%d keys of %d allowed: the cases test too little", allowed, len(keys))
	}
}

// heapAfter is the live heap after f, collected.
func heapAfter(f func()) uint64 {
	f()
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A key pattern holds, beyond its text (kept once, as Redis keeps it),
// at most 2 bytes for each byte of it, whatever its shape, and a pattern
// of a few bytes a few dozen bytes: an authenticated client may not make
// the server hold much more than it sends. The compiled form once held 32
// bytes a token, and 2 KiB for any pattern of up to 63 tokens.
func TestACLKeyPatternMemory(t *testing.T) {
	s, _ := start(t, Config{})
	const size = 1 << 20
	for _, shape := range []struct{ name, piece string }{
		{"literal", "k"},
		{"questions", "?"},
		{"classes", "[kq]"},
		{"long classes", "[" + strings.Repeat("k", 30) + "]"},
		{"stars", "a*"},
		{"star runs", "a" + strings.Repeat("*", 40)},
		{"mixed", "a?*[b-c]\\*"},
	} {
		op := "~" + strings.Repeat(shape.piece, size/len(shape.piece))
		before := heapAfter(func() { s.setUser("big", []string{"reset"}) })
		after := heapAfter(func() {
			if msg := s.setUser("big", []string{"reset", op}); msg != "" {
				t.Fatal(msg)
			}
		})
		perByte := (float64(after) - float64(before)) / float64(len(op))
		t.Logf("%s: %.2f bytes held per byte of pattern, beyond it", shape.name, perByte)
		if perByte > 2 {
			t.Errorf("a %s pattern of %d bytes holds %.1f bytes per byte", shape.name, len(op), perByte)
		}
		runtime.KeepAlive(op)
	}
	// Many small patterns: 64 selectors of 1,024 patterns of 8 bytes.
	ops := []string{"reset"}
	for i := range 64 {
		var b strings.Builder
		b.WriteString("(")
		for j := range 1024 {
			fmt.Fprintf(&b, "~k%06d ", i*1024+j)
		}
		b.WriteString("+get)")
		ops = append(ops, b.String())
	}
	before := heapAfter(func() {})
	after := heapAfter(func() {
		if msg := s.setUser("many", ops); msg != "" {
			t.Fatal(msg)
		}
	})
	perPattern := (float64(after) - float64(before)) / (64 * 1024)
	t.Logf("64 Ki patterns of 8 bytes: %.0f bytes held per pattern", perPattern)
	if perPattern > 128 {
		t.Errorf("a pattern of 8 bytes holds %.0f bytes", perPattern)
	}
	runtime.KeepAlive(ops)
}
