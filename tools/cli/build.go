package cli

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL, as "pgx"
	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/tools/loader"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
	_ "modernc.org/sqlite" // SQLite, pure Go, as "sqlite"
)

// maxKeyLine is the longest key line build reads.
const maxKeyLine = 16 << 20

func runBuild(e env, args []string) int {
	fs := flags(e, "build", "-o OUT [-n N] [-p P] [--keys FILE | --sqlite FILE --query Q | --postgres URL --query Q]",
		"Builds a filter from newline-delimited keys (a file, or stdin) or from the\n"+
			"first column of an SQL query, and writes it as a snapshot. "+lineRule+"\n"+
			"Without -n the keys are counted first and the filter sized for that\n"+
			"count; with -n, more keys than N are added but raise the false positive\n"+
			"rate past -p, which build then warns of. The snapshot is written\n"+
			"atomically (a new file renamed over OUT), readable as the umask allows.")
	out := fs.String("o", "", "snapshot file to write (required)")
	var n count
	fs.Var(&n, "n", "number of keys to size the filter for, such as 1000000 or 1e6 (0: count them)")
	p := fs.Float64("p", 0.01, "false positive rate at n keys")
	keys := fs.String("keys", "-", "file of newline-delimited keys, - for stdin")
	sqlitePath := fs.String("sqlite", "", "SQLite database to read keys from")
	postgresURL := fs.String("postgres", "", "PostgreSQL URL to read keys from")
	query := fs.String("query", "", "SQL query returning the keys in its first column")
	progress := fs.Bool("progress", false, "show a progress bar (default: when stderr is a terminal)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return usageError(e, fs, "unexpected argument %q", fs.Arg(0))
	case *out == "":
		return usageError(e, fs, "-o is required")
	case *sqlitePath != "" && *postgresURL != "":
		return usageError(e, fs, "--sqlite and --postgres exclude each other")
	case (*sqlitePath != "" || *postgresURL != "") && *query == "":
		return usageError(e, fs, "--query is required with --sqlite or --postgres")
	case *query != "" && *sqlitePath == "" && *postgresURL == "":
		return usageError(e, fs, "--query needs --sqlite or --postgres")
	case !(*p > 0 && *p < 1):
		return usageError(e, fs, "-p must be in (0, 1), got %v", *p)
	}
	if err := checkOutput(*out); err != nil {
		return usageError(e, fs, "%v", err)
	}
	showBar := *progress || isTerminal(e.stderr)

	start := time.Now()
	var f *ohbloom.AtomicFilter
	var added uint64
	var err error
	if *sqlitePath != "" || *postgresURL != "" {
		f, added, err = buildSQL(e, *sqlitePath, *postgresURL, *query, uint64(n), *p, showBar)
	} else {
		f, added, err = buildLines(e, *keys, uint64(n), *p, showBar)
	}
	if errors.Is(err, ohbloom.ErrInvalidConfig) || errors.Is(err, ohbloom.ErrTooLarge) {
		return usageError(e, fs, "%v", err)
	}
	if err != nil {
		return fail(e, "build", err)
	}
	if err := f.Save(*out); err != nil {
		return fail(e, "build", err)
	}
	fmt.Fprintf(e.stdout, "wrote %s: %d keys in %v, sized for %d at p=%g: k=%d, %.2f bits/key, %d bytes\n",
		*out, added, time.Since(start).Round(time.Millisecond), f.Capacity(), *p, f.K(),
		float64(f.Bits())/float64(max(1, f.Capacity())), f.SizeBytes())
	if added > f.Capacity() {
		warn(e, "build", "%d keys read, more than the %d the filter was sized for: its false positive rate is now %.4g, not %g",
			added, f.Capacity(), f.EstimatedFPR(), *p)
	}
	return ExitOK
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

// buildLines builds from a key file or stdin. Stdin without -n is spooled
// to a temporary file while it is counted, since it cannot be read twice.
func buildLines(e env, path string, n uint64, p float64, showBar bool) (*ohbloom.AtomicFilter, uint64, error) {
	var src io.Reader
	if path == "-" {
		src = e.stdin
		if n == 0 {
			spool, err := os.CreateTemp("", "ohbloom-keys-*")
			if err != nil {
				return nil, 0, err
			}
			defer os.Remove(spool.Name())
			defer spool.Close()
			if _, err := io.Copy(spool, e.stdin); err != nil {
				return nil, 0, err
			}
			if _, err := spool.Seek(0, io.SeekStart); err != nil {
				return nil, 0, err
			}
			src = spool
		}
	} else {
		file, err := os.Open(path)
		if err != nil {
			return nil, 0, err
		}
		defer file.Close()
		src = file
	}
	if n == 0 {
		seeker, ok := src.(io.ReadSeeker)
		if !ok {
			return nil, 0, errors.New("cannot count keys here: give -n")
		}
		count, err := countLines(seeker)
		if err != nil {
			return nil, 0, err
		}
		if _, err := seeker.Seek(0, io.SeekStart); err != nil {
			return nil, 0, err
		}
		n = max(1, count)
	}
	f, err := ohbloom.NewAtomicWithConfig(ohbloom.Config{Capacity: n, FPR: p})
	if err != nil {
		return nil, 0, err
	}
	bar := newBar(e, showBar, int64(n), "keys")
	keys := newKeyScanner(src)
	added := f.AddSeq(keys.all(bar))
	bar.Finish()
	if err := keys.err(); err != nil {
		return nil, 0, err
	}
	return f, added, nil
}

// keyScanner reads keys from lines by lineRule, for build and test alike.
type keyScanner struct {
	sc    *bufio.Scanner
	lines uint64 // lines read so far
}

func newKeyScanner(r io.Reader) *keyScanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxKeyLine)
	return &keyScanner{sc: sc}
}

