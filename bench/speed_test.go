package bench

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/ohbloom/ohbloom"
)

var speedMax = flag.Float64("speed.max", 3e7, "largest capacity BenchmarkSpeed builds; 1e9 takes about 3 GB and 5 minutes")

// speedCaps are the capacities of BenchmarkSpeed, half a decade apart: at
// p = 1% a filter takes 1.25 bytes per key of capacity, so they run from
// 12.5 kB (in L1 and L2) to 1.25 GB (far past L3).
var speedCaps = []int{1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 3e7, 1e8, 3e8, 1e9}

// speedKeys caps the real keys of one filter: 10^7 32-byte keys take 320 MB.
// A larger filter gets the rest of its capacity as pseudo-random hashes
// (ohbloom) or bits set at the density that many keys would leave
// (bits-and-blooms), so that it is as full as a real one.
const speedKeys = 10_000_000

// BenchmarkSpeed measures the cost of one lookup as the filter grows from
// the caches to past 1 GB: ohbloom's Test and TestBatch and bits-and-blooms'
// Test, 32-byte keys at p = 1%, each filter filled to its capacity, for keys
// it holds (keys=present) and keys it does not (keys=absent). It reports
// ns/key and the filter's size, and prints the cache sizes as configuration
// lines, which the chart draws. docs/data/speed.txt holds its output, three
// rounds run one after the other, so that a noisy minute on a shared
// machine falls on all libraries alike:
//
//	go test -c -o /tmp/bench.test ./bench/
//	for i in 1 2 3; do flock /tmp/ohbloom-bench.lock /tmp/bench.test -test.run '^$' -test.bench Speed -test.timeout 1h -speed.max 1e9; done > docs/data/speed.txt
//
// Without -speed.max it stops at 3·10^7 keys (37.5 MB), well past the caches,
// in about two minutes.
func BenchmarkSpeed(b *testing.B) {
	printCacheSizes()
	const window = 4096 // keys per timed iteration, and per batched call
	absent := NewKeys(1<<20, 2)
	absentViews := absent.Views(nil, 0, absent.Len())
	results := make([]bool, window)
	for _, capacity := range speedCaps {
		if float64(capacity) > *speedMax || testing.Short() && capacity > 1e6 {
			break
		}
		n := min(capacity, speedKeys)
		keys := NewKeys(n, 1)
		views := keys.Views(nil, 0, n)

		f := ohbloom.New(uint64(capacity), 0.01)
		fillWithHashes(f, capacity-n)
		f.AddBatch(views)
		bb := filledBitsAndBlooms(capacity, capacity-n, 0.01)
		for _, k := range views {
			bb.Add(k)
		}

		for _, set := range []struct {
			name  string
			keys  Keys
			views [][]byte
		}{{"present", keys, views}, {"absent", absent, absentViews}} {
			prefix := fmt.Sprintf("cap=%d/keys=%s", capacity, set.name)
			want := set.name == "present"
			// Each loop is written out rather than shared through a function
			// value, which would add an indirect call per key.
			run := func(name string, bytes uint64, body func(at int) int) {
				b.Run(prefix+"/"+name, func(b *testing.B) {
					at, done, hits := 0, 0, 0
					for b.Loop() {
						if at+window > set.keys.Len() {
							at = 0
						}
						hits += body(at)
						at += window
						done += window
					}
					if want && hits != done {
						b.Fatalf("false negatives: %d of %d found", hits, done)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/key")
					b.ReportMetric(float64(bytes), "filter-bytes")
				})
			}
			run("lib=ohbloom/op=test", f.SizeBytes(), func(at int) (hits int) {
				for i := at; i < at+window; i++ {
					if f.Test(set.keys.At(i)) {
						hits++
					}
				}
				return hits
			})
			run("lib=ohbloom/op=test-batch", f.SizeBytes(), func(at int) (hits int) {
				f.TestBatch(set.views[at:at+window], results)
				for _, r := range results {
					if r {
						hits++
					}
				}
				return hits
			})
			run("lib=bitsandblooms/op=test", uint64(bb.Cap()/8), func(at int) (hits int) {
				for i := at; i < at+window; i++ {
					if bb.Test(set.keys.At(i)) {
						hits++
					}
				}
				return hits
			})
		}
	}
}

// filledBitsAndBlooms returns a bits-and-blooms filter for capacity keys at
// rate p whose bits are set as adding count random keys would set them: each
// bit independently with probability 1 - e^(-k·count/m). Adding 10^9 keys
// would take minutes of random writes.
func filledBitsAndBlooms(capacity, count int, p float64) *bloom.BloomFilter {
	m, k := bloom.EstimateParameters(uint(capacity), p)
	words := make([]uint64, (m+63)/64)
	if count > 0 {
		q := 1 - math.Exp(-float64(k)*float64(count)/float64(m))
		// A word with bits set with probability q, to 12 binary places:
		// from the last place to the first, OR in a random word for a 1
		// and AND one in for a 0, each of which halves the distance to
		// that place's digit.
		const places = 12
		digits := uint64(math.Round(q * (1 << places)))
		r := rand.New(rand.NewPCG(3, uint64(capacity)))
		for i := range words {
			var w uint64
			for d := range places {
				if digits>>d&1 == 1 {
					w |= r.Uint64()
				} else {
					w &= r.Uint64()
				}
			}
			words[i] = w
		}
		if tail := m % 64; tail != 0 {
			words[len(words)-1] &= 1<<tail - 1
		}
	}
	return bloom.FromWithM(words, m, k)
}

// printCacheSizes prints this machine's data cache sizes as benchmark
// configuration lines ("cache-l2-bytes: 2097152"), from Linux's sysfs;
// elsewhere it prints nothing.
func printCacheSizes() {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	for _, d := range dirs {
		read := func(name string) string {
			s, _ := os.ReadFile(filepath.Join(d, name))
			return strings.TrimSpace(string(s))
		}
		if read("type") == "Instruction" {
			continue
		}
		size := read("size")
		mult := 1
		switch {
		case strings.HasSuffix(size, "K"):
			mult, size = 1<<10, strings.TrimSuffix(size, "K")
		case strings.HasSuffix(size, "M"):
			mult, size = 1<<20, strings.TrimSuffix(size, "M")
		}
		if v, err := strconv.Atoi(size); err == nil {
			fmt.Printf("cache-l%s-bytes: %d\n", read("level"), v*mult)
		}
	}
}

func TestFilledBitsAndBlooms(t *testing.T) {
	const capacity = 1_000_000
	for _, count := range []int{0, capacity / 2, capacity} {
		f := filledBitsAndBlooms(capacity, count, 0.01)
		m, k := float64(f.Cap()), float64(f.K())
		want := 1 - math.Exp(-k*float64(count)/m)
		// 12 binary places of the density, and 10^7 bits of sampling.
		if got := float64(f.BitSet().Count()) / m; math.Abs(got-want) > 0.002 {
			t.Errorf("count %d: %.4f of the bits set, want %.4f", count, got, want)
		}
		words := f.BitSet().Words()
		if tail := f.Cap() % 64; tail != 0 && words[len(words)-1]>>tail != 0 {
			t.Errorf("count %d: bits set past m", count)
		}
	}
}
