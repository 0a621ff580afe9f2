package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkSVG fails unless b is a well-formed XML document whose root is an
// svg element and whose text contains every string of want.
func checkSVG(t *testing.T, name string, b []byte, want ...string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	var texts strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: not well-formed XML: %v", name, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			texts.Write(tok)
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", name, root)
	}
	for _, w := range want {
		if !strings.Contains(texts.String(), w) {
			t.Errorf("%s: no text %q", name, w)
		}
	}
	for _, bad := range []string{"NaN", "Inf"} {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("%s: contains %s", name, bad)
		}
	}
}

func TestRunDrawsEveryChart(t *testing.T) {
	out := filepath.Join(t.TempDir(), "img")
	written, err := run("testdata", out)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != len(charts) {
		t.Fatalf("wrote %d files, want %d", len(written), len(charts))
	}
	want := map[string][]string{
		"fpr.svg": {"False positive rate against memory", "10⁶ keys", "bits per key", "ohbloom.New(n, p)",
			"bits-and-blooms", "textbook", "standard Bloom optimum", "preliminary: sample data for the tests", "1%", "0.1%"},
		"fpr-target.svg": {"measured rate ÷ p", "the target: rate = p", "textbook"},
		"speed.svg": {"ns per key", "filter size", "keys in the filter", "keys not in the filter",
			"ohbloom TestBatch", "bits-and-blooms Test", "L2 2 MiB", "L3 32 MiB", "Sample CPU", "100 MB"},
		"startup.svg": {"10⁶ keys", "bits-and-blooms behind a mutex", "ohbloom AtomicFilter.AddParallel",
			"ohbloom-future", "0.44 s (440 ns/key)",
			// startup.txt also has a run at a smaller n, not to be mixed in.
			"0.26 s (261 ns/key)", "seconds until ready", "preliminary: sample data"},
		"server-cpu.svg": {"ohbloom serve ÷ redis-server", "vs SADD", "vs SISMEMBER", "pipeline 16", "no pipelining",
			"median of the rounds' ratios", "one round", "redis-server = 1",
			// sample data: 0.80/1.00; the median of 4.0/4.4 and 3.8/4.6
			// (0.909, 0.826), not 3.9/4.5
			"0.80×", "0.87×"},
		"server-memory.svg": {"bits per item", "RedisBloom, its published figures (not run here)", "1.38 MB", "26.8 MB",
			"grown to", "8·10⁶ items", "ohbloom serve, measured here", "its sizing formula (no figure published)"},
	}
	for _, path := range written {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(path)
		checkSVG(t, name, b, want[name]...)
		if !bytes.Contains(b, []byte("font-family:'Liberation Sans',Arial")) {
			t.Errorf("%s: fonts without the Arial fallback", name)
		}
	}
}

