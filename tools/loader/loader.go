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
package loader

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
	Rows     uint64        // rows loaded from the query
	Streamed uint64        // keys applied from the stream by the time of readiness
	Duration time.Duration // from the start of Run to readiness
}

// Loader loads the keys a query returns into Filter. Set the fields, then
// call Run once; Add and Apply may be used before, during and after Run.
type Loader struct {
	Filter *ohbloom.AtomicFilter
	DB     *sql.DB
	// Query returns the keys, one per row, in its first column (text or
	// bytes). Rows are streamed, never held in memory together.
	Query string
	// CountQuery, optional, returns the number of rows Query will return,
	// for the progress reports' ETA.
	CountQuery string
	// OnProgress, optional, is called every ProgressEvery (default 1s)
	// during the load, from another goroutine.
	OnProgress    func(Progress)
	ProgressEvery time.Duration

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

// Run loads every row of Query into the filter (on all cores, with
// AtomicFilter.AddSeq), waits for the streams registered with Apply to
// drain, closes Ready and returns. On error the filter keeps what was
// loaded, and Ready stays open.
func (l *Loader) Run(ctx context.Context) (Stats, error) {
	l.init()
	start := time.Now()
	var total uint64
	if l.CountQuery != "" {
		if err := l.DB.QueryRowContext(ctx, l.CountQuery).Scan(&total); err != nil {
			return Stats{}, fmt.Errorf("loader: count query: %w", err)
		}
	}
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

	var loaded atomic.Uint64
	stopProgress := l.reportProgress(start, total, &loaded)
	// Extra columns are scanned and dropped, so that a query may return a
	// key and something else.
	dest := make([]any, len(cols))
	var key sql.RawBytes
	dest[0] = &key
	for i := 1; i < len(dest); i++ {
		dest[i] = new(sql.RawBytes)
	}
	var scanErr error
	l.Filter.AddSeq(func(yield func([]byte) bool) {
		for rows.Next() {
			if scanErr = rows.Scan(dest...); scanErr != nil {
				return
			}
			// RawBytes is reused by the next Scan; AddSeq hashes the key
			// before it asks for the next one.
			if !yield(key) {
				return
			}
			loaded.Add(1)
		}
	})
	stopProgress()
	if scanErr != nil {
		return Stats{Rows: loaded.Load()}, fmt.Errorf("loader: scan: %w", scanErr)
	}
	if err := rows.Err(); err != nil {
		return Stats{Rows: loaded.Load()}, fmt.Errorf("loader: rows: %w", err)
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
				return Stats{Rows: loaded.Load()}, ctx.Err()
			}
		case <-ctx.Done():
			return Stats{Rows: loaded.Load()}, ctx.Err()
		}
	}
	close(l.ready)
	return Stats{Rows: loaded.Load(), Streamed: l.streamed.Load(), Duration: time.Since(start)}, nil
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
