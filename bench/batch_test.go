package bench

import (
	"fmt"
	"testing"

	"github.com/ohbloom/ohbloom"
)

// batchCases are the filters of the batched comparison: in the caches, past
// them, and past 1 GiB. The keys tested are real 32-byte keys; the last
// filter is sized for 10^9 keys at 1% (1.25 GB) and filled to its capacity
// with 10^8 such keys and 9·10^8 hashes from a PRNG (10^9 keys would take
// 32 GB), so that every block is as full as in a real filter.
var batchCases = []struct{ keys, capacity int }{{1e6, 1e6}, {3e7, 3e7}, {1e8, 1e9}}

// BenchmarkBatch compares batched Add and Test with the same calls one key
// at a time, on the same filter, 32-byte keys at p = 1%:
//
//	go test -c -o b.test ./bench/
//	for i in 1 2 3; do ./b.test -test.run '^$' -test.bench Batch; done > batch.txt
//	benchstat -col /op -row /n batch.txt
func BenchmarkBatch(b *testing.B) {
	const window = 4096 // keys per batched call
	for _, c := range batchCases {
		n := c.keys
		if testing.Short() && n > 1e6 {
			continue
		}
		keys := NewKeys(n, 1)
		f := ohbloom.New(uint64(c.capacity), 0.01)
		fillWithHashes(f, c.capacity-n)
		// The batched calls take [][]byte, which a caller holding keys has
		// anyway: build it once (2.4 GB at 10^8), outside the timings.
		all := keys.Views(nil, 0, n)
		f.AddBatch(all)
		results := make([]bool, window)
		perKey := func(b *testing.B, keys int) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(keys), "ns/key")
		}
		// The four cases are written out rather than sharing a loop that
		// takes the operation as a function value: that would add an
		// indirect call per key to the one-by-one baselines.
		name := fmt.Sprintf("n=%d/p=0.01", c.capacity)
		b.Run(name+"/op=test-loop", func(b *testing.B) {
			i, done := 0, 0
			for b.Loop() {
				for range window {
					if !f.Test(keys.At(i)) {
						b.Fatal("false negative")
					}
					if i++; i == n {
						i = 0
					}
				}
				done += window
			}
			perKey(b, done)
		})
		b.Run(name+"/op=test-batch", func(b *testing.B) {
			at, done := 0, 0
			for b.Loop() {
				if at+window > n {
					at = 0
				}
				f.TestBatch(all[at:at+window], results)
				at += window
				done += window
			}
			for _, r := range results {
				if !r {
					b.Fatal("false negative")
				}
			}
			perKey(b, done)
		})
		b.Run(name+"/op=add-loop", func(b *testing.B) {
			i, done := 0, 0
			for b.Loop() {
				for range window {
					f.Add(keys.At(i))
					if i++; i == n {
						i = 0
					}
				}
				done += window
			}
			perKey(b, done)
		})
		b.Run(name+"/op=add-batch", func(b *testing.B) {
			at, done := 0, 0
			for b.Loop() {
				if at+window > n {
					at = 0
				}
				f.AddBatch(all[at : at+window])
				at += window
				done += window
			}
			perKey(b, done)
		})
	}
}

// fillWithHashes adds count pseudo-random hashes to f (splitmix64 of a
// counter), as many distinct keys would.
func fillWithHashes(f *ohbloom.Filter, count int) {
	hs := make([]uint64, 1<<20)
	for x := uint64(0); count > 0; {
		chunk := hs[:min(len(hs), count)]
		for i := range chunk {
			x += 0x9E3779B97F4A7C15
			z := x
			z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
			z = (z ^ z>>27) * 0x94D049BB133111EB
			chunk[i] = z ^ z>>31
		}
		f.AddHashes(chunk)
		count -= len(chunk)
	}
}
