// Package loader fills an ohbloom.AtomicFilter from a SQL query while a live
// stream of new keys is applied to it, and says when the filter is ready.
//
// The service this is for keeps "does X block Y?" in a filter in front of
// its database. At start-up it must load every existing row, but new rows
// keep arriving meanwhile; stopping the stream until the load is done would
// delay them, and adding them to the filter only after it would lose those
// that arrive just before. Both run at once here, on an AtomicFilter: a key
// is never lost, whatever the interleaving, because nothing ever clears a
// bit and every Add is atomic.
//
// PostgreSQL is read through pgx itself, from a pgx connection or pool
// (Loader.PG) or from a database/sql DB whose driver is pgx's: each key is
// hashed where the connection's read buffer holds it, with nothing
// allocated or copied per row. Other databases (SQLite, say) are read
// through database/sql. Keys are added on the goroutine that reads them:
// the database sets the pace, and a core the load does not take is one
// the database can use. docs/operations.md has the measurements.
package loader

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/ohbloom/ohbloom"
)

// Progress is a report on a running load.
type Progress struct {
	Rows       uint64        // rows loaded so far
	Total      uint64        // rows expected, 0 when unknown
	Elapsed    time.Duration // since the load started
	RowsPerSec float64       // average so far
	ETA        time.Duration // time left at that rate, 0 when Total is unknown
}

// Stats describes a finished load.
type Stats struct {
	Rows     uint64        // keys loaded from the query
	Nulls    uint64        // rows skipped because their key was NULL
	Streamed uint64        // keys applied from the stream by the time of readiness
	Duration time.Duration // from the start of Run to readiness
}

// Querier is a PostgreSQL connection of pgx's: *pgx.Conn, *pgxpool.Pool,
// *pgxpool.Conn and pgx.Tx all are one.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Loader loads the keys a query returns into Filter. Set the fields, then
// call Run once; Add and Apply may be used before, during and after Run.
type Loader struct {
	Filter *ohbloom.AtomicFilter
	// DB is the database to read. When its driver is pgx's
	// (github.com/jackc/pgx/v5/stdlib, "pgx"), the rows are read through
	// pgx on one of its connections, as with PG.
	DB *sql.DB
	// PG, used instead of DB when set, is a PostgreSQL connection or pool.
	PG Querier
	// Query returns the keys, one per row, in its first column; further
	// columns are read and dropped. From PostgreSQL a key is the column's
	// text form (as psql shows it), or a bytea's bytes; from other
	// databases, the bytes database/sql gives for it. Rows are streamed,
	// never held in memory together.
	Query string
	// CountQuery, optional, returns the number of rows Query will return,
	// for the progress reports' ETA.
	CountQuery string
	// OnProgress, optional, is called every ProgressEvery (default 1s)
	// during the load, from another goroutine.
	OnProgress    func(Progress)
	ProgressEvery time.Duration
	// MaxMemory bounds what a load allocates beside the filter, in bytes.
	// A load of at least as many rows as the filter has blocks builds in
	// one private copy of the filter, ORed into it at the end (adder.go);
	// a MaxMemory below the filter's size (not 0, which means no bound)
	// makes it add to the filter itself, with atomic adds, slower.
	MaxMemory uint64

	streamed atomic.Uint64
	mu       sync.Mutex
	barriers []chan chan struct{}
	ready    chan struct{}
	once     sync.Once
}

func (l *Loader) init() { l.once.Do(func() { l.ready = make(chan struct{}) }) }

// Add applies one key of the live stream: when it returns the key is in
// the filter. It is safe at any time and from any goroutine.
func (l *Loader) Add(key []byte) {
	l.Filter.Add(key)
	l.streamed.Add(1)
}

// Apply applies the keys received from stream until it is closed or ctx
// is done; run it in its own goroutine. When Run reports readiness, every
// key that was sent on stream before the bulk load finished is in the
// filter, including those still waiting in the channel's buffer then: Run
// waits for Apply to drain them.
func (l *Loader) Apply(ctx context.Context, stream <-chan []byte) {
	l.init()
	barrier := make(chan chan struct{})
	l.mu.Lock()
	l.barriers = append(l.barriers, barrier)
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		for i, b := range l.barriers {
			if b == barrier {
				l.barriers = append(l.barriers[:i], l.barriers[i+1:]...)
				break
			}
		}
		l.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case k, ok := <-stream:
			if !ok {
				return
			}
			l.Add(k)
		case done := <-barrier:
			// Drain what the channel holds now, then let Run go on.
			for drained := false; !drained; {
				select {
				case k, ok := <-stream:
					if !ok {
						close(done)
						return
					}
					l.Add(k)
				default:
					drained = true
				}
			}
			close(done)
		}
	}
}

