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
	"sync/atomic"
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
			"filter says \"possibly\". It verifies that no blocked pair was missed.\n"+
			"Progress goes to stderr (a bar on a terminal, else a line a second), the\n"+
			"summary to stdout. The filter is sized for the rows plus the whole stream.")
	rows := fs.Int("rows", 2_000_000, "block relations in the database")
	queries := fs.Int("queries", 1_000_000, "lookups in the query workload (10% of blocked pairs)")
	p := fs.Float64("p", 0.01, "target false positive rate")
	rate := fs.Int("stream-rate", 5_000, "new blocks per second on the live stream")
	streamTotal := fs.Int("stream-total", 50_000, "new blocks the live stream adds in all, then it ends")
	dir := fs.String("dir", "", "directory for the database (default: a temporary one, removed after)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return usageError(e, fs, "unexpected argument %q", fs.Arg(0))
	case *rows < 1 || *queries < 1 || *rate < 0 || *streamTotal < 0:
		return usageError(e, fs, "-rows and -queries must be positive, -stream-rate and -stream-total not negative")
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
	cfg := demoConfig{path: filepath.Join(*dir, "blocks.db"), rows: *rows, queries: *queries, p: *p,
		rate: *rate, streamTotal: uint64(*streamTotal), terminal: isTerminal(e.stderr)}
	if err := demo(e, cfg); err != nil {
		return fail(e, "demo", err)
	}
	return ExitOK
}

type demoConfig struct {
	path          string
	rows, queries int
	p             float64
	rate          int
	streamTotal   uint64
	terminal      bool // progress as a bar rather than lines
}

func demo(e env, c demoConfig) error {
	out := e.stdout
	ctx := context.Background()
	w := newWorld(max(1000, c.rows/5))
	db, err := sql.Open("sqlite", "file:"+c.path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)&_pragma=busy_timeout(10000)&_pragma=cache_size(-262144)")
	if err != nil {
		return err
	}
	defer db.Close()
	phase := func(name, unit string, total uint64, done func() uint64, extra func() string) *meter {
		m := &meter{w: e.stderr, terminal: c.terminal, name: name, unit: unit, total: total, done: done, extra: extra}
		return m.startMeter()
	}

	// 1. The database.
	start := time.Now()
	if _, err := db.Exec("CREATE TABLE blocks (subject TEXT NOT NULL, object TEXT NOT NULL, PRIMARY KEY (subject, object)) WITHOUT ROWID"); err != nil {
		return err
	}
	var inserted atomic.Uint64
	m := phase("database", "rows inserted", uint64(c.rows), inserted.Load, nil)
	err = insertPairs(db, w, 0, uint64(c.rows), &inserted)
	m.finish()
	if err != nil {
		return err
	}
	var stored int
	if err := db.QueryRow("SELECT count(*) FROM blocks").Scan(&stored); err != nil {
		return err
	}
	fmt.Fprintf(out, "database:      %d block relations between %d users in %v (%s)\n",
		stored, len(w.users), time.Since(start).Round(time.Millisecond), c.path)

	// 2. The filter, loaded while the stream runs, sized for the rows and
	// everything the stream will add: the stream ends after streamTotal
	// blocks, so the filter never holds more keys than it was sized for.
	f, err := ohbloom.NewAtomicWithConfig(ohbloom.Config{Capacity: uint64(stored) + c.streamTotal, FPR: c.p})
	if err != nil {
		return err
	}
	var loaded atomic.Uint64
	l := &loader.Loader{Filter: f, DB: db, Query: "SELECT subject || '|' || object FROM blocks",
		ProgressEvery: 100 * time.Millisecond, OnProgress: func(pr loader.Progress) { loaded.Store(pr.Rows) }}
	s := startStream(db, w, l, uint64(c.rows), c.rate, c.streamTotal)
	streamLine := func() string {
		return fmt.Sprintf("stream: %s of %s new blocks applied", thousands(s.added.Load()), thousands(c.streamTotal))
	}
	m = phase("filter", "rows loaded", uint64(stored), loaded.Load, streamLine)
	stats, err := l.Run(ctx)
	loaded.Store(stats.Rows)
	m.finish()
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
	var looked, saved atomic.Uint64
	m = phase("lookups", "lookups", uint64(c.queries), looked.Load, func() string {
		return fmt.Sprintf("%s database queries saved; %s", thousands(saved.Load()), streamLine())
	})
	start = time.Now()
	for q := range c.queries {
		var subject, object string
		blocked := q%10 == 0
		if blocked {
			subject, object = w.pair(r.Uint64N(uint64(c.rows)))
			blockedAsked++
		} else {
			subject, object = w.users[r.IntN(len(w.users))], w.users[r.IntN(len(w.users))]
		}
		if !f.Test(key(subject, object)) {
			negatives++
			if blocked {
				missed++
			}
			saved.Add(1)
			looked.Add(1)
			continue
		}
		positives++
		dbQueries++
		var n int
		if err := stmt.QueryRow(subject, object).Scan(&n); err != nil {
			m.finish()
			s.stop()
			return err
		}
		if n == 0 {
			falsePositives++
		}
		looked.Add(1)
	}
	elapsed := time.Since(start)
	m.finish()
	streamed, err := s.stop()
	if err != nil {
		return fmt.Errorf("the live stream: %w", err)
	}
	unblocked := falsePositives + negatives
	fmt.Fprintf(out, "queries:       %d lookups in %v (%.1f µs each), %d database queries\n",
		c.queries, elapsed.Round(time.Millisecond), float64(elapsed.Microseconds())/float64(c.queries), dbQueries)
	fmt.Fprintf(out, "positive rate: %.2f%% of lookups reached the database; %.2f%% were answered from memory\n",
		100*float64(positives)/float64(c.queries), 100-100*float64(dbQueries)/float64(c.queries))
	fmt.Fprintf(out, "false positives: %d of %d unblocked pairs = %.3f%% (target %.3f%%, from the bits %.3f%%)\n",
		falsePositives, unblocked, 100*float64(falsePositives)/float64(max(1, unblocked)), 100*c.p, 100*f.EstimatedFPR())

	// 4. Verification: every relation in the database, including all the
	// stream added, must test positive.
	start = time.Now()
	var now uint64 // rows in the database now: the stream's duplicates were ignored
	if err := db.QueryRow("SELECT count(*) FROM blocks").Scan(&now); err != nil {
		return err
	}
	var checked atomic.Uint64
	m = phase("verify", "rows checked", now, checked.Load, nil)
	lost, err := verifyAll(db, f, &checked)
	m.finish()
	if err != nil {
		return err
	}
	if missed > 0 || lost > 0 {
		return fmt.Errorf("%d blocked pairs answered absent in the workload, %d rows of the database absent from the filter", missed, lost)
	}
	fmt.Fprintf(out, "verified:      no blocked pair missed: %d of %d blocked lookups found, all %d rows in the database (%d added by the stream) test positive (%v)\n",
		blockedAsked-missed, blockedAsked, checked.Load(), streamed, time.Since(start).Round(time.Millisecond))
	return nil
}

