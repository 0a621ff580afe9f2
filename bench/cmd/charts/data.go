package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// table is a CSV file read by column name. Its comment lines ("# ...")
// document it; those that start "# preliminary:" are notes that the charts
// print under their titles.
type table struct {
	name   string
	header map[string]int
	rows   [][]string
	notes  []string
}

// readTable reads a CSV file whose first record names its columns and checks
// that every column in want is there.
func readTable(path string, want ...string) (*table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := &table{name: path, header: map[string]int{}}
	// Comment lines are read apart, because encoding/csv drops them.
	var body strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if comment, ok := strings.CutPrefix(line, "#"); ok {
			if comment = strings.TrimSpace(comment); strings.HasPrefix(comment, "preliminary:") {
				t.notes = append(t.notes, comment)
			}
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	records, err := csv.NewReader(strings.NewReader(body.String())).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(records) == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	for i, name := range records[0] {
		t.header[strings.TrimSpace(name)] = i
	}
	for _, name := range want {
		if _, ok := t.header[name]; !ok {
			return nil, fmt.Errorf("%s: no column %q", path, name)
		}
	}
	t.rows = records[1:]
	return t, nil
}

// str returns row i's value of a column, "" when the column is absent.
func (t *table) str(i int, column string) string {
	j, ok := t.header[column]
	if !ok {
		return ""
	}
	return strings.TrimSpace(t.rows[i][j])
}

// num returns row i's value of a column as a number.
func (t *table) num(i int, column string) (float64, error) {
	v, err := strconv.ParseFloat(t.str(i, column), 64)
	if err != nil {
		return 0, fmt.Errorf("%s: row %d, column %s: %w", t.name, i+2, column, err)
	}
	return v, nil
}

// benchResult is one result line of `go test -bench` output.
type benchResult struct {
	// name is the benchmark's name without "Benchmark" and the
	// "-GOMAXPROCS" suffix, e.g. "Speed/cap=10000/keys=present".
	name string
	// parts holds the key=value elements of the name.
	parts map[string]string
	// metrics maps each unit to its value, e.g. "ns/key" -> 31.2.
	metrics map[string]float64
}

// benchFile is a file of `go test -bench` output: its configuration lines
// ("cpu: AMD EPYC", "preliminary: ...") and its results, in order.
type benchFile struct {
	config  map[string]string
	results []benchResult
}

// readBench parses `go test -bench` output, as described by the Go
// benchmark data format (golang.org/design/14313-benchmark-format): result
// lines "BenchmarkName-N  iterations  value unit  value unit ...",
// configuration lines "key: value" whose key starts with a lower-case
// letter and has no spaces or upper-case letters, and anything else
// ignored. (golang.org/x/perf/benchfmt reads the same, but its module would
// pull some forty others into the bench module's graph for these lines.)
func readBench(path string) (*benchFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bf, err := parseBench(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return bf, nil
}

func parseBench(r io.Reader) (*benchFile, error) {
	bf := &benchFile{config: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if key, value, ok := configLine(line); ok {
			bf.config[key] = value
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.ParseUint(fields[1], 10, 64); err != nil {
			// "BenchmarkX" followed by the benchmark's own output is not
			// a result.
			continue
		}
		if len(fields)%2 != 0 {
			return nil, fmt.Errorf("line %d: a value without a unit: %q", lineNo, line)
		}
		res := benchResult{name: trimProcs(strings.TrimPrefix(fields[0], "Benchmark")),
			parts: map[string]string{}, metrics: map[string]float64{}}
		for _, part := range strings.Split(res.name, "/") {
			if k, v, ok := strings.Cut(part, "="); ok {
				res.parts[k] = v
			}
		}
		for i := 2; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, err)
			}
			res.metrics[fields[i+1]] = v
		}
		bf.results = append(bf.results, res)
	}
	return bf, sc.Err()
}

// configLine reports whether line is a "key: value" configuration line.
func configLine(line string) (key, value string, ok bool) {
	key, value, ok = strings.Cut(line, ":")
	if !ok || key == "" || !unicode.IsLower(rune(key[0])) {
		return "", "", false
	}
	for _, r := range key {
		if unicode.IsSpace(r) || unicode.IsUpper(r) {
			return "", "", false
		}
	}
	return key, strings.TrimSpace(value), true
}

// trimProcs removes the "-N" that go test appends to a benchmark's name when
// GOMAXPROCS is not 1.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// median returns the median of xs, which must not be empty.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medians groups results by key (results for which key returns "" are
// skipped) and returns, for each group in order of first appearance, the
// median of unit over its results. It is an error for a result of a group to
// lack the unit.
func medians(results []benchResult, key func(benchResult) string, unit string) (keys []string, values map[string]float64, err error) {
	samples := map[string][]float64{}
	for _, r := range results {
		k := key(r)
		if k == "" {
			continue
		}
		v, ok := r.metrics[unit]
		if !ok {
			return nil, nil, fmt.Errorf("benchmark %s reports no %q", r.name, unit)
		}
		if _, seen := samples[k]; !seen {
			keys = append(keys, k)
		}
		samples[k] = append(samples[k], v)
	}
	values = map[string]float64{}
	for k, s := range samples {
		values[k] = median(s)
	}
	return keys, values, nil
}
