package bench

import (
	"fmt"
	"testing"

	"github.com/ohbloom/ohbloom"
)

// batchSizes are the filters of the batched comparison: in the caches,
// past them, and past 1 GiB (10^8 keys at 1% take 1.25 GB).
var batchSizes = []int{1e6, 3e7, 1e8}

// BenchmarkBatch compares batched Add and Test with the same calls one key
// at a time, on the same filter, 32-byte keys at p = 1%:
//
//	go test -c -o b.test ./bench/
//	for i in 1 2 3; do ./b.test -test.run '^$' -test.bench Batch; done > batch.txt
//	benchstat -col /op -row /n batch.txt
func BenchmarkBatch(b *testing.B) {
	const window = 4096 // keys per batched call
	for _, n := range batchSizes {
		if testing.Short() && n > 1e6 {
			continue
		}
		keys := NewKeys(n, 1)
		f := ohbloom.New(uint64(n), 0.01)
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
		name := fmt.Sprintf("n=%d/p=0.01", n)
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
