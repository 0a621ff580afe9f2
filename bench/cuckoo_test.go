package bench

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	linvon "github.com/linvon/cuckoo-filter"
	"github.com/ohbloom/ohbloom/redisbloom"
	panmari "github.com/panmari/cuckoofilter"
	seiflotfy "github.com/seiflotfy/cuckoofilter"
)

// cuckooFilter is what the cuckoo comparison needs of every library.
type cuckooFilter interface {
	Add([]byte) bool
	Test([]byte) bool
	Bytes() uint64 // the filter's memory for its items
}

type rbCuckoo struct{ *redisbloom.CuckooFilter }

func (f rbCuckoo) Add(k []byte) bool { return f.CuckooFilter.Add(k) == nil }
func (f rbCuckoo) Bytes() uint64     { return f.Info().Size }

type rbAtomicCuckoo struct{ *redisbloom.AtomicCuckooFilter }

func (f rbAtomicCuckoo) Add(k []byte) bool { return f.AtomicCuckooFilter.Add(k) == nil }
func (f rbAtomicCuckoo) Bytes() uint64     { return f.Info().Size }

// seiflotfy/cuckoofilter: 4 one-byte fingerprints a bucket, nextPow2(n)
// slots.
type seiflotfyCuckoo struct {
	*seiflotfy.Filter
	bytes uint64
}

func (f seiflotfyCuckoo) Add(k []byte) bool  { return f.Insert(k) }
func (f seiflotfyCuckoo) Test(k []byte) bool { return f.Lookup(k) }
func (f seiflotfyCuckoo) Bytes() uint64      { return f.bytes }

// panmari/cuckoofilter: 4 two-byte fingerprints a bucket.
type panmariCuckoo struct{ *panmari.Filter }

func (f panmariCuckoo) Add(k []byte) bool  { return f.Insert(k) }
func (f panmariCuckoo) Test(k []byte) bool { return f.Lookup(k) }

// Bytes is its bucket array: Count / LoadFactor slots of 2 bytes.
func (f panmariCuckoo) Bytes() uint64 {
	return uint64(float64(f.Count())/f.LoadFactor()+0.5) * 2
}

// linvon/cuckoo-filter, at 4 one-byte fingerprints a bucket.
type linvonCuckoo struct{ *linvon.Filter }

func (f linvonCuckoo) Test(k []byte) bool { return f.Contain(k) }
func (f linvonCuckoo) Bytes() uint64      { return uint64(f.SizeInBytes()) }

func nextPow2(n uint64) uint64 {
	p := uint64(1)
	for p < n {
		p <<= 1
	}
	return p
}

// cuckooPeers builds each library's filter for n items, sized by its own
// constructor: ours as CF.RESERVE n does (RedisBloom's memory), the others
// as their NewFilter(n) does.
var cuckooPeers = []struct {
	name string
	new  func(n uint64) cuckooFilter
}{
	{"ohbloom-rb", func(n uint64) cuckooFilter {
		f, err := redisbloom.NewCuckoo(redisbloom.DefaultCuckooConfig(n))
		if err != nil {
			panic(err)
		}
		return rbCuckoo{f}
	}},
	{"ohbloom-rb-atomic", func(n uint64) cuckooFilter {
		f, err := redisbloom.NewAtomicCuckoo(redisbloom.DefaultCuckooConfig(n))
		if err != nil {
			panic(err)
		}
		return rbAtomicCuckoo{f}
	}},
	{"seiflotfy", func(n uint64) cuckooFilter {
		return seiflotfyCuckoo{seiflotfy.NewFilter(uint(n)), nextPow2(n)}
	}},
	{"panmari", func(n uint64) cuckooFilter { return panmariCuckoo{panmari.NewFilter(uint(n))} }},
	{"linvon", func(n uint64) cuckooFilter {
		return linvonCuckoo{linvon.NewFilter(4, 8, uint(n), linvon.TableTypeSingle)}
	}},
}

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
		for _, peer := range cuckooPeers {
			prefix := fmt.Sprintf("n=%d/lib=%s", n, peer.name)
			var f cuckooFilter
			b.Run(prefix+"/op=add", func(b *testing.B) {
				var elapsed time.Duration
				refused := 0
				for b.Loop() {
					f = nil
					runtime.GC()
					start := time.Now()
					f = peer.new(uint64(n))
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
