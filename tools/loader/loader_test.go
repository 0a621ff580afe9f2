package loader

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/ohbloom/ohbloom"
	_ "modernc.org/sqlite"
)

func openSQLite(t *testing.T) *sql.DB {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "blocks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openPostgres connects to the server .ci/run starts. Outside CI, without
// OHBLOOM_POSTGRES_URL, the test is skipped; in CI its absence is a failure.
func openPostgres(t *testing.T) *sql.DB {
	url := os.Getenv("OHBLOOM_POSTGRES_URL")
	if url == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must set OHBLOOM_POSTGRES_URL (.ci/run starts PostgreSQL)")
		}
		t.Skip("OHBLOOM_POSTGRES_URL is not set")
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fill creates table blocks with n rows; ph is the driver's placeholder
// style ("?" or "$").
func fill(t *testing.T, db *sql.DB, table string, n int, ph string) {
	t.Helper()
	if _, err := db.Exec("DROP TABLE IF EXISTS " + table); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE " + table + " (subject TEXT NOT NULL, object TEXT NOT NULL, PRIMARY KEY (subject, object))"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	q := "INSERT INTO " + table + " VALUES (?, ?)"
	if ph == "$" {
		q = "INSERT INTO " + table + " VALUES ($1, $2)"
	}
	stmt, err := tx.Prepare(q)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := stmt.Exec(fmt.Sprintf("did:plc:s%d", i), fmt.Sprintf("did:plc:o%d", i*7)); err != nil {
			t.Fatal(err)
		}
	}
	stmt.Close()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// checkLoad loads the table while a stream sends keys before, during and
// after the load, and checks that at readiness every row and every key sent
// so far is in the filter, and at the end every key sent at all.
func checkLoad(t *testing.T, db *sql.DB, table string, n int) {
	f := ohbloom.NewAtomic(uint64(n)+10_000, 0.01)
	var progress atomic.Int64
	// sentBeforeDrain is how many stream keys had been sent at the last
	// progress report, which Run makes after the rows and before it drains
	// the streams: those keys must be in the filter at readiness. A key sent
	// while Run drains or closes Ready may or may not be.
	var sent, sentBeforeDrain atomic.Int64
	l := &Loader{
		Filter:     f,
		DB:         db,
		Query:      "SELECT subject || '|' || object, subject FROM " + table,
		CountQuery: "SELECT count(*) FROM " + table,
		OnProgress: func(p Progress) {
			progress.Add(1)
			sentBeforeDrain.Store(sent.Load())
		},
		ProgressEvery: time.Millisecond,
	}
	stream := make(chan []byte, 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var applying sync.WaitGroup
	applying.Go(func() { l.Apply(ctx, stream) })

	// The stream: keys before Run starts, then during, then after.
	send := func(i int) {
		stream <- fmt.Appendf(nil, "stream/%d", i)
		sent.Store(int64(i + 1))
	}
	for i := range 100 {
		send(i)
	}
	stopStream := make(chan struct{})
	var streaming sync.WaitGroup
	streaming.Go(func() {
		for i := 100; ; i++ {
			select {
			case <-stopStream:
				return
			default:
			}
			send(i)
			l.Add(fmt.Appendf(nil, "callback/%d", i)) // the callback form
		}
	})
	stats, err := l.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sentAtReady := int(sentBeforeDrain.Load())
	if sentAtReady < 100 {
		t.Fatalf("%d stream keys counted before the drain, want at least the 100 sent before Run", sentAtReady)
	}
	select {
	case <-l.Ready():
	default:
		t.Fatal("Ready is not closed after Run returned")
	}
	for i := range sentAtReady {
		if !f.TestString(fmt.Sprintf("stream/%d", i)) {
			t.Fatalf("stream key %d, sent before readiness, is not in the filter at readiness", i)
		}
	}
	if stats.Rows != uint64(n) {
		t.Fatalf("loaded %d rows, want %d", stats.Rows, n)
	}
	for i := range n {
		if !f.TestString(fmt.Sprintf("did:plc:s%d|did:plc:o%d", i, i*7)) {
			t.Fatalf("row %d not in the filter", i)
		}
	}
	close(stopStream)
	streaming.Wait()
	close(stream)
	applying.Wait()
	for i := range int(sent.Load()) {
		if !f.TestString(fmt.Sprintf("stream/%d", i)) {
			t.Fatalf("stream key %d lost", i)
		}
		if i >= 100 && i < int(sent.Load())-1 && !f.TestString(fmt.Sprintf("callback/%d", i)) {
			t.Fatalf("callback key %d lost", i)
		}
	}
	t.Logf("%d rows in %v, %d stream keys by readiness, %d progress reports", stats.Rows, stats.Duration, stats.Streamed, progress.Load())
}

// rows is how many rows the load tests put in their table.
func rows() int {
	if testing.Short() {
		return 5_000
	}
	return 50_000
}

func TestLoadSQLite(t *testing.T) {
	db := openSQLite(t)
	fill(t, db, "blocks", rows(), "?")
	checkLoad(t, db, "blocks", rows())
}

func TestLoadPostgres(t *testing.T) {
	db := openPostgres(t)
	fill(t, db, "ohbloom_loader_test", rows(), "$")
	checkLoad(t, db, "ohbloom_loader_test", rows())
}

func TestLoadErrors(t *testing.T) {
	db := openSQLite(t)
	f := ohbloom.NewAtomic(100, 0.01)
	for _, q := range []string{"SELECT FROM nowhere", "SELECT * FROM missing_table"} {
		l := &Loader{Filter: f, DB: db, Query: q}
		if _, err := l.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "loader:") {
			t.Errorf("Run(%q) = %v, want a loader error", q, err)
		}
		select {
		case <-l.Ready():
			t.Error("Ready closed after a failed load")
		default:
		}
	}
	l := &Loader{Filter: f, DB: db, Query: "SELECT 1", CountQuery: "SELECT 'x'"}
	if _, err := l.Run(context.Background()); err == nil {
		t.Error("a count query that returns text did not fail")
	}
}

func TestProgressAt(t *testing.T) {
	p := progressAt(250, 1000, 5*time.Second)
	if p.RowsPerSec != 50 || p.ETA != 15*time.Second {
		t.Errorf("progress %+v, want 50 rows/s and 15s left", p)
	}
	if p := progressAt(10, 0, time.Second); p.ETA != 0 {
		t.Errorf("ETA %v without a total", p.ETA)
	}
}

// openPgx connects to the same server as openPostgres, through pgx itself.
func openPgx(t *testing.T) *pgx.Conn {
	openPostgres(t) // skips or fails as it does
	c, err := pgx.Connect(context.Background(), os.Getenv("OHBLOOM_POSTGRES_URL"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// The keys of PostgreSQL's columns are their text forms, and a bytea's
// bytes, whether the rows come through pgx or through database/sql over
// pgx's driver; a NULL is no key, and counted.
func TestPostgresKeys(t *testing.T) {
	db := openPostgres(t)
	conn := openPgx(t)
	cases := []struct {
		query string
		key   []byte
	}{
		{"SELECT 'text-key'::text", []byte("text-key")},
		{"SELECT 'varchar-key'::varchar(20)", []byte("varchar-key")},
		{"SELECT 42::int8", []byte("42")},
		{"SELECT -7::int4, 'dropped'", []byte("-7")},
		{"SELECT true", []byte("t")},
		{`SELECT '\x00ff0a'::bytea`, []byte{0, 0xff, '\n'}},
		{"SELECT '2024-01-02'::date", []byte("2024-01-02")},
	}
	for _, c := range cases {
		for _, via := range []string{"pgx", "database/sql"} {
			f := ohbloom.NewAtomic(1000, 0.0001)
			l := &Loader{Filter: f, Query: c.query + " UNION ALL SELECT NULL" + strings.Repeat(", NULL", strings.Count(c.query, ","))}
			if via == "pgx" {
				l.PG = conn
			} else {
				l.DB = db
			}
			st, err := l.Run(context.Background())
			if err != nil {
				t.Fatalf("%s via %s: %v", c.query, via, err)
			}
			if st.Rows != 1 || st.Nulls != 1 || !f.Test(c.key) {
				t.Errorf("%s via %s: %+v, key %q in the filter: %v", c.query, via, st, c.key, f.Test(c.key))
			}
		}
	}
	// A query without a column is refused, on either path.
	for _, l := range []*Loader{{PG: conn}, {DB: db}} {
		l.Filter, l.Query = ohbloom.NewAtomic(10, 0.01), "SELECT FROM generate_series(1, 3)"
		if _, err := l.Run(context.Background()); !errors.Is(err, ErrNoKeyColumn) {
			t.Errorf("a query without a column: %v", err)
		}
	}
}

// Reading rows from PostgreSQL allocates nothing per row, through pgx or
// through database/sql over pgx's driver: loading twice the rows allocates
// about as often as loading them once.
func TestPostgresNoAllocPerRow(t *testing.T) {
	db := openPostgres(t)
	conn := openPgx(t)
	for _, via := range []string{"pgx", "database/sql"} {
		mallocs := func(n int) uint64 {
			l := &Loader{Filter: ohbloom.NewAtomic(uint64(n), 0.01), Query: fmt.Sprintf("SELECT 'key-' || g FROM generate_series(1, %d) AS g", n)}
			if via == "pgx" {
				l.PG = conn
			} else {
				l.DB = db
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if _, err := l.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			return after.Mallocs - before.Mallocs
		}
		mallocs(1000) // the statement is prepared and cached on the first
		small, large := mallocs(100_000), mallocs(200_000)
		t.Logf("via %s: %d allocations for 10^5 rows, %d for 2·10^5", via, small, large)
		if perRow := (float64(large) - float64(small)) / 100_000; perRow > 0.01 {
			t.Errorf("via %s: %.3f allocations a row (%d for 10^5 rows, %d for 2·10^5)", via, perRow, small, large)
		}
	}
}

func TestEstimateRows(t *testing.T) {
	db := openPostgres(t)
	conn := openPgx(t)
	ctx := context.Background()
	defer func(v uint64) { exactBelow = v }(exactBelow)
	exactBelow = 0
	n := rows()
	for _, table := range []string{"ohbloom_estimate_analyzed", "ohbloom_estimate_new"} {
		mustExec(t, db, "DROP TABLE IF EXISTS "+table)
		// No autovacuum: whether the table was measured is the test's choice.
		mustExec(t, db, "CREATE TABLE "+table+" (k text) WITH (autovacuum_enabled = false)")
		mustExec(t, db, fmt.Sprintf("INSERT INTO %s SELECT 'k' || g FROM generate_series(1, %d) AS g", table, n))
	}
	mustExec(t, db, "ANALYZE ohbloom_estimate_analyzed")
	cases := []struct {
		query string
		exact bool
	}{
		{"SELECT k FROM ohbloom_estimate_analyzed", false},
		{"select k, length(k) from ohbloom_estimate_analyzed ;\n", false},
		{"SELECT k FROM ohbloom_estimate_new", true}, // never measured
		{"SELECT k FROM ohbloom_estimate_analyzed WHERE k <> ''", true},
		{"SELECT k FROM ohbloom_estimate_analyzed LIMIT 1000000000", true},
		{"SELECT DISTINCT k FROM ohbloom_estimate_analyzed", true},
	}
	for _, c := range cases {
		for _, l := range []*Loader{{PG: conn, Query: c.query}, {DB: db, Query: c.query}} {
			e, err := l.EstimateRows(ctx)
			if err != nil {
				t.Fatalf("%q: %v", c.query, err)
			}
			// ANALYZE reads every page of a table this small (under
			// 30,000 pages): its estimate is the count.
			if e.Exact != c.exact || e.Rows != uint64(n) {
				t.Errorf("%q: %+v, want %d rows, exact %v", c.query, e, n, c.exact)
			}
		}
	}
	// Below exactBelow, even a measured table is counted.
	exactBelow = uint64(n) + 1
	if e, err := (&Loader{PG: conn, Query: cases[0].query}).EstimateRows(ctx); err != nil || !e.Exact || e.Rows != uint64(n) {
		t.Errorf("below exactBelow: %+v %v", e, err)
	}
}

func TestEstimateRowsSQLite(t *testing.T) {
	db := openSQLite(t)
	fill(t, db, "blocks", 1000, "?")
	e, err := (&Loader{DB: db, Query: "SELECT subject FROM blocks;"}).EstimateRows(context.Background())
	if err != nil || !e.Exact || e.Rows != 1000 {
		t.Fatalf("%+v %v", e, err)
	}
	if _, err := (&Loader{DB: db, Query: "SELECT nothing FROM nowhere"}).EstimateRows(context.Background()); err == nil {
		t.Fatal("no error for a query that fails")
	}
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
