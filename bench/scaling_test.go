package bench

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ohbloom/ohbloom"
)

// BenchmarkScaling measures what two cores can do at all for a build of
// 5·10^7 keys: Filter.AddBatch of half the keys on one goroutine ("one"),
// the same on each of two goroutines at once into two filters of their
// own ("two": no sharing, no coordination, so its time per key and core
// is the machine's ceiling for any two-core build), and
// AtomicFilter.AddParallel of all the keys. The filters are faulted in
// before the timing, three interleaved rounds:
//
//	cd bench && go test -run '^$' -bench Scaling -benchtime 1x .
func BenchmarkScaling(b *testing.B) {
	n := 50_000_000
	if testing.Short() {
		n = 1 << 20
	}
	keys := NewKeys(n, 1)
	views := keys.Views(nil, 0, n)
	perKey := func(b *testing.B, took time.Duration, keys int, unit string) {
		b.ReportMetric(float64(took.Nanoseconds())/float64(keys), unit)
	}
	for r := 1; r <= 3; r++ {
		b.Run(fmt.Sprintf("run=one/round=%d", r), func(b *testing.B) {
			for b.Loop() {
				f := ohbloom.New(uint64(n), 0.01)
				f.Reset()
				start := time.Now()
				f.AddBatch(views[:n/2])
				perKey(b, time.Since(start), n/2, "ns/key")
			}
		})
		b.Run(fmt.Sprintf("run=two/round=%d", r), func(b *testing.B) {
			for b.Loop() {
				f1, f2 := ohbloom.New(uint64(n), 0.01), ohbloom.New(uint64(n), 0.01)
				f1.Reset()
				f2.Reset()
				start := time.Now()
				var wg sync.WaitGroup
				wg.Go(func() { f1.AddBatch(views[:n/2]) })
				wg.Go(func() { f2.AddBatch(views[n/2:]) })
				wg.Wait()
				perKey(b, time.Since(start), n/2, "ns/key-and-core")
			}
		})
		b.Run(fmt.Sprintf("run=addparallel/round=%d", r), func(b *testing.B) {
			for b.Loop() {
				f := ohbloom.NewAtomic(uint64(n), 0.01)
				f.Reset()
				start := time.Now()
				f.AddParallel(views)
				perKey(b, time.Since(start), n, "ns/key")
			}
		})
	}
}
