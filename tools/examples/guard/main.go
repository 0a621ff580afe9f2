// Command guard is the pattern ohbloom exists for, in one page: an HTTP
// service answers "does X block Y?" from a Bloom filter, and asks its
// database only when the filter says "possibly". About 99% of lookups never
// reach the database. The filter's metrics are on /metrics.
//
//	go run ./tools/examples/guard -addr 127.0.0.1:8080   # -db FILE to keep a database
//	curl '127.0.0.1:8080/blocks?subject=did:plc:alice&object=did:plc:bob'
//	curl 127.0.0.1:8080/metrics | grep ohbloom_
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/tools/loader"
	"github.com/ohbloom/ohbloom/tools/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	_ "modernc.org/sqlite"
)

// guard answers block lookups: the filter first, the database on a
// positive.
type guard struct {
	filter *metrics.Atomic
	lookup *sql.Stmt
}

type answer struct {
	Blocked bool   `json:"blocked"`
	Source  string `json:"source"` // "filter" or "database"
}

func (g *guard) blocks(w http.ResponseWriter, r *http.Request) {
	subject, object := r.URL.Query().Get("subject"), r.URL.Query().Get("object")
	if subject == "" || object == "" {
		http.Error(w, "want ?subject=...&object=...", http.StatusBadRequest)
		return
	}
	a := answer{Source: "filter"}
	// "Certainly not" from the filter is final: no database query.
	if g.filter.TestString(subject + "|" + object) {
		a.Source = "database"
		var n int
		if err := g.lookup.QueryRowContext(r.Context(), subject, object).Scan(&n); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		a.Blocked = n > 0
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(a)
}

// newServer opens (or creates, with a few sample rows) the database, loads
// the filter from it and returns the service's routes.
func newServer(dbPath string) (http.Handler, func(), error) {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, nil, err
	}
	setup := []string{
		"CREATE TABLE IF NOT EXISTS blocks (subject TEXT NOT NULL, object TEXT NOT NULL, PRIMARY KEY (subject, object))",
		"INSERT OR IGNORE INTO blocks VALUES ('did:plc:alice', 'did:plc:bob'), ('did:plc:carol', 'did:plc:alice')",
	}
	for _, q := range setup {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			return nil, nil, err
		}
	}
	var rows uint64
	if err := db.QueryRow("SELECT count(*) FROM blocks").Scan(&rows); err != nil {
		db.Close()
		return nil, nil, err
	}
	f := ohbloom.NewAtomic(max(rows, 1_000_000), 0.01)
	l := &loader.Loader{Filter: f, DB: db, Query: "SELECT subject || '|' || object FROM blocks"}
	if _, err := l.Run(context.Background()); err != nil {
		db.Close()
		return nil, nil, err
	}
	lookup, err := db.Prepare("SELECT count(*) FROM blocks WHERE subject = ? AND object = ?")
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	g := &guard{filter: metrics.NewAtomic("blocks", f), lookup: lookup}
	reg := prometheus.NewRegistry()
	reg.MustRegister(g.filter)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /blocks", g.blocks)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux, func() { lookup.Close(); db.Close() }, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	dbPath := flag.String("db", "", "SQLite database of block relations, created if missing (default: a sample one in a temporary directory, removed at exit)")
	flag.Parse()
	if err := run(*addr, *dbPath); err != nil {
		log.Fatal(err)
	}
}

// run serves until SIGINT or SIGTERM. Without a database path it makes
// a sample one in a temporary directory, and removes it at the end: an
// example leaves nothing behind in the directory it was run from.
func run(addr, dbPath string) error {
	if dbPath == "" {
		dir, err := os.MkdirTemp("", "ohbloom-guard-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dbPath = filepath.Join(dir, "guard.db")
	}
	handler, closeDB, err := newServer(dbPath)
	if err != nil {
		return err
	}
	defer closeDB()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: addr, Handler: handler}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	log.Printf("guard on http://%s/blocks?subject=did:plc:alice&object=did:plc:bob (database %s)", addr, dbPath)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
