package cli

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/tools/loader"
	"golang.org/x/term"
	_ "modernc.org/sqlite" // SQLite, pure Go, as "sqlite"
)

// maxKeyLine is the longest key line build reads.
const maxKeyLine = 16 << 20

func runBuild(e env, args []string) int {
	fs := flags(e, "build", "-o OUT [-n N] [-p P] [--keys FILE | --sqlite FILE --query Q | --postgres URL --query Q]",
		"Builds a filter from newline-delimited keys (a file, or stdin) or from the\n"+
			"first column of an SQL query, and writes it as a snapshot. "+lineRule+"\n"+
			"Key input must be text: a NUL byte in it (a binary file, such as a\n"+
			"snapshot) is an error. A query's key is the column's text form, or a\n"+
			"blob's or bytea's bytes; a row whose key is NULL is skipped.\n\n"+
			"Without -n the filter is sized for the keys there are: lines are counted\n"+
			"first, SQLite rows too; for PostgreSQL, a plain scan of one analyzed\n"+
			"table (SELECT col FROM t) is sized from the planner's estimate plus 2%\n"+
			"without reading the rows twice, and any other query is counted. No keys\n"+
			"without -n is an error; give -n to build an empty filter of that size.\n"+
			"With -n, more keys than N are added but raise the false positive rate\n"+
			"past -p, which build then warns of. The snapshot is written atomically\n"+
			"(a new file renamed over OUT), readable as the umask allows.")
	out := fs.String("o", "", "snapshot file to write (required)")
	var n count
	fs.Var(&n, "n", "number of keys to size the filter for, such as 1000000 or 1e6 (0: count or estimate them)")
	p := fs.Float64("p", 0.01, "false positive rate at n keys")
	keys := fs.String("keys", "-", "file of newline-delimited keys, - for stdin")
	sqlitePath := fs.String("sqlite", "", "SQLite database to read keys from")
	postgresURL := fs.String("postgres", "", "PostgreSQL URL to read keys from")
	query := fs.String("query", "", "SQL query returning the keys in its first column")
	progress := fs.Bool("progress", false, "report progress on stderr (default: when stderr is a terminal); -progress=false for none")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	sqlSource := *sqlitePath != "" || *postgresURL != ""
	switch {
	case fs.NArg() > 0:
		return usageError(e, fs, "unexpected argument %q", fs.Arg(0))
	case *out == "":
		return usageError(e, fs, "-o is required")
	case *sqlitePath != "" && *postgresURL != "":
		return usageError(e, fs, "--sqlite and --postgres exclude each other")
	case isSet(fs, "keys") && sqlSource:
		return usageError(e, fs, "--keys and --%s exclude each other: give one source of keys",
			map[bool]string{true: "sqlite", false: "postgres"}[*sqlitePath != ""])
	case sqlSource && *query == "":
		return usageError(e, fs, "--query is required with --sqlite or --postgres")
	case *query != "" && !sqlSource:
		return usageError(e, fs, "--query needs --sqlite or --postgres")
	case !(*p > 0 && *p < 1):
		return usageError(e, fs, "-p must be in (0, 1), got %v", *p)
	}
	if err := checkOutput(*out); err != nil {
		return usageError(e, fs, "%v", err)
	}
	show := isTerminal(e.stderr)
	if isSet(fs, "progress") {
		show = *progress
	}
	b := &builder{e: e, n: uint64(n), p: *p, progress: show}

	start := time.Now()
	var err error
	switch {
	case *sqlitePath != "":
		err = b.fromSQLite(*sqlitePath, *query)
	case *postgresURL != "":
		err = b.fromPostgres(*postgresURL, *query)
	default:
		err = b.fromLines(*keys)
	}
	if errors.Is(err, ohbloom.ErrInvalidConfig) || errors.Is(err, ohbloom.ErrTooLarge) {
		return usageError(e, fs, "%s", say(err))
	}
	if err != nil {
		return fail(e, "build", err)
	}
	f := b.f
	if err := f.Save(*out); err != nil {
		return fail(e, "build", err)
	}
	fmt.Fprintf(e.stdout, "wrote %s: %d keys in %v, sized for %d at p=%g%s: k=%d, %.2f bits/key, %d bytes\n",
		*out, b.added, time.Since(start).Round(time.Millisecond), f.Capacity(), *p, b.sizedBy, f.K(),
		float64(f.Bits())/float64(max(1, f.Capacity())), f.SizeBytes())
	if b.nulls > 0 {
		warn(e, "build", "%d rows had a NULL key and were skipped", b.nulls)
	}
	if b.added == 0 {
		warn(e, "build", "no keys read: the filter is empty")
	}
	if b.added > f.Capacity() {
		warn(e, "build", "%d keys read, more than the %d the filter was sized for: its false positive rate is now %.4g, not %g",
			b.added, f.Capacity(), f.EstimatedFPR(), *p)
	}
	return ExitOK
}