// insertPairs stores relations [from, to) of w, 256 to a statement,
// counting them in done as they go in.
func insertPairs(db *sql.DB, w world, from, to uint64, done *atomic.Uint64) error {
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
			if done != nil {
				done.Add(per)
			}
		}
	}
	for i := 0; i < len(argv); i += 2 {
		if _, err := tx.Exec("INSERT OR IGNORE INTO blocks VALUES (?, ?)", argv[i], argv[i+1]); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if done != nil {
		done.Add(uint64(len(argv) / 2))
	}
	return nil
}

// stream is the live stream of new blocks: every 10 ms it stores the blocks
// due by then in the database, then adds them to the filter, as a service
// does when its event arrives. It ends after total blocks, or at stop.
type stream struct {
	done  chan struct{}
	wg    sync.WaitGroup
	added atomic.Uint64 // blocks stored and added so far
	err   error         // why the stream failed; read after wg.Wait
}

func startStream(db *sql.DB, w world, l *loader.Loader, next uint64, rate int, total uint64) *stream {
	s := &stream{done: make(chan struct{})}
	if rate == 0 || total == 0 {
		return s
	}
	s.wg.Go(func() {
		start := time.Now()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for s.added.Load() < total {
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
			added := s.added.Load()
			due := min(total, uint64(time.Since(start).Seconds()*float64(rate)))
			if due <= added {
				continue
			}
			from := next + added
			if err := insertPairs(db, w, from, next+due, nil); err != nil {
				s.err = err
				return
			}
			for i := from; i < next+due; i++ {
				l.Add(key(w.pair(i)))
			}
			s.added.Store(due)
		}
	})
	return s
}

// stop ends the stream and returns how many blocks it added, and why it
// failed if it did.
func (s *stream) stop() (uint64, error) {
	close(s.done)
	s.wg.Wait()
	return s.added.Load(), s.err
}

// verifyAll tests every relation in the database against the filter,
// counting them in checked, and returns how many tested absent.
func verifyAll(db *sql.DB, f *ohbloom.AtomicFilter, checked *atomic.Uint64) (lost int, err error) {
	rows, err := db.Query("SELECT subject || '|' || object FROM blocks")
	if err != nil {
		return 0, err
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
		checked.Add(uint64(len(batch)))
		batch = batch[:0]
	}
	for rows.Next() {
		var k []byte
		if err := rows.Scan(&k); err != nil {
			return lost, err
		}
		if batch = append(batch, k); len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
	return lost, rows.Err()
}