// The committed charts are what the committed data draws: whoever updates
// docs/data re-runs the program.
func TestCommittedChartsAreCurrent(t *testing.T) {
	out := t.TempDir()
	written, err := run("../../../docs/data", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range written {
		name := filepath.Base(path)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("../../../docs/img", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, committed) {
			t.Errorf("docs/img/%s is not what docs/data draws: run `go run ./bench/cmd/charts` from the repository's root", name)
		}
	}
}

// copyTestdata copies the sample data into a new directory, replacing the
// files in replace, and returns the directory.
func copyTestdata(t *testing.T, replace map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := replace[e.Name()]; ok {
			b = []byte(r)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRunRejectsBadData(t *testing.T) {
	for _, c := range []struct {
		name, file, content, want string
	}{
		{"missing column", "fpr.csv", "filter,target_p,keys,bits_per_key\nohbloom,0.01,1000,10\n", `no column "measured_fpr"`},
		{"zero rate on a log axis", "fpr.csv",
			"filter,target_p,keys,bits_per_key,measured_fpr\nohbloom,0.01,1000,10,0\nblocked-textbook,0.01,1000,10,0.01\nbitsandblooms,0.01,1000,10,0.01\n",
			"not a positive number"},
		{"a filter missing", "fpr.csv", "filter,target_p,keys,bits_per_key,measured_fpr\nohbloom,0.01,1000,10,0.01\n", `no rows for filter "blocked-textbook"`},
		{"not a number", "server.csv", "case,server,command,pipeline,round,cpu_us_per_cmd\nadd,ohbloom,BF.ADD,16,1,fast\n", "fast"},
		{"one server only", "server.csv", "case,server,command,pipeline,round,cpu_us_per_cmd\nadd,ohbloom,BF.ADD,16,1,1\n", "round 1 of case add, pipeline 16 has no redis row"},
		{"no round", "server.csv", "case,server,command,pipeline,cpu_us_per_cmd\nadd,ohbloom,BF.ADD,16,1\n", `no column "round"`},
		{"unknown memory source", "server-memory.csv", "server,capacity,error_rate,items,bytes,source\nohbloom,1000,0.01,0,1250,published\nredisbloom,1000,0.01,0,1250,published\n", `a ohbloom row of source "published"`},
		{"no speed results", "speed.txt", "cpu: x\n", "no results"},
		{"metric missing", "startup.txt", "BenchmarkStartup/n=10/loader=a-2 1 100 ns/op\n", `reports no "s-to-ready"`},
		{"value without unit", "startup.txt", "BenchmarkStartup/n=10/loader=a-2 1 100 ns/op 5\n", "a value without a unit"},
		{"memory row missing", "server-memory.csv", "server,capacity,error_rate,items,bytes\nohbloom,1000,0.01,0,1250\n", "no redisbloom row"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := copyTestdata(t, map[string]string{c.file: c.content})
			out := filepath.Join(t.TempDir(), "img")
			_, err := run(data, out)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("wrote charts despite the error (stat: %v)", err)
			}
		})
	}
}

func TestParseBench(t *testing.T) {
	in := `goos: linux
cpu: AMD EPYC 9B14
cache-l2-bytes: 2097152
Not a config: line
BenchmarkSpeed/cap=10000/lib=ohbloom
    speed_test.go:12: output between the name and the result
BenchmarkSpeed/cap=10000/lib=ohbloom-2    	 1000	 123.5 ns/op	 12544 filter-bytes	 30.25 ns/key
BenchmarkSpeed/cap=10000/lib=ohbloom-2    	 1000	 124.5 ns/op	 12544 filter-bytes	 31.75 ns/key
BenchmarkPlain 	 5	 7 ns/op
PASS
ok  	github.com/ohbloom/ohbloom/bench	1.2s
`
	bf, err := parseBench(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"goos": "linux", "cpu": "AMD EPYC 9B14", "cache-l2-bytes": "2097152"} {
		if bf.config[k] != v {
			t.Errorf("config %s = %q, want %q", k, bf.config[k], v)
		}
	}
	if _, ok := bf.config["Not a config"]; ok {
		t.Error("took a key with spaces and capitals for configuration")
	}
	if len(bf.results) != 3 {
		t.Fatalf("%d results, want 3: %+v", len(bf.results), bf.results)
	}
	r := bf.results[0]
	if r.name != "Speed/cap=10000/lib=ohbloom" || r.parts["cap"] != "10000" || r.parts["lib"] != "ohbloom" {
		t.Errorf("name %q, parts %v", r.name, r.parts)
	}
	if r.metrics["ns/key"] != 30.25 || r.metrics["filter-bytes"] != 12544 || r.metrics["ns/op"] != 123.5 {
		t.Errorf("metrics %v", r.metrics)
	}
	if bf.results[2].name != "Plain" {
		t.Errorf("name %q, want Plain", bf.results[2].name)
	}
	keys, m, err := medians(bf.results, func(r benchResult) string { return r.parts["cap"] }, "ns/key")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "10000" || m["10000"] != 31 {
		t.Errorf("medians: %v %v, want [10000] 31", keys, m)
	}
}

func TestTrimProcs(t *testing.T) {
	for in, want := range map[string]string{
		"Speed/op=test-batch-2": "Speed/op=test-batch",
		"Speed/op=test-batch":   "Speed/op=test-batch",
		"Startup-16":            "Startup",
		"Plain":                 "Plain",
	} {
		if got := trimProcs(in); got != want {
			t.Errorf("trimProcs(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMedian(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median of 3 = %v", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of 4 = %v", m)
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{formatPercent(0.1), "10%"},
		{formatPercent(0.01), "1%"},
		{formatPercent(1e-5), "0.001%"},
		{formatPercent(3e-5), "0.003%"},
		{formatBytes(12544), "12.5 kB"},
		{formatBytes(1e6), "1 MB"},
		{formatBytes(1.2524e9), "1.25 GB"},
		{formatBinaryBytes(2 << 20), "2 MiB"},
		{formatBinaryBytes(32 << 20), "32 MiB"},
		{formatCount(1e8), "10⁸"},
		{formatCount(1e6), "10⁶"},
		{formatCount(3e7), "3·10⁷"},
		{formatCount(12345), "12,345"},
		{formatCount(999), "999"},
		{formatNumber(0.2381), "0.238"},
		{formatNumber(438.1), "438"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestNiceStep(t *testing.T) {
	for x, want := range map[float64]float64{0.3: 0.5, 1: 1, 1.1: 2, 9.4: 10, 11: 20, 45: 50} {
		if got := niceStep(x); got != want {
			t.Errorf("niceStep(%v) = %v, want %v", x, got, want)
		}
	}
}

func TestStepTicks(t *testing.T) {
	var labels []string
	ticks := stepTicks{major: 0.2, minor: 0.1}.Ticks(0, 1)
	for _, tick := range ticks {
		if tick.Label != "" {
			labels = append(labels, tick.Label)
		}
	}
	if len(ticks) != 11 || strings.Join(labels, " ") != "0 0.2 0.4 0.6 0.8 1" {
		t.Errorf("%d ticks, labels %q", len(ticks), labels)
	}
}

func TestLogTicks(t *testing.T) {
	labels := func(min, max float64) (out []string) {
		for _, tick := range (logTicks{formatNumber}).Ticks(min, max) {
			if tick.Label != "" {
				out = append(out, tick.Label)
			}
		}
		return out
	}
	// Less than three decades: 1, 2 and 5 of each.
	if got, want := strings.Join(labels(15, 900), " "), "20 50 100 200 500"; got != want {
		t.Errorf("labels on 15..900: %q, want %q", got, want)
	}
	// More: the powers of ten only.
	if got, want := strings.Join(labels(1e4, 2e9), " "), "10000 100000 1000000 10000000 100000000 1000000000"; got != want {
		t.Errorf("labels on 1e4..2e9: %q, want %q", got, want)
	}
	if ticks := (logTicks{formatNumber}).Ticks(0, 10); ticks != nil {
		t.Errorf("ticks on a range from 0: %v", ticks)
	}
}
