package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ohbloom/ohbloom/tools/rdb"
)

// import-rdb: the RedisBloom filters of a Redis RDB file, sent to a
// running server as RESTOREs of their DUMP payloads (RedisBloom's own
// bytes: an RDB file holds a key's value exactly as its DUMP does), each
// in its database and with its expiry. See docs/server.md, "Migrating
// from RedisBloom".

// Bounds of an import.
const (
	// importMaxValue bounds one filter's value as the file holds it: the
	// largest request an ohbloom server can be set to take (Redis's
	// proto-max-bulk-len, 512 MiB by default, is below it). The reader
	// allocates a value as its bytes arrive, never what a length claims.
	importMaxValue = 1 << 30
	// importBatchBytes and importBatchKeys bound a pipelined batch: the
	// payloads held in memory and sent before their replies are read.
	importBatchBytes = 8 << 20
	importBatchKeys  = 256
)

func runImportRDB(e env, args []string) int {
	fs := flags(e, "import-rdb", "--to HOST:PORT [flags] FILE",
		"Reads a Redis RDB file (versions 9 to 12: Redis 5.0 to 7.4; a RedisBloom\n"+
			"server's dump.rdb) and sends each of its RedisBloom filters, Bloom\n"+
			"(MBbloom--) and cuckoo (MBbloomCF), to the server at --to, an ohbloom\n"+
			"serve or a Redis with RedisBloom: SELECT of the key's database, then\n"+
			"RESTORE key expiry payload ABSTTL, pipelined. Each key keeps its\n"+
			"database (see --db-map) and its expiry; keys already expired are skipped.\n"+
			"Keys of other types (strings, hashes, ...) are skipped and counted by\n"+
			"type. The file is checked as it is read, its CRC-64 at the end; a\n"+
			"damaged file is refused with the byte offset. A key the server refuses\n"+
			"(one that exists, without --replace) is reported by name and the import\n"+
			"goes on; the exit code is then 1.\n\n"+
			"The password may also come from the environment variable REDISCLI_AUTH,\n"+
			"as for redis-cli, which keeps it out of ps.")
	to := fs.String("to", "", "the server to import into, HOST:PORT")
	user := fs.String("user", "", "user to AUTH as (Redis 6 ACL); empty: the default user")
	pass := fs.String("password", "", "password to AUTH with (default: $REDISCLI_AUTH)")
	var dbMap dbMapFlag
	fs.Var(&dbMap, "db-map", "databases to move keys to: FROM:TO[,FROM:TO...], e.g. 3:0; others keep theirs")
	replace := fs.Bool("replace", false, "replace keys that exist on the server (RESTORE ... REPLACE); without it they are reported and kept")
	dryRun := fs.Bool("dry-run", false, "list what would be imported, and send nothing")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(e, fs, "give one RDB file")
	}
	if *to == "" && !*dryRun {
		return usageError(e, fs, "--to HOST:PORT is required (or --dry-run)")
	}
	if !isSet(fs, "password") {
		*pass = os.Getenv("REDISCLI_AUTH") // not the flag's default, which --help would print
	}
	path := fs.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		return fail(e, "import-rdb", err)
	}
	defer f.Close()
	im := &rdbImport{
		path: path, dbMap: dbMap.m, replace: *replace, dryRun: *dryRun,
		out: e.stdout, now: time.Now,
	}
	if !*dryRun {
		im.opts = &redis.Options{
			Addr: *to, Username: *user, Password: *pass,
			// One connection a database, and no command sent twice: a
			// RESTORE resent after a broken connection could meet the
			// key it made.
			PoolSize: 1, MaxRetries: -1, DialerRetries: 1, Protocol: 2,
			DialTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
		}
		defer im.close()
	}
	err = im.run(context.Background(), f)
	im.summary(e.stdout, *to)
	if err != nil {
		return fail(e, "import-rdb", err)
	}
	if len(im.failed) > 0 {
		fmt.Fprintf(e.stderr, "ohbloom import-rdb: %d keys of %s were not imported (listed above)\n", len(im.failed), path)
		return ExitFailure
	}
	return ExitOK
}

// dbMapFlag is --db-map: FROM:TO pairs.
type dbMapFlag struct{ m map[int]int }

