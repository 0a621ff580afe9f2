// Command limitstable reads `go test -bench` output and prints a Markdown
// table of the median of every metric over the rounds of each benchmark:
// the /round=N element of the names (BenchmarkLimits, BenchmarkBuild) and
// the -GOMAXPROCS suffix are dropped, and the results that remain under
// one name are its rounds.
//
//	go run ./cmd/limitstable < limits.txt
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	round  = regexp.MustCompile(`/round=\d+`)
	procs  = regexp.MustCompile(`-\d+$`)
	prefix = regexp.MustCompile(`^Benchmark`)
)

// row is one benchmark's results, metric by metric, over its rounds.
type row struct {
	name    string
	metrics map[string][]float64
}

func main() {
	rows, units, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "limitstable:", err)
		os.Exit(1)
	}
	write(os.Stdout, rows, units)
}

// parse reads benchmark lines: name, iterations, then value-unit pairs.
func parse(r io.Reader) ([]*row, []string, error) {
	var rows []*row
	byName := map[string]*row{}
	var units []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !prefix.MatchString(f[0]) || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := procs.ReplaceAllString(round.ReplaceAllString(prefix.ReplaceAllString(f[0], ""), ""), "")
		rw := byName[name]
		if rw == nil {
			rw = &row{name: name, metrics: map[string][]float64{}}
			byName[name] = rw
			rows = append(rows, rw)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%q: %v", sc.Text(), err)
			}
			u := f[i+1]
			if !slices.Contains(units, u) {
				units = append(units, u)
			}
			rw.metrics[u] = append(rw.metrics[u], v)
		}
	}
	return rows, units, sc.Err()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func write(w io.Writer, rows []*row, units []string) {
	fmt.Fprintf(w, "| benchmark | rounds | %s |\n", strings.Join(units, " | "))
	fmt.Fprintf(w, "|---|---|%s\n", strings.Repeat("---|", len(units)))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d |", r.name, len(r.metrics[units[0]]))
		for _, u := range units {
			xs := r.metrics[u]
			switch {
			case len(xs) == 0:
				fmt.Fprint(w, " |")
			case len(xs) == 1:
				fmt.Fprintf(w, " %.4g |", xs[0])
			default:
				fmt.Fprintf(w, " %.4g (%.4g–%.4g) |", median(xs), slices.Min(xs), slices.Max(xs))
			}
		}
		fmt.Fprintln(w)
	}
}
