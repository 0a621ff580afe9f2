package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	le "encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ohbloom/ohbloom/tools/server"
)

// The RDB golden data (RedisBloom 2.8.20 in Redis 7.4.1; copied from
// ../shared/testdata/redisbloom/rdb to tools/rdb/testdata).
const (
	goldenRDB  = "../rdb/testdata/dump.rdb"
	goldenJSON = "../rdb/testdata/dump.json"
)

// goldenFilter is what dump.json says of one filter.
type goldenFilter struct {
	DB           int            `json:"db"`
	Key          string         `json:"key"`
	Type         string         `json:"type"`
	Items        string         `json:"items"`
	Expire       bool           `json:"expire"`
	Info         map[string]any `json:"info"`
	AbsentProbes string         `json:"absent_probes"`
	Positives    []int          `json:"absent_probes_positive"`
	Counts       []int64        `json:"counts_first_1000_items"`
	Payload      string         `json:"dump_payload"`
}

func goldenFilters(t *testing.T) map[string]*goldenFilter {
	t.Helper()
	data, err := os.ReadFile(goldenJSON)
	if err != nil {
		t.Fatal(err)
	}
	var g struct{ Filters []*goldenFilter }
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	out := map[string]*goldenFilter{}
	for _, f := range g.Filters {
		out[f.Key] = f
	}
	return out
}

// goldenRange expands "'prefix' + decimal i for i < n".
func goldenRange(t *testing.T, desc string) []any {
	t.Helper()
	prefix, rest, ok := strings.Cut(strings.TrimPrefix(desc, "'"), "' + decimal i for i < ")
	if !ok {
		t.Fatalf("cannot read %q", desc)
	}
	n, err := strconv.Atoi(strings.TrimRight(strings.Fields(rest)[0], ","))
	if err != nil {
		t.Fatalf("cannot read %q", desc)
	}
	out := make([]any, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// startServer runs an ohbloom server in this process.
func startServer(t *testing.T) string { return startServerWith(t, server.Config{}) }

func startServerWith(t *testing.T, c server.Config) string {
	t.Helper()
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := server.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown(context.Background()); ln.Close() })
	return ln.Addr().String()
}