func (d *dbMapFlag) String() string {
	var parts []string
	for from, to := range d.m {
		parts = append(parts, fmt.Sprintf("%d:%d", from, to))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (d *dbMapFlag) Set(s string) error {
	if d.m == nil {
		d.m = map[int]int{}
	}
	for _, pair := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(pair, ":")
		from, err1 := strconv.ParseUint(a, 10, 31)
		to, err2 := strconv.ParseUint(b, 10, 31)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("%q: want FROM:TO, two database numbers", pair)
		}
		if _, dup := d.m[int(from)]; dup {
			return fmt.Errorf("database %d mapped twice", from)
		}
		d.m[int(from)] = int(to)
	}
	return nil
}

// rdbImport is one import: the file's filters, sent in batches.
type rdbImport struct {
	path    string
	dbMap   map[int]int
	replace bool
	dryRun  bool
	opts    *redis.Options // of the server; nil in a dry run
	clients map[int]*redis.Client
	out     io.Writer
	now     func() time.Time

	batch      []*importKey // waiting to be sent, all to database batchDB
	batchDB    int
	batchBytes int

	imported map[string]int // by module type name
	expired  int
	skipped  map[string]int64 // other keys, by type
	failed   []string
}

// importKey is one filter to send.
type importKey struct {
	fileDB   int // in the file
	db       int // on the server
	key      string
	kind     string
	expireAt int64 // Unix ms, 0 for none
	payload  []byte
	offset   int64
}

// where names a key in messages: the file, the key, its database and
// offset.
func (im *rdbImport) where(k *importKey) string {
	return fmt.Sprintf("%s: key %s (db %d, at byte %d)", im.path, showKey(k.key), k.fileDB, k.offset)
}

// refused records a key not imported, and why.
func (im *rdbImport) refused(k *importKey, err error) {
	im.failed = append(im.failed, im.where(k))
	fmt.Fprintf(im.out, "%s: not imported: %v\n", im.where(k), err)
}

