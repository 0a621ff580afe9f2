package bench

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

var cuckooSizes = flag.String("cuckoo.n", "1e6,1e8", "item counts of BenchmarkCuckooPeers, comma-separated")

// BenchmarkCuckooPeers fills each library's cuckoo filter with n 32-byte
// keys (op=add: ns per add over the whole fill, with bits per item, the
// adds refused and the false positive rate over 2^20 absent keys), then
// times Test of present keys (op=test-hit) and of absent ones
// (op=test-miss). The names are key=value so that benchstat puts the
// libraries side by side:
//
//	flock /tmp/ohbloom-bench.lock go test -run '^$' -bench CuckooPeers -count 5 ./bench/ > cuckoo.txt
//	benchstat -col /lib -row /n,/op cuckoo.txt
func BenchmarkCuckooPeers(b *testing.B) {
	for _, s := range strings.Split(*cuckooSizes, ",") {
		nf, err := strconv.ParseFloat(s, 64)
		if err != nil {
			b.Fatal(err)
		}
		n := int(nf)
		present := NewKeys(n, 1)
		absent := NewKeys(1<<20, 2)
		for _, peer := range CuckooPeers {
			prefix := fmt.Sprintf("n=%d/lib=%s", n, peer.Name)
			var f CuckooFilter
			b.Run(prefix+"/op=add", func(b *testing.B) {
				var elapsed time.Duration
				refused := 0
				for b.Loop() {
					f = nil
					runtime.GC()
					start := time.Now()
					f = peer.New(uint64(n))
					refused = 0
					for i := range n {
						if !f.Add(present.At(i)) {
							refused++
						}
					}
					elapsed += time.Since(start)
				}
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N)/float64(n), "ns/add")
				b.ReportMetric(float64(f.Bytes())*8/float64(n), "bits/item")
				b.ReportMetric(float64(refused), "refused")
				fp := 0
				for i := range absent.Len() {
					if f.Test(absent.At(i)) {
						fp++
					}
				}
				b.ReportMetric(float64(fp)/float64(absent.Len()), "fpr")
			})
			if f == nil {
				continue
			}
			for _, op := range []struct {
				name string
				keys Keys
			}{{"test-hit", present}, {"test-miss", absent}} {
				b.Run(prefix+"/op="+op.name, func(b *testing.B) {
					i, m, hits := 0, op.keys.Len(), 0
					for b.Loop() {
						if f.Test(op.keys.At(i)) {
							hits++
						}
						if i++; i == m {
							i = 0
						}
					}
					if op.name == "test-hit" {
						// A refused add may lose another item too: said,
						// not hidden.
						b.ReportMetric(1-float64(hits)/float64(b.N), "missed")
					}
				})
			}
			f = nil
			runtime.GC()
		}
	}
}
