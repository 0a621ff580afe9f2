package cli

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/tools/loader"
)

// The demo's world: users with did:plc identifiers, and block relations
// between them. Relation i is a pure function of i, so the demo can name
// any existing or new relation without storing them.
type world struct{ users []string }

const base32 = "abcdefghijklmnopqrstuvwxyz234567"

func newWorld(users int) world {
	r := rand.New(rand.NewPCG(2026, 12))
	w := world{users: make([]string, users)}
	var b strings.Builder
	for i := range w.users {
		b.Reset()
		b.WriteString("did:plc:")
		for range 24 {
			b.WriteByte(base32[r.IntN(32)])
		}
		w.users[i] = b.String()
	}
	return w
}

// pair returns relation i: who blocks whom.
func (w world) pair(i uint64) (subject, object string) {
	h := i*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 32
	n := uint64(len(w.users))
	s, o := h%n, (h/n)%n
	if s == o {
		o = (o + 1) % n
	}
	return w.users[s], w.users[o]
}

func key(subject, object string) []byte { return []byte(subject + "|" + object) }

func runDemo(e env, args []string) int {
	fs := flags(e, "demo", "[flags]",
		"Runs a filter in front of a database, with no setup: it creates an SQLite\n"+
			"database of block relations between users (\"does X block Y?\"), starts a\n"+
			"live stream of new blocks, loads the filter from the database while the\n"+
			"stream runs, then answers lookups, asking the database only when the\n"+
			"filter says \"possibly\". It verifies that no blocked pair was missed.")
	rows := fs.Int("rows", 2_000_000, "block relations in the database")
	queries := fs.Int("queries", 1_000_000, "lookups in the query workload (10% of blocked pairs)")
	p := fs.Float64("p", 0.01, "target false positive rate")
	rate := fs.Int("stream-rate", 5_000, "new blocks per second on the live stream")
	dir := fs.String("dir", "", "directory for the database (default: a temporary one, removed after)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return usageError(e, fs, "unexpected argument %q", fs.Arg(0))
	case *rows < 1 || *queries < 1 || *rate < 0:
		return usageError(e, fs, "-rows and -queries must be positive and -stream-rate not negative")
	case !(*p > 0 && *p < 1):
		return usageError(e, fs, "-p must be in (0, 1), got %v", *p)
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "ohbloom-demo-*")
		if err != nil {
			return fail(e, "demo", err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	if err := demo(e, filepath.Join(*dir, "blocks.db"), *rows, *queries, *p, *rate); err != nil {
		return fail(e, "demo", err)
	}
	return ExitOK
}

func demo(e env, path string, rows, queries int, p float64, rate int) error {
	out := e.stdout
	ctx := context.Background()
	w := newWorld(max(1000, rows/5))
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)&_pragma=busy_timeout(10000)&_pragma=cache_size(-262144)")
	if err != nil {
		return err
	}
	defer db.Close()

	// 1. The database.
	start := time.Now()
	if _, err := db.Exec("CREATE TABLE blocks (subject TEXT NOT NULL, object TEXT NOT NULL, PRIMARY KEY (subject, object)) WITHOUT ROWID"); err != nil {
		return err
	}
	if err := insertPairs(db, w, 0, uint64(rows)); err != nil {
		return err
	}
	var stored int
	if err := db.QueryRow("SELECT count(*) FROM blocks").Scan(&stored); err != nil {
		return err
	}
	fmt.Fprintf(out, "database:      %d block relations between %d users in %v (%s)\n",
		stored, len(w.users), time.Since(start).Round(time.Millisecond), path)

	// 2. The filter, loaded while the stream runs. Sized for the rows and
	// what the stream adds in ten seconds, about the demo's run time.
	capacity := uint64(stored) + uint64(rate)*10
	f, err := ohbloom.NewAtomicWithConfig(ohbloom.Config{Capacity: capacity, FPR: p})
	if err != nil {
		return err
	}
	l := &loader.Loader{Filter: f, DB: db, Query: "SELECT subject || '|' || object FROM blocks"}
	s := startStream(db, w, l, uint64(rows), rate)
	stats, err := l.Run(ctx)
	if err != nil {
		s.stop()
		return err
	}
	fmt.Fprintf(out, "filter loaded: %d rows in %v (%.0f keys/s) while the stream added %d new blocks; %d bytes, k=%d\n",
		stats.Rows, stats.Duration.Round(time.Millisecond), float64(stats.Rows)/stats.Duration.Seconds(),
		stats.Streamed, f.SizeBytes(), f.K())

	// 3. The query workload: does X block Y? One lookup in ten is of a
	// pair that is blocked; the others are random pairs.
	stmt, err := db.Prepare("SELECT count(*) FROM blocks WHERE subject = ? AND object = ?")
	if err != nil {
		s.stop()
		return err
	}
	defer stmt.Close()
	r := rand.New(rand.NewPCG(7, 7))
	var positives, dbQueries, blockedAsked, falsePositives, negatives, missed int
	start = time.Now()
	for q := range queries {
		var subject, object string
		blocked := q%10 == 0
		if blocked {
			subject, object = w.pair(r.Uint64N(uint64(rows)))
			blockedAsked++
		} else {
			subject, object = w.users[r.IntN(len(w.users))], w.users[r.IntN(len(w.users))]
		}
		if !f.Test(key(subject, object)) {
			negatives++
			if blocked {
				missed++
			}
			continue
		}
		positives++
		dbQueries++
		var n int
		if err := stmt.QueryRow(subject, object).Scan(&n); err != nil {
			s.stop()
			return err
		}
		if n == 0 {
			falsePositives++
		}
	}
	elapsed := time.Since(start)
	streamed := s.stop()
	unblocked := falsePositives + negatives
	fmt.Fprintf(out, "queries:       %d lookups in %v (%.1f µs each), %d database queries\n",
		queries, elapsed.Round(time.Millisecond), float64(elapsed.Microseconds())/float64(queries), dbQueries)
	fmt.Fprintf(out, "positive rate: %.2f%% of lookups reached the database; %.2f%% were answered from memory\n",
		100*float64(positives)/float64(queries), 100-100*float64(dbQueries)/float64(queries))
	fmt.Fprintf(out, "false positives: %d of %d unblocked pairs = %.3f%% (target %.3f%%, from the bits %.3f%%)\n",
		falsePositives, unblocked, 100*float64(falsePositives)/float64(max(1, unblocked)), 100*p, 100*f.EstimatedFPR())

	// 4. Verification: every relation in the database, including all the
	// stream added, must test positive.
	start = time.Now()
	checked, lost, err := verifyAll(db, f)
	if err != nil {
		return err
	}
	if missed > 0 || lost > 0 {
		return fmt.Errorf("%d blocked pairs answered absent in the workload, %d rows of the database absent from the filter", missed, lost)
	}
	fmt.Fprintf(out, "verified:      no blocked pair missed: %d of %d blocked lookups found, all %d rows in the database (%d added by the stream) test positive (%v)\n",
		blockedAsked-missed, blockedAsked, checked, streamed, time.Since(start).Round(time.Millisecond))
	return nil
}

// insertPairs stores relations [from, to) of w, 256 to a statement.
func insertPairs(db *sql.DB, w world, from, to uint64) error {
	const per = 256
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.Prepare("INSERT OR IGNORE INTO blocks VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?),", per), ","))
	if err != nil {
		return err
	}
	defer stmt.Close()
	argv := make([]any, 0, 2*per)
	for i := from; i < to; i++ {
		s, o := w.pair(i)
		argv = append(argv, s, o)
		if len(argv) == cap(argv) {
			if _, err := stmt.Exec(argv...); err != nil {
				return err
			}
			argv = argv[:0]
		}
	}
	for i := 0; i < len(argv); i += 2 {
		if _, err := tx.Exec("INSERT OR IGNORE INTO blocks VALUES (?, ?)", argv[i], argv[i+1]); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// stream is the live stream of new blocks: every 10 ms it stores the blocks
// due by then in the database, then adds them to the filter, as a service
// does when its event arrives.
type stream struct {
	done  chan struct{}
	wg    sync.WaitGroup
	added uint64
	err   error
}

func startStream(db *sql.DB, w world, l *loader.Loader, next uint64, rate int) *stream {
	s := &stream{done: make(chan struct{})}
	if rate == 0 {
		return s
	}
	s.wg.Go(func() {
		start := time.Now()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
			due := uint64(time.Since(start).Seconds() * float64(rate))
			if due <= s.added {
				continue
			}
			from := next + s.added
			if err := insertPairs(db, w, from, next+due); err != nil {
				s.err = err
				return
			}
			for i := from; i < next+due; i++ {
				l.Add(key(w.pair(i)))
			}
			s.added = due
		}
	})
	return s
}

// stop ends the stream and returns how many blocks it added.
func (s *stream) stop() uint64 {
	close(s.done)
	s.wg.Wait()
	return s.added
}

// verifyAll tests every relation in the database against the filter.
func verifyAll(db *sql.DB, f *ohbloom.AtomicFilter) (checked, lost int, err error) {
	rows, err := db.Query("SELECT subject || '|' || object FROM blocks")
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	batch := make([][]byte, 0, 4096)
	results := make([]bool, 4096)
	flush := func() {
		f.TestBatch(batch, results)
		for _, ok := range results[:len(batch)] {
			if !ok {
				lost++
			}
		}
		checked += len(batch)
		batch = batch[:0]
	}
	for rows.Next() {
		var k []byte
		if err := rows.Scan(&k); err != nil {
			return checked, lost, err
		}
		if batch = append(batch, k); len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
	return checked, lost, rows.Err()
}