// showKey quotes a key that does not print as it is.
func showKey(k string) string {
	for _, r := range k {
		if r < ' ' || r == 0x7f || r == '"' || r == '\\' || r == ' ' || r == 0xfffd {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// run reads the file and imports its filters. An error is one that stops
// the import: a damaged file, a lost connection. Keys the server refuses
// are in im.failed.
func (im *rdbImport) run(ctx context.Context, f *os.File) error {
	im.imported = map[string]int{}
	r, err := rdb.NewReader(f, &rdb.Options{MaxValueBytes: importMaxValue})
	if err != nil {
		return fmt.Errorf("%s: %w", im.path, err)
	}
	if im.opts != nil {
		// The server first: a wrong address or password fails here, before
		// the file is read.
		if err := im.client(0).Ping(ctx).Err(); err != nil {
			return err
		}
	}
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", im.path, err)
		}
		if e.Value == nil {
			continue // not a filter: counted by the reader
		}
		db := e.DB
		if to, ok := im.dbMap[db]; ok {
			db = to
		}
		k := &importKey{fileDB: e.DB, db: db, key: string(e.Key), kind: e.Kind(), offset: e.Offset}
		if e.ExpireAt != rdb.NoExpiry {
			if e.ExpireAt <= im.now().UnixMilli() {
				im.expired++
				continue
			}
			k.expireAt = e.ExpireAt
		}
		desc, err := describeFilter(e)
		if err != nil {
			im.refused(k, err)
			continue
		}
		if im.dryRun {
			exp := ""
			if k.expireAt != 0 {
				exp = ", expires " + time.UnixMilli(k.expireAt).UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(im.out, "db %d -> %d  %s  %s: %s%s\n", e.DB, db, showKey(k.key), k.kind, desc, exp)
			im.imported[k.kind]++
			continue
		}
		k.payload = rdb.AppendPayload(nil, e.Type, e.Value)
		if len(im.batch) > 0 && (db != im.batchDB || im.batchBytes+len(k.payload) > importBatchBytes || len(im.batch) >= importBatchKeys) {
			if err := im.flush(ctx); err != nil {
				return err
			}
		}
		im.batch = append(im.batch, k)
		im.batchDB = db
		im.batchBytes += len(k.payload)
	}
	if err := im.flush(ctx); err != nil {
		return err
	}
	im.skipped = r.Stats().Skipped
	return nil
}

// describeFilter decodes a filter's value, as the server will, and says
// what it is.
func describeFilter(e *rdb.Entry) (string, error) {
	switch e.Kind() {
	case rdb.BloomTypeName:
		b, err := rdb.DecodeBloom(e.Value)
		if err != nil {
			return "", err
		}
		bytes := 0
		for _, l := range b.Links {
			bytes += len(l.Data)
		}
		return fmt.Sprintf("Bloom, %d filters, %d items, %d bytes", len(b.Links), b.Size, bytes), nil
	case rdb.CuckooTypeName:
		c, err := rdb.DecodeCuckoo(e.Value)
		if err != nil {
			return "", err
		}
		bytes := 0
		for _, f := range c.Filters {
			bytes += len(f.Data)
		}
		return fmt.Sprintf("cuckoo, %d filters, %d items, %d bytes", len(c.Filters), c.NumItems, bytes), nil
	}
	return "", fmt.Errorf("not a RedisBloom filter: %s", e.Kind())
}

// client is the connection to database db: its client SELECTs db as it
// connects, and a connection that fails to is never used, so that no
// RESTORE can land in another database.
func (im *rdbImport) client(db int) *redis.Client {
	if im.clients == nil {
		im.clients = map[int]*redis.Client{}
	}
	c := im.clients[db]
	if c == nil {
		o := *im.opts
		o.DB = db
		c = redis.NewClient(&o)
		im.clients[db] = c
	}
	return c
}

func (im *rdbImport) close() {
	for _, c := range im.clients {
		c.Close()
	}
}

// flush sends the batch, pipelined on its database's connection, and
// records each key's reply.
func (im *rdbImport) flush(ctx context.Context) error {
	if len(im.batch) == 0 {
		return nil
	}
	pipe := im.client(im.batchDB).Pipeline()
	cmds := make([]*redis.Cmd, len(im.batch))
	for i, k := range im.batch {
		args := []any{"RESTORE", k.key, k.expireAt, k.payload, "ABSTTL"}
		if im.replace {
			args = append(args, "REPLACE")
		}
		cmds[i] = pipe.Do(ctx, args...)
	}
	_, execErr := pipe.Exec(ctx)
	if execErr != nil && !isServerError(execErr) {
		return fmt.Errorf("sending the keys to the server: %w", execErr)
	}
	for i, k := range im.batch {
		// A key counts as imported on the server's OK only: a connection
		// whose SELECT was refused runs none of the batch, and go-redis
		// then sets no command's error, only Exec's.
		err := cmds[i].Err()
		if v, _ := cmds[i].Val().(string); err == nil && v != "OK" {
			err = execErr
			if err == nil {
				err = fmt.Errorf("RESTORE answered %v", cmds[i].Val())
			}
		}
		if err != nil {
			im.refused(k, err)
			continue
		}
		im.imported[k.kind]++
	}
	im.batch, im.batchBytes = im.batch[:0], 0
	return nil
}

// isServerError reports whether err is a server's error reply, which
// concerns its command only, not the connection.
func isServerError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// summary writes what was done: keys imported by type, skipped, failed.
func (im *rdbImport) summary(w io.Writer, to string) {
	verb := "imported into " + to
	if im.dryRun {
		verb = "to import"
	}
	total := 0
	for _, n := range im.imported {
		total += n
	}
	fmt.Fprintf(w, "%s: %d filters %s (%d Bloom, %d cuckoo)", im.path, total, verb,
		im.imported[rdb.BloomTypeName], im.imported[rdb.CuckooTypeName])
	var skips []string
	if im.expired > 0 {
		skips = append(skips, fmt.Sprintf("%d expired filters", im.expired))
	}
	kinds := make([]string, 0, len(im.skipped))
	for k := range im.skipped {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		skips = append(skips, fmt.Sprintf("%d %s", im.skipped[k], k))
	}
	if len(skips) > 0 {
		fmt.Fprintf(w, "; skipped %s", strings.Join(skips, ", "))
	}
	if len(im.failed) > 0 {
		fmt.Fprintf(w, "; %d not imported", len(im.failed))
	}
	fmt.Fprintln(w)
}
