package loader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Estimate is how many rows a query returns, as EstimateRows found out.
type Estimate struct {
	Rows  uint64
	Exact bool // counted with count(*), not estimated
	// Table is the table, with its schema, whose pg_class.reltuples gave
	// the estimate; "" when the rows were counted.
	Table string
}

// exactBelow is the estimate under which EstimateRows counts anyway:
// counting so few rows costs milliseconds, and a small table is where a
// stale estimate is likeliest to be far off (a table filled since its
// last ANALYZE, whose reltuples still says 0).
var exactBelow uint64 = 100_000

// EstimateRows says how many rows Query returns, to size a filter before
// Run. For PostgreSQL, when the query is a plain scan of one table (no
// WHERE, join, LIMIT, DISTINCT or aggregate: the plan is a Seq Scan without
// a filter) of a table ANALYZE or VACUUM has measured, it is the planner's
// estimate, pg_class.reltuples scaled to the table's current size, read
// in one EXPLAIN without touching the rows. Otherwise, and below 100,000
// rows, it is an exact count: SELECT count(*) FROM (Query), which reads
// every row once more. Other databases are always counted.
//
// An estimate can be low by what the table gained since ANALYZE last
// measured it and by ANALYZE's sampling error (about 1%); a caller sizing
// a filter should allow for it.
func (l *Loader) EstimateRows(ctx context.Context) (Estimate, error) {
	query := trimQuery(l.Query)
	if l.PG != nil || (l.DB != nil && isPgx(l.DB)) {
		var e Estimate
		var ok bool
		var err error
		if l.PG != nil {
			e, ok, err = planEstimate(ctx, l.PG, query)
		} else {
			err = withPgx(ctx, l.DB, func(c *pgx.Conn) error {
				e, ok, err = planEstimate(ctx, c, query)
				return err
			})
		}
		if err != nil {
			return Estimate{}, fmt.Errorf("loader: estimating the rows: %w", err)
		}
		if ok && e.Rows >= exactBelow {
			return e, nil
		}
	}
	n, err := l.queryCount(ctx, "SELECT count(*) FROM ("+query+") AS keys")
	if err != nil {
		return Estimate{}, fmt.Errorf("loader: counting the rows: %w", err)
	}
	return Estimate{Rows: n, Exact: true}, nil
}

// trimQuery drops the white space and semicolons a query may end with,
// which a subquery cannot hold.
func trimQuery(q string) string {
	return strings.TrimRight(q, " \t\r\n;")
}

// plan is the part of EXPLAIN (VERBOSE, FORMAT JSON)'s output an estimate
// looks at.
type plan struct {
	NodeType string  `json:"Node Type"`
	Relation string  `json:"Relation Name"`
	Schema   string  `json:"Schema"`
	Rows     float64 `json:"Plan Rows"`
	Filter   *string `json:"Filter"`
	Plans    []plan  `json:"Plans"`
}

// planEstimate returns the planner's estimate of a plain table scan's
// rows, and false for any other query or a table ANALYZE has never
// measured (reltuples -1: the planner then guesses from the table's pages
// and its column widths, which can be off by half).
func planEstimate(ctx context.Context, q Querier, query string) (Estimate, bool, error) {
	var out []byte
	if err := scanOne(ctx, q, "EXPLAIN (VERBOSE, FORMAT JSON) "+query, nil, &out); err != nil {
		return Estimate{}, false, err
	}
	var plans []struct {
		Plan plan `json:"Plan"`
	}
	if err := json.Unmarshal(out, &plans); err != nil {
		return Estimate{}, false, fmt.Errorf("reading EXPLAIN's plan: %w", err)
	}
	if len(plans) != 1 {
		return Estimate{}, false, errors.New("reading EXPLAIN's plan: not one plan")
	}
	p := plans[0].Plan
	if p.NodeType != "Seq Scan" || p.Filter != nil || len(p.Plans) != 0 || p.Relation == "" || !(p.Rows >= 0) {
		return Estimate{}, false, nil
	}
	var tuples float32
	err := scanOne(ctx, q, "SELECT c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2",
		[]any{p.Schema, p.Relation}, &tuples)
	if err != nil || tuples < 0 {
		return Estimate{}, false, err
	}
	return Estimate{Rows: uint64(p.Rows), Table: p.Schema + "." + p.Relation}, true, nil
}
