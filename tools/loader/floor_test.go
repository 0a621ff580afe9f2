package loader

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/ohbloom/ohbloom"
	"github.com/zeebo/xxh3"
)

// TestLoaderFloor measures a load from PostgreSQL against the floor: pgx's
// own conn.Query + RawValues reading the same rows and discarding them. It
// runs only when OHBLOOM_LOADER_BENCH names a PostgreSQL URL (a server of
// your own: it creates the table ohbloom_loader_bench there), takes the
// CPUs for a few minutes, and is a measurement, not a check: it fails only
// when something errs. docs/operations.md has its table and command:
//
//	flock /tmp/ohbloom-bench.lock env OHBLOOM_LOADER_BENCH=postgres://... \
//	  go test -run TestLoaderFloor -v -timeout 1h ./loader/
//
// OHBLOOM_LOADER_BENCH_ROWS sets the rows (default 2·10^7, one text
// column), OHBLOOM_LOADER_BENCH_ROUNDS the rounds (default 3). Each round
// runs every contender once, in its own process, in turn; the table gives
// medians. A process's peak RSS is its getrusage maxrss.
func TestLoaderFloor(t *testing.T) {
	url := os.Getenv("OHBLOOM_LOADER_BENCH")
	if url == "" {
		t.Skip("OHBLOOM_LOADER_BENCH is not set (a PostgreSQL URL; see the comment)")
	}
	rows := envInt(t, "OHBLOOM_LOADER_BENCH_ROWS", 20_000_000)
	if mode := os.Getenv("OHBLOOM_LOADER_BENCH_MODE"); mode != "" {
		benchChild(t, url, mode, uint64(rows))
		return
	}
	rounds := envInt(t, "OHBLOOM_LOADER_BENCH_ROUNDS", 3)
	benchTable(t, url, rows)
	dir := t.TempDir()
	ohbloomCmd := filepath.Join(dir, "ohbloom")
	if out, err := exec.Command("go", "build", "-o", ohbloomCmd, "../cmd/ohbloom").CombinedOutput(); err != nil {
		t.Fatalf("building the command: %v\n%s", err, out)
	}
	type contender struct {
		name, about string
		cmd         func() *exec.Cmd
	}
	child := func(mode string) func() *exec.Cmd {
		return func() *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLoaderFloor$", "-test.count=1")
			cmd.Env = append(os.Environ(), "OHBLOOM_LOADER_BENCH_MODE="+mode)
			return cmd
		}
	}
	contenders := []contender{
		{"floor", "pgx conn.Query + RawValues, rows discarded", child("floor")},
		{"loader.Run", "Loader{PG: *pgx.Conn}, filter sized for the rows", child("loader")},
		{"build", "ohbloom build --postgres, no -n (sized from the estimate)", func() *exec.Cmd {
			return exec.Command(ohbloomCmd, "build", "-o", filepath.Join(dir, "bench.ohb"), "--postgres", url,
				"--query", "SELECT id FROM ohbloom_loader_bench", "-progress=false")
		}},
		{"loader.Run, database/sql", "Loader{DB: sql.Open(\"pgx\", …)}", child("loader-sql")},
		{"AddSeq", "pgx rows into AtomicFilter.AddSeq, the loader's way before", child("addseq")},
		{"2 connections", "two pgx connections over ctid halves, hashes added atomically", child("two-conns")},
	}
	type result struct {
		read, wall time.Duration // the read in the process, the whole process
		cpu        time.Duration // the process's user and system time
		rss        int64         // peak, bytes
		filter     uint64        // the filter's bytes
	}
	results := make([][]result, len(contenders))
	runOne := func(c contender) result {
		cmd := c.cmd()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		if err != nil {
			t.Fatalf("%s: %v\n%s%s", c.name, err, stdout.String(), stderr.String())
		}
		// getrusage's maxrss of a child counts the memory of the process
		// that started it, whose memory the child shares until it execs
		// (os/exec's vfork): this process stays small, reading only the
		// header of the snapshot build wrote, and a child of ours reports
		// its own peak (VmHWM) itself.
		r := result{wall: wall, read: wall, rss: maxRSS(cmd.ProcessState),
			cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
		if _, line, ok := strings.Cut(stdout.String(), "RESULT "); ok {
			var ns, hwm int64
			fmt.Sscanf(line, "read_ns=%d filter_bytes=%d peak_rss=%d", &ns, &r.filter, &hwm)
			r.read, r.rss = time.Duration(ns), hwm
		} else if s, err := ohbloom.OpenUnverified(filepath.Join(dir, "bench.ohb")); err == nil {
			r.filter = s.SizeBytes()
			s.Close()
		}
		return r
	}
	runOne(contenders[0]) // warm the cache
	for round := range rounds {
		for i, c := range contenders {
			r := runOne(c)
			results[i] = append(results[i], r)
			t.Logf("round %d: %-26s read %v, process %v, CPU %v, peak RSS %.1f MB", round+1, c.name, r.read.Round(time.Millisecond), r.wall.Round(time.Millisecond), r.cpu.Round(time.Millisecond), float64(r.rss)/1e6)
		}
	}
	median := func(i int, f func(result) float64) float64 {
		xs := make([]float64, 0, len(results[i]))
		for _, r := range results[i] {
			xs = append(xs, f(r))
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	read := func(r result) float64 { return r.read.Seconds() }
	wall := func(r result) float64 { return r.wall.Seconds() }
	rss := func(r result) float64 { return float64(r.rss) / 1e6 }
	cpu := func(r result) float64 { return r.cpu.Seconds() }
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d rows, medians of %d rounds\n\n", rows, rounds)
	fmt.Fprintln(&b, "| contender | read (s) | ÷ floor | process (s) | ÷ floor | process CPU (s) | peak RSS (MB) | filter (MB) | RSS − filter (MB) |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for i, c := range contenders {
		filter := float64(results[i][0].filter) / 1e6
		fmt.Fprintf(&b, "| %s (%s) | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f | %.0f |\n", c.name, c.about,
			median(i, read), median(i, read)/median(0, read), median(i, wall), median(i, wall)/median(0, wall),
			median(i, cpu), median(i, rss), filter, median(i, rss)-filter)
	}
	t.Log(b.String())
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return int(f)
}

// benchTable makes ohbloom_loader_bench hold rows rows, unless it does,
// and measures it (VACUUM ANALYZE), as a table is after autovacuum.
func benchTable(t *testing.T, url string, rows int) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if db.QueryRow("SELECT count(*) FROM ohbloom_loader_bench").Scan(&n); n == rows {
		return
	}
	t.Logf("filling ohbloom_loader_bench with %d rows", rows)
	for _, q := range []string{"DROP TABLE IF EXISTS ohbloom_loader_bench",
		"CREATE TABLE ohbloom_loader_bench (id text NOT NULL)",
		fmt.Sprintf("INSERT INTO ohbloom_loader_bench SELECT 'user:' || g FROM generate_series(1, %d) AS g", rows),
		"VACUUM ANALYZE ohbloom_loader_bench"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
}

// benchChild is one contender's process: it connects, reads, and prints
// how long the read took (connecting and making the filter excluded).
func benchChild(t *testing.T, url, mode string, rows uint64) {
	ctx := context.Background()
	const query = "SELECT id FROM ohbloom_loader_bench"
	var f *ohbloom.AtomicFilter
	var n uint64
	var start time.Time
	switch mode {
	case "floor":
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		r, err := conn.Query(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			_ = r.RawValues()
			n++
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
	case "loader", "loader-sql":
		f = ohbloom.NewAtomic(rows, 0.01)
		l := &Loader{Filter: f, Query: query}
		if mode == "loader" {
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			l.PG = conn
		} else {
			db, err := sql.Open("pgx", url)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Ping(); err != nil {
				t.Fatal(err)
			}
			l.DB = db
		}
		start = time.Now()
		st, err := l.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n = st.Rows
	case "addseq":
		f = ohbloom.NewAtomic(rows, 0.01)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		r, err := conn.Query(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		n = f.AddSeq(func(yield func([]byte) bool) {
			for r.Next() {
				if !yield(r.RawValues()[0]) {
					return
				}
			}
		})
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
	case "two-conns":
		// Whether a second connection helps: each reads half the table's
		// pages (a TID range scan) and adds its keys' hashes itself.
		f = ohbloom.NewAtomic(rows, 0.01)
		conns := make([]*pgx.Conn, 2)
		for i := range conns {
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		var pages int64
		if err := conns[0].QueryRow(ctx, "SELECT pg_relation_size('ohbloom_loader_bench') / current_setting('block_size')::int").Scan(&pages); err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i, c := range conns {
			where := fmt.Sprintf("ctid < '(%d,0)'", pages/2)
			if i == 1 {
				where = fmt.Sprintf("ctid >= '(%d,0)'", pages/2)
			}
			wg.Go(func() {
				r, err := c.Query(ctx, query+" WHERE "+where)
				if err != nil {
					t.Error(err)
					return
				}
				hs, seed, got := make([]uint64, 0, 1024), f.Seed(), uint64(0)
				for r.Next() {
					if hs = append(hs, xxh3.HashSeed(r.RawValues()[0], seed)); len(hs) == cap(hs) {
						f.AddHashes(hs)
						hs = hs[:0]
					}
					got++
				}
				f.AddHashes(hs)
				if err := r.Err(); err != nil {
					t.Error(err)
				}
				mu.Lock()
				n += got
				mu.Unlock()
			})
		}
		wg.Wait()
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	read := time.Since(start)
	if n != rows {
		t.Fatalf("%s read %d rows, the table has %d", mode, n, rows)
	}
	var size uint64
	if f != nil {
		size = f.SizeBytes()
	}
	fmt.Printf("RESULT read_ns=%d filter_bytes=%d peak_rss=%d\n", read.Nanoseconds(), size, peakRSS(t))
}

// peakRSS is this process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
