// Command cuckoopeers measures redisbloom's cuckoo filter against the Go
// cuckoo filters (bench.CuckooPeers) side by side and prints a Markdown
// table per item count:
//
//	flock /tmp/ohbloom-bench.lock go run ./bench/cmd/cuckoopeers -n 1e6,1e8
//
// -cpuprofile writes a CPU profile of the whole run (go tool pprof).
//
// Every configuration is filled with the same n random 32-byte keys,
// -fills times, all at once a chunk of 2^16 keys at a time, each
// configuration in turn (ns/add is the median over the fills of the fill's
// time per key, its allocation included), then its
// Test is timed on present and on absent keys in -rounds rounds, each
// round timing every library on a batch of -batch keys in an order that
// rotates each round. A table cell is the median over the rounds, and a
// ratio is the median of the per-round ratios to rb-n, so that a burst
// of noise on the shared machine slows one round of every library rather
// than all rounds of one. The false positive rate is over 2^20 absent
// keys; "refused" counts adds that failed.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ohbloom/ohbloom/bench"
)

func main() {
	sizes := flag.String("n", "1e6,1e8", "item counts, comma-separated")
	fills := flag.Int("fills", 3, "fills of each filter timed")
	rounds := flag.Int("rounds", 15, "rounds of lookups")
	batch := flag.Int("batch", 1<<18, "lookups per library per round")
	only := flag.String("peers", "", "comma-separated configurations to run (default all)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	peers := bench.CuckooPeers
	if *only != "" {
		peers = nil
		for _, p := range bench.CuckooPeers {
			if slices.Contains(strings.Split(*only, ","), p.Name) {
				peers = append(peers, p)
			}
		}
	}
	fmt.Printf("%s/%s, %d CPUs, %s\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	for _, s := range strings.Split(*sizes, ",") {
		nf, err := strconv.ParseFloat(s, 64)
		if err != nil {
			log.Fatal(err)
		}
		run(int(nf), peers, *fills, *rounds, *batch)
	}
}

type result struct {
	add, hit, miss      []float64 // ns, per fill or round
	hitRatio, missRatio []float64
	addRatio            []float64
	bits, fpr           float64
	refused             int
}

func run(n int, peers []bench.CuckooPeer, fills, rounds, batch int) {
	present := bench.NewKeys(n, 1)
	absent := bench.NewKeys(1<<20, 2)
	filters := make([]bench.CuckooFilter, len(peers))
	res := make([]result, len(peers))
	base := slices.IndexFunc(peers, func(p bench.CuckooPeer) bool { return p.Name == "rb-n" })
	const chunk = 1 << 16
	for r := range fills {
		for i := range filters {
			filters[i] = nil
		}
		runtime.GC()
		elapsed := make([]time.Duration, len(peers))
		for i, p := range peers {
			start := time.Now()
			filters[i] = p.New(uint64(n))
			elapsed[i] += time.Since(start)
			res[i].refused = 0
		}
		// The fills go a chunk of keys at a time, every configuration in
		// turn, so that the machine's noise spreads over all of them.
		for c := 0; c*chunk < n; c++ {
			from, to := c*chunk, min(n, (c+1)*chunk)
			for j := range peers {
				i := (j + c + r) % len(peers)
				f := filters[i]
				start := time.Now()
				for k := from; k < to; k++ {
					if !f.Add(present.At(k)) {
						res[i].refused++
					}
				}
				elapsed[i] += time.Since(start)
			}
		}
		for i := range res {
			res[i].add = append(res[i].add, float64(elapsed[i].Nanoseconds())/float64(n))
		}
		ratios(res, base, func(r *result) []float64 { return r.add }, func(r *result) *[]float64 { return &r.addRatio })
	}
	for i, f := range filters {
		res[i].bits = float64(f.Bytes()) * 8 / float64(n)
		fp := 0
		for k := range absent.Len() {
			if f.Test(absent.At(k)) {
				fp++
			}
		}
		res[i].fpr = float64(fp) / float64(absent.Len())
	}
	sink := 0
	for r := range rounds {
		for which, keys := range []bench.Keys{present, absent} {
			from := (r * 7919 * batch) % max(1, keys.Len()-batch)
			for j := range peers {
				i := (j + r) % len(peers)
				f := filters[i]
				start := time.Now()
				for k := from; k < from+min(batch, keys.Len()); k++ {
					if f.Test(keys.At(k)) {
						sink++
					}
				}
				ns := float64(time.Since(start).Nanoseconds()) / float64(min(batch, keys.Len()))
				if which == 0 {
					res[i].hit = append(res[i].hit, ns)
				} else {
					res[i].miss = append(res[i].miss, ns)
				}
			}
		}
		ratios(res, base, func(r *result) []float64 { return r.hit }, func(r *result) *[]float64 { return &r.hitRatio })
		ratios(res, base, func(r *result) []float64 { return r.miss }, func(r *result) *[]float64 { return &r.missRatio })
	}
	fmt.Printf("n = %d (%d fills, %d rounds of %d lookups; ratios to rb-n, medians of per-round ratios; sink %d)\n\n", n, fills, rounds, batch, sink%2)
	fmt.Println("| configuration | bits/item | FPR | refused | ns/add | × | Test present ns | × | Test absent ns | × |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for i, p := range peers {
		r := &res[i]
		fmt.Printf("| %s | %.1f | %.3f%% | %d | %.0f | %s | %.1f | %s | %.1f | %s |\n", p.Name, r.bits, 100*r.fpr, r.refused,
			median(r.add), ratio(r.addRatio), median(r.hit), ratio(r.hitRatio), median(r.miss), ratio(r.missRatio))
	}
	fmt.Println()
	os.Stdout.Sync()
}

// ratios appends each configuration's last value over the base's.
func ratios(res []result, base int, of func(*result) []float64, to func(*result) *[]float64) {
	if base < 0 {
		return
	}
	b := of(&res[base])
	for i := range res {
		v := of(&res[i])
		*to(&res[i]) = append(*to(&res[i]), v[len(v)-1]/b[len(b)-1])
	}
}

func ratio(r []float64) string {
	if len(r) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", median(r))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