// builder builds one filter for runBuild.
type builder struct {
	e        env
	n        uint64 // -n, or 0
	p        float64
	progress bool

	f       *ohbloom.AtomicFilter
	added   uint64 // keys added
	nulls   uint64 // SQL rows skipped for a NULL key
	sizedBy string // how the size was found, when not from -n: " (counted)"
	done    atomic.Uint64
}

// newFilter makes the filter for n keys, said to come from how.
func (b *builder) newFilter(n uint64, how string) error {
	if b.n == 0 {
		b.n, b.sizedBy = n, how
	}
	var err error
	b.f, err = ohbloom.NewAtomicWithConfig(ohbloom.Config{Capacity: b.n, FPR: b.p})
	return err
}

// meter starts reporting the progress of a load of total units (0:
// unknown), or does nothing without --progress.
func (b *builder) meter(unit string, total uint64) (finish func()) {
	if !b.progress {
		return func() {}
	}
	m := (&meter{w: b.e.stderr, terminal: isTerminal(b.e.stderr), name: "build", unit: unit, total: total, done: b.done.Load}).startMeter()
	return m.finish
}

// headroomPercent is what a filter sized from PostgreSQL's estimate adds
// to it: the estimate is low by what the table gained since ANALYZE or
// VACUUM last measured it, and ANALYZE's sample can miss by about 1%.
const headroomPercent = 2

// withHeadroom is n and headroomPercent more, rounded up.
func withHeadroom(n uint64) uint64 { return n + (n*headroomPercent+99)/100 }

// noKeys is the error of a source without keys when -n is not given.
func noKeys(source string) error {
	return fmt.Errorf("no keys in %s: give -n to build an empty filter of that size", source)
}

// lineRule is how build and test read keys from lines, said in both their
// helps.
const lineRule = "Each line is one key, without its\n" +
	"line ending (\\n or \\r\\n); empty lines are not keys and are skipped. A\n" +
	"line may be up to 16 MiB long."

// checkOutput refuses an output path that cannot be a snapshot file
// before any work is done: a directory, or a path in no directory.
func checkOutput(path string) error {
	st, err := os.Stat(path)
	if err == nil && st.IsDir() {
		return fmt.Errorf("-o %s is a directory: give a file name, such as %s", path, filepath.Join(path, "filter.ohb"))
	}
	// The save renames a new file over the path, and so replaces only a
	// regular file (ohbloom.SaveFile refuses the rest): said here, before
	// a build that would be lost.
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("-o %s is not a regular file (%s): a snapshot replaces only a regular file, or makes a new one", path, st.Mode().Type())
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return fmt.Errorf("-o %s: directory %s: %w", path, dir, errors.Unwrap(err))
	} else if !st.IsDir() {
		return fmt.Errorf("-o %s: %s is not a directory", path, dir)
	}
	return nil
}

// scanError names the key length limit when a line exceeds it.
func scanError(err error, lines uint64) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("line %d is longer than 16 MiB, the longest key read from lines", lines+1)
	}
	return err
}

