// Command fprdata measures false positive rates against memory for the
// accuracy chart and writes them as CSV (docs/data/fpr.csv; the columns are
// described in docs/charts.md):
//
//	go run ./bench/cmd/fprdata -out docs/data/fpr.csv
//
// For each target rate p it builds three filters for 10^6 keys: ohbloom.New,
// sized by ohbloom's exact model; a blocked filter of the same kind sized by
// the textbook formula of the standard Bloom filter, m = -n·ln p / ln²2 bits
// with k = m/n·ln 2 (ohbloom.NewWithConfig with explicit Blocks and K), which
// misses its target because blocking crowds keys into lines; and
// bits-and-blooms, a standard Bloom filter. It adds the same 10^6 random
// 32-byte keys to each and tests other keys, enough for about 2,000 false
// positives at the target. Keys come from fixed seeds, so two runs write the
// same file. It takes about two minutes on two cores; it measures no time,
// so it needs no benchmark lock.
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	bloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/bench"
)

// targets are the rates asked for, from 10% down to 10^-5.
var targets = []float64{0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001, 5e-4, 2e-4, 1e-4, 3e-5, 1e-5}

// tester is what the measurement needs of a filter: Test is read-only in all
// three, so several goroutines may call it at once.
type tester interface {
	Test([]byte) bool
}

// row is one line of the CSV.
type row struct {
	filter         string
	target         float64
	keys           int
	bitsPerKey     float64
	k              int
	queries, fp    int64
	measured, want float64
}

var header = []string{"filter", "target_p", "keys", "bits_per_key", "k", "queries", "false_positives", "measured_fpr", "expected_fpr"}

func (r row) record() []string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	return []string{r.filter, g(r.target), strconv.Itoa(r.keys), g(r.bitsPerKey), strconv.Itoa(r.k),
		strconv.FormatInt(r.queries, 10), strconv.FormatInt(r.fp, 10), g(r.measured), g(r.want)}
}

func main() {
	out := flag.String("out", "docs/data/fpr.csv", "CSV file to write")
	n := flag.Int("n", 1_000_000, "keys per filter")
	minQueries := flag.Int64("min-queries", 10_000_000, "fewest absent keys tested per filter")
	maxQueries := flag.Int64("max-queries", 200_000_000, "most absent keys tested per filter")
	flag.Parse()

	keys := bench.NewKeys(*n, 1)
	var rows []row
	for _, p := range targets {
		queries := min(*maxQueries, max(*minQueries, int64(math.Ceil(2000/p))))
		// Round up to whole chunks of absent keys.
		queries = (queries + chunk - 1) / chunk * chunk

		f := ohbloom.New(uint64(*n), p)
		tb, err := textbookBlocked(uint64(*n), p)
		if err != nil {
			log.Fatal(err)
		}
		bb := bloom.NewWithEstimates(uint(*n), p)
		for i := range *n {
			f.Add(keys.At(i))
			tb.Add(keys.At(i))
			bb.Add(keys.At(i))
		}
		nf := float64(*n)
		cases := []struct {
			name string
			f    tester
			bits float64
			k    int
			want float64
		}{
			{"ohbloom", f, float64(f.Bits()), f.K(), ohbloom.ExpectedFPR(uint64(*n), f.Blocks(), f.K())},
			{"blocked-textbook", tb, float64(tb.Bits()), tb.K(), ohbloom.ExpectedFPR(uint64(*n), tb.Blocks(), tb.K())},
			{"bitsandblooms", bb, float64(bb.Cap()), int(bb.K()),
				math.Pow(1-math.Exp(-float64(bb.K())*nf/float64(bb.Cap())), float64(bb.K()))},
		}
		filters := make([]tester, len(cases))
		for i, c := range cases {
			filters[i] = c.f
		}
		fps := falsePositives(filters, queries)
		for i, c := range cases {
			fp := fps[i]
			r := row{c.name, p, *n, c.bits / nf, c.k, queries, fp, float64(fp) / float64(queries), c.want}
			rows = append(rows, r)
			fmt.Fprintf(os.Stderr, "%-16s p=%-7g %6.2f bits/key k=%-2d measured %.4g (expected %.4g) over %d\n",
				r.filter, p, r.bitsPerKey, r.k, r.measured, r.want, queries)
		}
	}

	file, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	w := csv.NewWriter(file)
	w.Write(header)
	for _, r := range rows {
		w.Write(r.record())
	}
	w.Flush()
	if err := w.Error(); err != nil {
		log.Fatal(err)
	}
	if err := file.Close(); err != nil {
		log.Fatal(err)
	}
}

// textbookBlocked builds a blocked one-hash filter the way a reader of the
// standard formulas would: m = -n·ln p / ln²2 bits rounded up to whole
// 512-bit blocks, and k = m/n·ln 2 partitions, within ohbloom's 2 to 16.
func textbookBlocked(n uint64, p float64) (*ohbloom.Filter, error) {
	m := -float64(n) * math.Log(p) / (math.Ln2 * math.Ln2)
	blocks := uint64(math.Ceil(m / 512))
	k := min(16, max(2, int(math.Round(m/float64(n)*math.Ln2))))
	return ohbloom.NewWithConfig(ohbloom.Config{Capacity: n, FPR: p, Blocks: blocks, K: k})
}

// chunk is how many absent keys are made at a time: 32 MB of them.
const chunk = 1 << 20

// falsePositives tests the same queries absent keys against each filter on
// every core and counts each one's positives. Chunk c of absent keys is
// drawn from seed 2^32+c, which no present key shares.
func falsePositives(filters []tester, queries int64) []int64 {
	var next atomic.Int64
	fp := make([]atomic.Int64, len(filters))
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for c := next.Add(1) - 1; c*chunk < queries; c = next.Add(1) - 1 {
				absent := bench.NewKeys(chunk, 1<<32+uint64(c))
				for j, f := range filters {
					var local int64
					for i := range chunk {
						if f.Test(absent.At(i)) {
							local++
						}
					}
					fp[j].Add(local)
				}
			}
		})
	}
	wg.Wait()
	counts := make([]int64, len(filters))
	for j := range fp {
		counts[j] = fp[j].Load()
	}
	return counts
}