// next returns the next key, or false at the end of the input or on an
// error (see err). The key is valid until the next call.
func (k *keyScanner) next() ([]byte, bool) {
	for k.sc.Scan() {
		k.lines++
		line := k.sc.Bytes()
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) > 0 {
			return line, true
		}
	}
	return nil, false
}

func (k *keyScanner) err() error { return scanError(k.sc.Err(), k.lines) }

// all yields every key, counting them on bar.
func (k *keyScanner) all(bar *progressbar.ProgressBar) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		done := 0
		for key, ok := k.next(); ok; key, ok = k.next() {
			if !yield(key) {
				return
			}
			if done++; done%4096 == 0 {
				bar.Add(4096)
			}
		}
		bar.Add(done % 4096)
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

// openSQL opens the SQLite file (which must exist) or the PostgreSQL URL.
func openSQL(sqlitePath, postgresURL string) (*sql.DB, error) {
	if sqlitePath != "" {
		if _, err := os.Stat(sqlitePath); err != nil {
			return nil, err
		}
		return sql.Open("sqlite", "file:"+sqlitePath+"?mode=ro")
	}
	return sql.Open("pgx", postgresURL)
}

func buildSQL(e env, sqlitePath, postgresURL, query string, n uint64, p float64, showBar bool) (*ohbloom.AtomicFilter, uint64, error) {
	db, err := openSQL(sqlitePath, postgresURL)
	if err != nil {
		return nil, 0, err
	}
	defer db.Close()
	ctx := context.Background()
	countQuery := "SELECT count(*) FROM (" + query + ") AS keys"
	if n == 0 {
		if err := db.QueryRowContext(ctx, countQuery).Scan(&n); err != nil {
			return nil, 0, fmt.Errorf("counting the keys: %w", err)
		}
		n = max(1, n)
	}
	f, err := ohbloom.NewAtomicWithConfig(ohbloom.Config{Capacity: n, FPR: p})
	if err != nil {
		return nil, 0, err
	}
	bar := newBar(e, showBar, int64(n), "rows")
	var last uint64
	l := &loader.Loader{Filter: f, DB: db, Query: query, ProgressEvery: 200 * time.Millisecond,
		OnProgress: func(pr loader.Progress) {
			bar.Add64(int64(pr.Rows - last))
			last = pr.Rows
		}}
	stats, err := l.Run(ctx)
	bar.Finish()
	if err != nil {
		return nil, 0, err
	}
	return f, stats.Rows, nil
}

// newBar returns a progress bar on stderr, or one that draws nothing.
func newBar(e env, show bool, total int64, what string) *progressbar.ProgressBar {
	if !show {
		return progressbar.DefaultSilent(total)
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(e.stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(what),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(e.stderr) }),
	)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
