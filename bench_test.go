package ohbloom

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ohbloom/ohbloom/internal/testkeys"
)

// The benchmarks' keys are testkeys.Key16's, generated on the fly so that
// 10^8 keys cost no memory. Keys below n are added; queries from n up are
// absent.
var benchSizes = []uint64{1e4, 1e6, 1e8}

func BenchmarkFilter(b *testing.B) {
	for _, n := range benchSizes {
		if n > 1e6 && testing.Short() {
			continue
		}
		f := New(n, 0.01)
		var buf [16]byte
		for i := range n {
			f.Add(testkeys.Key16(&buf, i))
		}
		prefix := fmt.Sprintf("n=%.0e/p=0.01", float64(n))
		b.Run(prefix+"/add", func(b *testing.B) {
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				f.Add(testkeys.Key16(&buf, i%n))
				i++
			}
		})
		b.Run(prefix+"/test-hit", func(b *testing.B) {
			b.ReportAllocs()
			i, hits := uint64(0), 0
			for b.Loop() {
				if f.Test(testkeys.Key16(&buf, i%n)) {
					hits++
				}
				i++
			}
			if hits != b.N {
				b.Fatal("false negatives")
			}
		})
		b.Run(prefix+"/test-miss", func(b *testing.B) {
			b.ReportAllocs()
			i, fp := uint64(0), 0
			for b.Loop() {
				if f.Test(testkeys.Key16(&buf, n+i)) {
					fp++
				}
				i++
			}
			b.ReportMetric(float64(fp)/float64(b.N), "fpr")
		})
	}
}

// lockedFilter is the baseline that AtomicFilter replaces: a Filter behind a
// mutex.
type lockedFilter struct {
	mu sync.Mutex
	f  *Filter
}

func (l *lockedFilter) Add(k []byte) {
	l.mu.Lock()
	l.f.Add(k)
	l.mu.Unlock()
}

func (l *lockedFilter) Test(k []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Test(k)
}

// BenchmarkParallel shares one filter among b.RunParallel goroutines: the
// lock-free AtomicFilter against a mutex-wrapped Filter, for adds, tests and
// a 1:9 mix. Each goroutine walks its own keys from a shared counter.
func BenchmarkParallel(b *testing.B) {
	const n = 1e6
	type impl struct {
		name string
		add  func([]byte)
		test func([]byte) bool
	}
	a := NewAtomic(n, 0.01)
	l := &lockedFilter{f: New(n, 0.01)}
	for _, im := range []impl{
		{"atomic", a.Add, a.Test},
		{"mutex", l.Add, l.Test},
	} {
		var next atomic.Uint64
		b.Run(im.name+"/add", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				var buf [16]byte
				i := next.Add(1 << 32)
				for pb.Next() {
					im.add(testkeys.Key16(&buf, i%n))
					i++
				}
			})
		})
		b.Run(im.name+"/test", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				var buf [16]byte
				i := next.Add(1 << 32)
				for pb.Next() {
					im.test(testkeys.Key16(&buf, i))
					i++
				}
			})
		})
		b.Run(im.name+"/mixed-10pct-add", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				var buf [16]byte
				i := next.Add(1 << 32)
				for pb.Next() {
					if i%10 == 0 {
						im.add(testkeys.Key16(&buf, i%n))
					} else {
						im.test(testkeys.Key16(&buf, i))
					}
					i++
				}
			})
		})
	}
}

// BenchmarkCounting compares the counting filter with the plain one at 10^6
// keys, p = 1%: add, test of present keys, and remove (then re-add, so the
// filter stays full).
//
//	go test -run '^$' -bench Counting -count 6 .
func BenchmarkCounting(b *testing.B) {
	const n = 1_000_000
	plain, counting := New(n, 0.01), NewCounting(n, 0.01)
	var buf [16]byte
	for i := range uint64(n) {
		plain.Add(testkeys.Key16(&buf, i))
		counting.Add(testkeys.Key16(&buf, i))
	}
	b.Run("filter=plain/op=add", func(b *testing.B) {
		i := uint64(0)
		for b.Loop() {
			plain.Add(testkeys.Key16(&buf, i%n))
			i++
		}
	})
	b.Run("filter=plain/op=test", func(b *testing.B) {
		i := uint64(0)
		for b.Loop() {
			plain.Test(testkeys.Key16(&buf, i%n))
			i++
		}
	})
	b.Run("filter=counting/op=test", func(b *testing.B) {
		i := uint64(0)
		for b.Loop() {
			counting.Test(testkeys.Key16(&buf, i%n))
			i++
		}
	})
	b.Run("filter=counting/op=add-remove", func(b *testing.B) {
		i := uint64(0)
		for b.Loop() {
			counting.Add(testkeys.Key16(&buf, n+i%n))
			counting.Remove(testkeys.Key16(&buf, n+i%n))
			i++
		}
	})
	b.ReportMetric(float64(counting.SizeBytes()*8)/n, "counting-bits/key")
}

// BenchmarkScalable compares a scalable filter grown from 10^4 to 10^6 keys
// (8 stages) with a filter sized for 10^6 from the start: a test of an
// absent key probes every stage, a present one stops at its stage.
//
//	go test -run '^$' -bench Scalable -count 6 .
func BenchmarkScalable(b *testing.B) {
	const n = 1_000_000
	s, right := NewScalable(n/100, 0.01), New(n, 0.01)
	var buf [16]byte
	for i := range uint64(n) {
		s.Add(testkeys.Key16(&buf, i))
		right.Add(testkeys.Key16(&buf, i))
	}
	for _, c := range []struct {
		name string
		test func([]byte) bool
	}{{"scalable", s.Test}, {"right-sized", right.Test}} {
		b.Run("filter="+c.name+"/op=test-hit", func(b *testing.B) {
			i := uint64(0)
			for b.Loop() {
				c.test(testkeys.Key16(&buf, i%n))
				i++
			}
		})
		b.Run("filter="+c.name+"/op=test-miss", func(b *testing.B) {
			i := uint64(0)
			for b.Loop() {
				c.test(testkeys.Key16(&buf, n+i))
				i++
			}
		})
	}
	b.ReportMetric(float64(s.SizeBytes())/float64(right.SizeBytes()), "memory-ratio")
}