// Ready returns a channel that is closed once Run has loaded every row and
// drained the streams.
func (l *Loader) Ready() <-chan struct{} {
	l.init()
	return l.ready
}

// ErrNoKeyColumn is returned when Query returns no column.
var ErrNoKeyColumn = errors.New("loader: the query returns no column")

// Run loads every row of Query into the filter, waits for the streams
// registered with Apply to drain, closes Ready and returns. The rows'
// keys are added as they are read, on the reading goroutine, in a private
// copy of the filter that is ORed into it at the end (see adder.go and
// MaxMemory): Test may not find them before Run returns, while the
// stream's keys are in the filter as soon as Add returns. A row whose key is NULL is
// no key: it is skipped and counted in Stats.Nulls. On error the filter
// keeps what was loaded, and Ready stays open.
func (l *Loader) Run(ctx context.Context) (Stats, error) {
	l.init()
	start := time.Now()
	var total uint64
	if l.CountQuery != "" {
		var err error
		if total, err = l.queryCount(ctx, l.CountQuery); err != nil {
			return Stats{}, fmt.Errorf("loader: count query: %w", err)
		}
	}
	var loaded atomic.Uint64
	stopProgress := l.reportProgress(start, total, &loaded)
	st, err := l.load(ctx, &loaded)
	stopProgress()
	if err != nil {
		return st, err
	}

	// Readiness: drain every stream registered so far.
	l.mu.Lock()
	barriers := append([]chan chan struct{}(nil), l.barriers...)
	l.mu.Unlock()
	for _, b := range barriers {
		done := make(chan struct{})
		select {
		case b <- done:
			select {
			case <-done:
			case <-ctx.Done():
				return st, ctx.Err()
			}
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
	close(l.ready)
	st.Streamed = l.streamed.Load()
	st.Duration = time.Since(start)
	return st, nil
}

// progressEvery is how many rows a load reads between two updates of the
// count the progress reports read: an atomic store a row would be a
// shared line written 10^7 times a second for a reader that looks five
// times a second.
const progressEvery = 1024

// load reads the rows and adds their keys, through pgx when it can.
func (l *Loader) load(ctx context.Context, loaded *atomic.Uint64) (Stats, error) {
	switch {
	case l.PG != nil:
		return l.loadPG(ctx, l.PG, loaded)
	case l.DB == nil:
		return Stats{}, errors.New("loader: neither DB nor PG is set")
	case isPgx(l.DB):
		var st Stats
		err := withPgx(ctx, l.DB, func(c *pgx.Conn) error {
			var err error
			st, err = l.loadPG(ctx, c, loaded)
			return err
		})
		return st, err
	}
	return l.loadSQL(ctx, loaded)
}

// loadPG reads the rows with pgx: RawValues hands over each key where the
// connection's read buffer holds it, valid until the next row, and it is
// hashed there (adder.go). Nothing is allocated or copied per row.
func (l *Loader) loadPG(ctx context.Context, q Querier, loaded *atomic.Uint64) (Stats, error) {
	rows, err := q.Query(ctx, l.Query, keyFormats)
	if err != nil {
		return Stats{}, fmt.Errorf("loader: query: %w", err)
	}
	defer rows.Close()
	if len(rows.FieldDescriptions()) == 0 {
		return Stats{}, ErrNoKeyColumn
	}
	var st Stats
	a := newKeyAdder(l.Filter, l.MaxMemory)
	for rows.Next() {
		key := rows.RawValues()[0]
		if key == nil {
			st.Nulls++
			continue
		}
		a.add(key)
		if st.Rows++; st.Rows%progressEvery == 0 {
			loaded.Store(st.Rows)
		}
	}
	a.finish()
	loaded.Store(st.Rows)
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("loader: rows: %w", err)
	}
	return st, nil
}

// keyFormats asks PostgreSQL for every column in its text form, as psql
// shows it, except bytea, whose key is its bytes as stored: the keys are
// what a person would type to test them, whatever the column's type. (In
// pgx's simple protocol mode, which ignores it, bytea comes as text too.)
var keyFormats = pgx.QueryResultFormatsByOID{pgtype.ByteaOID: pgx.BinaryFormatCode}

// loadSQL reads the rows through database/sql, for other drivers than
// pgx (SQLite, say).
func (l *Loader) loadSQL(ctx context.Context, loaded *atomic.Uint64) (Stats, error) {
	rows, err := l.DB.QueryContext(ctx, l.Query)
	if err != nil {
		return Stats{}, fmt.Errorf("loader: query: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return Stats{}, fmt.Errorf("loader: query: %w", err)
	}
	if len(cols) == 0 {
		return Stats{}, ErrNoKeyColumn
	}
	// Extra columns are scanned and dropped, so that a query may return a
	// key and something else.
	dest := make([]any, len(cols))
	var key sql.RawBytes
	dest[0] = &key
	for i := 1; i < len(dest); i++ {
		dest[i] = new(sql.RawBytes)
	}
	var st Stats
	var scanErr error
	a := newKeyAdder(l.Filter, l.MaxMemory)
	for rows.Next() {
		if scanErr = rows.Scan(dest...); scanErr != nil {
			break
		}
		if key == nil {
			st.Nulls++
			continue
		}
		a.add(key) // RawBytes is reused by the next Scan; add is done with it
		if st.Rows++; st.Rows%progressEvery == 0 {
			loaded.Store(st.Rows)
		}
	}
	a.finish()
	loaded.Store(st.Rows)
	if scanErr != nil {
		return st, fmt.Errorf("loader: scan: %w", scanErr)
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("loader: rows: %w", err)
	}
	return st, nil
}

// isPgx reports whether db's driver is pgx's database/sql driver.
func isPgx(db *sql.DB) bool {
	_, ok := db.Driver().(*stdlib.Driver)
	return ok
}

// withPgx runs fn on the pgx connection under one of db's connections,
// which it holds meanwhile.
func withPgx(ctx context.Context, db *sql.DB, fn func(*pgx.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("loader: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("loader: a pgx database whose connection is a %T", dc)
		}
		return fn(c.Conn())
	})
}

// queryCount runs a query that returns one number.
func (l *Loader) queryCount(ctx context.Context, query string) (uint64, error) {
	var n uint64
	switch {
	case l.PG != nil:
		return n, scanOne(ctx, l.PG, query, nil, &n)
	case l.DB == nil:
		return 0, errors.New("neither DB nor PG is set")
	case isPgx(l.DB):
		return n, withPgx(ctx, l.DB, func(c *pgx.Conn) error { return scanOne(ctx, c, query, nil, &n) })
	}
	return n, l.DB.QueryRowContext(ctx, query).Scan(&n)
}

// scanOne scans the one row of query, with args, into dest.
func scanOne(ctx context.Context, q Querier, query string, args []any, dest ...any) error {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	_, err = pgx.CollectExactlyOneRow(rows, func(r pgx.CollectableRow) (struct{}, error) {
		return struct{}{}, r.Scan(dest...)
	})
	return err
}

// reportProgress calls OnProgress every ProgressEvery until the returned
// function is called.
func (l *Loader) reportProgress(start time.Time, total uint64, loaded *atomic.Uint64) (stop func()) {
	if l.OnProgress == nil {
		return func() {}
	}
	every := l.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				l.OnProgress(progressAt(loaded.Load(), total, time.Since(start)))
			}
		}
	})
	// The last report, at stop, gives the final count, so that a progress
	// bar ends where the load did.
	return func() {
		close(done)
		wg.Wait()
		l.OnProgress(progressAt(loaded.Load(), total, time.Since(start)))
	}
}

func progressAt(rows, total uint64, elapsed time.Duration) Progress {
	p := Progress{Rows: rows, Total: total, Elapsed: elapsed}
	if s := elapsed.Seconds(); s > 0 {
		p.RowsPerSec = float64(rows) / s
	}
	if total > rows && p.RowsPerSec > 0 {
		p.ETA = time.Duration(float64(total-rows) / p.RowsPerSec * float64(time.Second))
	}
	return p
}