// withExpiry is the golden RDB file with bf:nonscaling's expiry moved to
// at and the file's checksum cleared (0: written without one, which
// readers accept), so that tests do not depend on today's date.
func withExpiry(t *testing.T, at time.Time) string {
	t.Helper()
	data, err := os.ReadFile(goldenRDB)
	if err != nil {
		t.Fatal(err)
	}
	// EXPIRETIME_MS (0xfc), the time, then the value type (7) and the key.
	old := le.LittleEndian.AppendUint64([]byte{0xfc}, 1799095386456)
	old = append(old, 7, byte(len("bf:nonscaling")))
	old = append(old, "bf:nonscaling"...)
	i := bytes.Index(data, old)
	if i < 0 || bytes.Count(data, old) != 1 {
		t.Fatal("bf:nonscaling's expiry not found in the golden file")
	}
	le.LittleEndian.PutUint64(data[i+1:], uint64(at.UnixMilli()))
	clear(data[len(data)-8:])
	path := filepath.Join(t.TempDir(), "dump.rdb")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runCLI runs the command and returns its exit code and output.
func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// checkFilter checks that key, in the client's database, answers as
// RedisBloom's filter f did and dumps back to its payload: every item
// added present (a Bloom filter) or counted as RedisBloom counted it (a
// cuckoo filter), the same false positives, the same INFO.
func checkFilter(t *testing.T, c *redis.Client, key string, f *goldenFilter) {
	t.Helper()
	ctx := context.Background()
	items := goldenRange(t, f.Items)
	cf := f.Type == "MBbloomCF"
	exists, info := "BF.MEXISTS", "BF.INFO"
	if cf {
		exists, info = "CF.MEXISTS", "CF.INFO"
		for i, want := range f.Counts {
			if n, err := c.CFCount(ctx, key, items[i]).Result(); err != nil || n != want {
				t.Fatalf("%s: CF.COUNT of item %d: %d %v, RedisBloom's %d", key, i, n, err, want)
			}
		}
	} else {
		found, err := c.BFMExists(ctx, key, items...).Result()
		if err != nil || slices.Contains(found, false) {
			t.Fatalf("%s: an added item tests absent (%v)", key, err)
		}
	}
	probes := goldenRange(t, f.AbsentProbes)
	found, err := c.Do(ctx, append([]any{exists, key}, probes...)...).BoolSlice()
	if err != nil {
		t.Fatal(err)
	}
	var positives []int
	for i, ok := range found {
		if ok {
			positives = append(positives, i)
		}
	}
	if !slices.Equal(positives, f.Positives) {
		t.Errorf("%s: false positives %v, RedisBloom's %v", key, positives, f.Positives)
	}
	in, err := c.Do(ctx, info, key).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 2*len(f.Info) {
		t.Errorf("%s: %s %v, RedisBloom's %v", key, info, in, f.Info)
	}
	for i := 0; i+1 < len(in); i += 2 {
		want := f.Info[in[i].(string)]
		got := in[i+1]
		if n, ok := got.(int64); ok && want != float64(n) || !ok && want != nil {
			t.Errorf("%s: %s %s %v, RedisBloom's %v", key, info, in[i], got, want)
		}
	}
	want, _ := base64.StdEncoding.DecodeString(f.Payload)
	if p, err := c.Dump(ctx, key).Result(); err != nil || p != string(want) {
		t.Errorf("%s: DUMP differs from RedisBloom's (%v)", key, err)
	}
}

// import-rdb sends every RedisBloom filter of the golden file to a
// server, in its database with its expiry, skipping other keys and
// expired ones: the filters answer there as in RedisBloom. What the server
// refuses is reported by file and key, and the import goes on.
func TestImportRDB(t *testing.T) {
	golden := goldenFilters(t)
	addr := startServer(t)
	at := time.Now().Add(30 * 24 * time.Hour).UnixMilli()
	file := withExpiry(t, time.UnixMilli(at))
	code, out, errOut := runCLI("import-rdb", "--to", addr, file)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if want := file + ": 10 filters imported into " + addr + " (6 Bloom, 4 cuckoo); skipped 1 hash, 1 list, 1 set, 1 stream, 2 string, 1 zset\n"; out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	ctx := context.Background()
	dbs := map[int]*redis.Client{}
	for _, db := range []int{0, 3} {
		dbs[db] = redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DB: db})
		defer dbs[db].Close()
	}
	if n, err := dbs[0].DBSize(ctx).Result(); err != nil || n != 8 {
		t.Fatalf("DBSIZE of database 0: %d %v", n, err)
	}
	if n, err := dbs[3].DBSize(ctx).Result(); err != nil || n != 2 {
		t.Fatalf("DBSIZE of database 3: %d %v", n, err)
	}
	expiring := 0
	for key, f := range golden {
		checkFilter(t, dbs[f.DB], key, f)
		want := int64(-1)
		if f.Expire {
			want = at
			expiring++
		}
		if ms, err := dbs[f.DB].Do(ctx, "PEXPIRETIME", key).Int64(); err != nil || ms != want {
			t.Errorf("%s: PEXPIRETIME %d %v, want %d", key, ms, err, want)
		}
	}
	if expiring != 1 {
		t.Fatalf("%d filters with an expiry in the golden data", expiring)
	}

	// Again: the keys exist, and are kept unless --replace; the refusals
	// name the file and the key.
	code, out, errOut = runCLI("import-rdb", "--to", addr, "--db-map", "3:0", file)
	if code != ExitFailure || strings.Count(out, "BUSYKEY Target key name already exists.") != 8 {
		t.Fatalf("a second import: exit %d\n%s", code, out)
	}
	f := golden["bf:plain"]
	if line := fmt.Sprintf("%s: key bf:plain (db %d, at byte ", file, f.DB); !strings.Contains(out, line) {
		t.Errorf("no line %q in\n%s", line, out)
	}
	if !strings.Contains(out, "; 8 not imported\n") || !strings.Contains(errOut, "8 keys of "+file+" were not imported") {
		t.Errorf("a second import's summary:\n%s%s", out, errOut)
	}
	// --db-map moves database 3's keys to 0.
	for _, key := range []string{"bf:db3", "cf:db3"} {
		if n, _ := dbs[0].Exists(ctx, key).Result(); n != 1 {
			t.Fatalf("--db-map 3:0: %s not imported\n%s", key, out)
		}
		checkFilter(t, dbs[0], key, golden[key])
	}
	code, out, _ = runCLI("import-rdb", "--to", addr, "--db-map", "3:0", "--replace", file)
	if code != ExitOK || strings.Contains(out, "BUSYKEY") || !strings.Contains(out, ": 10 filters imported") {
		t.Fatalf("--replace: exit %d\n%s", code, out)
	}
}

