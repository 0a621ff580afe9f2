package bench

import (
	"fmt"
	"testing"

	bloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/classic"
)

// filter is what the comparisons need of every library.
type filter interface {
	Add([]byte)
	Test([]byte) bool
}

// bbloom adapts bits-and-blooms/bloom, whose Add returns the filter.
type bbloom struct{ *bloom.BloomFilter }

func (b bbloom) Add(k []byte) { b.BloomFilter.Add(k) }

// peers builds each library's filter for n keys at rate p.
var peers = []struct {
	name string
	new  func(n uint64, p float64) (filter, float64) // the filter and its size in bits
}{
	{"ohbloom", func(n uint64, p float64) (filter, float64) {
		f := ohbloom.New(n, p)
		return f, float64(f.Bits())
	}},
	{"bitsandblooms", func(n uint64, p float64) (filter, float64) {
		f := bloom.NewWithEstimates(uint(n), p)
		return bbloom{f}, float64(f.Cap())
	}},
	// ohbloom's classic filter, bit-compatible with bits-and-blooms: it
	// must not be slower than the library it mirrors.
	{"ohbloom-classic", func(n uint64, p float64) (filter, float64) {
		f, err := classic.NewWithEstimates(classic.BitsAndBlooms, n, p)
		if err != nil {
			panic(err)
		}
		return f, float64(f.Bits())
	}},
}

// sizes are the filter sizes of the comparison: 1e6 keys (a few MB, in the
// caches) and 3e7 (tens of MB, past them).
var sizes = []int{1e6, 3e7}

// BenchmarkPeers runs Add, Test of present keys and Test of absent keys on
// every library at every size, with 32-byte keys at p = 1%, and reports the
// measured false positive rate and bits per key beside the timings. The
// names are key=value so that benchstat can put the libraries side by side:
//
//	go test -run '^$' -bench Peers -count 6 ./bench/ > peers.txt
//	benchstat -col /lib -row /n,/op peers.txt
func BenchmarkPeers(b *testing.B) {
	const p = 0.01
	for _, n := range sizes {
		present := NewKeys(n, 1)
		absent := NewKeys(1<<20, 2)
		for _, peer := range peers {
			f, bits := peer.new(uint64(n), p)
			prefix := fmt.Sprintf("n=%d/p=%g/lib=%s", n, p, peer.name)
			for i := range n {
				f.Add(present.At(i))
			}
			b.Run(prefix+"/op=add", func(b *testing.B) {
				i := 0
				for b.Loop() {
					f.Add(present.At(i))
					if i++; i == n {
						i = 0
					}
				}
			})
			b.Run(prefix+"/op=test-hit", func(b *testing.B) {
				i, hits := 0, 0
				for b.Loop() {
					if f.Test(present.At(i)) {
						hits++
					}
					if i++; i == n {
						i = 0
					}
				}
				if hits != b.N {
					b.Fatalf("false negatives: %d of %d found", hits, b.N)
				}
			})
			b.Run(prefix+"/op=test-miss", func(b *testing.B) {
				i, fp := 0, 0
				for b.Loop() {
					if f.Test(absent.At(i)) {
						fp++
					}
					i = (i + 1) & (absent.Len() - 1)
				}
				b.ReportMetric(float64(fp)/float64(b.N), "fpr")
				b.ReportMetric(bits/float64(n), "bits/key")
			})
		}
	}
}