// fromLines builds from a key file or stdin. Input that cannot be read
// twice (stdin, a pipe) is spooled to a temporary file while it is
// counted, when -n is not given.
func (b *builder) fromLines(path string) error {
	name := path
	var src io.Reader
	if path == "-" {
		name, src = "stdin", b.e.stdin
	} else {
		file, err := os.Open(path)
		if err != nil {
			return err
		}
		defer file.Close()
		src = file
		if st, err := file.Stat(); err != nil {
			return err
		} else if st.IsDir() {
			return fmt.Errorf("--keys %s is a directory", path)
		}
	}
	if b.n == 0 {
		// A file is counted where it is; what cannot seek (stdin from a
		// pipe, say) is spooled.
		seeker, ok := src.(io.ReadSeeker)
		from := int64(0)
		if ok {
			var err error
			from, err = seeker.Seek(0, io.SeekCurrent)
			ok = err == nil
		}
		if !ok {
			spool, err := os.CreateTemp("", "ohbloom-keys-*")
			if err != nil {
				return err
			}
			defer os.Remove(spool.Name())
			defer spool.Close()
			if _, err := io.Copy(spool, src); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if _, err := spool.Seek(0, io.SeekStart); err != nil {
				return err
			}
			seeker, from = spool, 0
		}
		count, err := countLines(seeker)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if count == 0 {
			return noKeys(name)
		}
		if _, err := seeker.Seek(from, io.SeekStart); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		src = seeker
		if err := b.newFilter(count, " (counted)"); err != nil {
			return err
		}
	} else if err := b.newFilter(b.n, ""); err != nil {
		return err
	}
	finish := b.meter("keys", b.n)
	keys := newKeyScanner(src)
	b.added = b.f.AddSeq(keys.all(&b.done))
	finish()
	if err := keys.err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// keyScanner reads keys from lines by lineRule, for build and test alike.
type keyScanner struct {
	sc    *bufio.Scanner
	lines uint64 // lines read so far
	bad   error  // binary input, found on line lines
}

func newKeyScanner(r io.Reader) *keyScanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxKeyLine)
	return &keyScanner{sc: sc}
}

// next returns the next key, or false at the end of the input or on an
// error (see err). The key is valid until the next call.
func (k *keyScanner) next() ([]byte, bool) {
	for k.bad == nil && k.sc.Scan() {
		k.lines++
		line := k.sc.Bytes()
		if bytes.IndexByte(line, 0) >= 0 {
			k.bad = binaryInput(k.lines, line)
			return nil, false
		}
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) > 0 {
			return line, true
		}
	}
	return nil, false
}

func (k *keyScanner) err() error {
	if k.bad != nil {
		return k.bad
	}
	return scanError(k.sc.Err(), k.lines)
}

// binaryInput is the error of a line holding a NUL byte: keys are text,
// and NUL is what tells a binary file from text (as grep and git tell it).
func binaryInput(line uint64, b []byte) error {
	if line == 1 && bytes.HasPrefix(b, []byte("OHBLOOM\x00")) {
		return errors.New("this is an ohbloom snapshot, not keys: keys are text, one a line")
	}
	return fmt.Errorf("line %d holds a NUL byte: keys are text, one a line, and this looks like a binary file", line)
}

// all yields every key, counting them in done every 4096 keys and at the
// end.
func (k *keyScanner) all(done *atomic.Uint64) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		n := uint64(0)
		defer func() { done.Store(n) }()
		for key, ok := k.next(); ok; key, ok = k.next() {
			if !yield(key) {
				return
			}
			if n++; n%4096 == 0 {
				done.Store(n)
			}
		}
	}
}

func countLines(r io.Reader) (uint64, error) {
	keys := newKeyScanner(r)
	var n uint64
	for _, ok := keys.next(); ok; _, ok = keys.next() {
		n++
	}
	return n, keys.err()
}

// fromSQLite builds from a query of a SQLite file, which must exist; its
// errors name the file, as SQLite's own do not.
func (b *builder) fromSQLite(path, query string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err // "stat PATH: why"
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("--sqlite %s is not a file", path)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer db.Close()
	if err := b.fromSQL(&loader.Loader{DB: db, Query: query}); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// fromPostgres builds from a query of PostgreSQL, read through pgx. Its
// errors name the server (pgx's do) and never the URL, which may hold a
// password.
func (b *builder) fromPostgres(url, query string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return b.fromSQL(&loader.Loader{PG: conn, Query: query})
}

func (b *builder) fromSQL(l *loader.Loader) error {
	ctx := context.Background()
	if b.n == 0 {
		est, err := l.EstimateRows(ctx)
		if err != nil {
			return err
		}
		n, how := est.Rows, " (counted)"
		if est.Table != "" {
			n = withHeadroom(est.Rows)
			how = fmt.Sprintf(" (PostgreSQL's estimate for %s, %d rows, +%d%%)", est.Table, est.Rows, headroomPercent)
		}
		if n == 0 {
			return noKeys("the query's rows")
		}
		if err := b.newFilter(n, how); err != nil {
			return err
		}
	} else if err := b.newFilter(b.n, ""); err != nil {
		return err
	}
	l.Filter = b.f
	l.ProgressEvery = termEvery
	l.OnProgress = func(pr loader.Progress) { b.done.Store(pr.Rows) }
	finish := b.meter("rows", b.n)
	stats, err := l.Run(ctx)
	finish()
	if err != nil {
		return err
	}
	b.added, b.nulls = stats.Rows, stats.Nulls
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