// Expired filters are skipped and counted; the dry run lists what would
// be sent and sends nothing.
func TestImportRDBExpiredAndDryRun(t *testing.T) {
	addr := startServer(t)
	file := withExpiry(t, time.Now().Add(-time.Minute))
	code, out, errOut := runCLI("import-rdb", "--dry-run", "--db-map", "3:1", file)
	if code != ExitOK {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"db 0 -> 0  bf:plain  MBbloom--: Bloom, 1 filters, 7999 items, 13792 bytes\n",
		"db 3 -> 1  bf:db3  MBbloom--: Bloom, 2 filters, 2479 items, 6488 bytes\n",
		"db 3 -> 1  cf:db3  MBbloomCF: cuckoo, 2 filters, 1400 items, 2048 bytes\n",
		file + ": 9 filters to import (5 Bloom, 4 cuckoo); skipped 1 expired filters, 1 hash, 1 list, 1 set, 1 stream, 2 string, 1 zset\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "bf:nonscaling") {
		t.Errorf("dry run lists an expired key:\n%s", out)
	}
	code, out, _ = runCLI("import-rdb", "--to", addr, file)
	if !strings.Contains(out, "skipped 1 expired filters") || strings.Contains(out, "bf:nonscaling") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if n, _ := c.Exists(context.Background(), "bf:nonscaling").Result(); n != 0 {
		t.Fatal("an expired key was imported")
	}
}

// A damaged file is refused with its name and the offset, and no filter
// after the damage is sent; usage errors exit 2.
func TestImportRDBRefusals(t *testing.T) {
	data, err := os.ReadFile(goldenRDB)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	truncated := filepath.Join(dir, "truncated.rdb")
	os.WriteFile(truncated, data[:len(data)/2], 0o600)
	flipped := filepath.Join(dir, "flipped.rdb")
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 0x40
	os.WriteFile(flipped, bad, 0o600)
	notRDB := filepath.Join(dir, "not.rdb")
	os.WriteFile(notRDB, []byte("hello, world"), 0o600)
	for _, file := range []string{truncated, flipped, notRDB} {
		code, _, errOut := runCLI("import-rdb", "--dry-run", file)
		if code != ExitFailure || !strings.Contains(errOut, "ohbloom import-rdb: "+file+": rdb: at byte ") {
			t.Errorf("%s: exit %d, %q", file, code, errOut)
		}
	}
	for _, args := range [][]string{
		{"import-rdb", goldenRDB},
		{"import-rdb", "--dry-run"},
		{"import-rdb", "--dry-run", "--db-map", "3", goldenRDB},
		{"import-rdb", "--dry-run", "--db-map", "3:0,3:1", goldenRDB},
		{"import-rdb", "--dry-run", "--db-map", "-1:0", goldenRDB},
	} {
		if code, _, errOut := runCLI(args...); code != ExitUsage {
			t.Errorf("%q: exit %d, %s", args, code, errOut)
		}
	}
	// A server that is not there: refused before the file is read.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if code, _, errOut := runCLI("import-rdb", "--to", addr, goldenRDB); code != ExitFailure || !strings.Contains(errOut, "connect") {
		t.Errorf("no server: exit %d, %s", code, errOut)
	}
}

// The password comes from --password or, kept out of ps, REDISCLI_AUTH;
// a wrong one stops the import before the file is read.
func TestImportRDBAuth(t *testing.T) {
	addr := startServerWith(t, server.Config{Password: "pw"})
	code, _, errOut := runCLI("import-rdb", "--to", addr, "--password", "wrong", goldenRDB)
	if code != ExitFailure || !strings.Contains(errOut, "ohbloom import-rdb: WRONGPASS") {
		t.Fatalf("a wrong password: exit %d, %s", code, errOut)
	}
	t.Setenv("REDISCLI_AUTH", "pw")
	code, out, _ := runCLI("import-rdb", "--to", addr, withExpiry(t, time.Now().Add(time.Hour)))
	if code != ExitOK || !strings.Contains(out, ": 10 filters imported") {
		t.Fatalf("REDISCLI_AUTH: exit %d\n%s", code, out)
	}
}
