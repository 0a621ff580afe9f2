package bench

import (
	"sync"
	"sync/atomic"
	"testing"

	bloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/ohbloom/ohbloom"
)

// mutexBloom is how bits-and-blooms/bloom is shared between goroutines: it
// has no concurrent filter, so it goes behind a mutex.
type mutexBloom struct {
	mu sync.Mutex
	f  *bloom.BloomFilter
}

func (m *mutexBloom) Add(k []byte) {
	m.mu.Lock()
	m.f.Add(k)
	m.mu.Unlock()
}

func (m *mutexBloom) Test(k []byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.f.Test(k)
}

// BenchmarkParallel shares one filter among the benchmark's goroutines;
// run it at GOMAXPROCS 1 and 2 to see how it scales:
//
//	go test -run '^$' -bench Parallel -cpu 1,2 -count 6 ./bench/ > parallel.txt
//	benchstat -col /gomaxprocs -row /lib,/op parallel.txt
//
// The filter holds 3·10^7 keys (36 MB, past the caches). "hot" re-adds 16
// keys that are present in a small filter all the time: with an atomic
// filter that writes nothing it scales like a read; with a filter that
// writes (or a lock) the cores fight over the cache lines.
func BenchmarkParallel(b *testing.B) {
	const n = 30_000_000
	keys := NewKeys(n, 1)
	// Each library gives a filter holding the first half of the keys, for
	// the tests, and a fresh one for the adds, so that every add at either
	// GOMAXPROCS inserts a new key.
	type lib struct {
		name  string
		full  func() (add func([]byte), test func([]byte) bool)
		fresh func(n uint) func([]byte)
	}
	libs := []lib{
		{"ohbloom-atomic", func() (func([]byte), func([]byte) bool) {
			f := ohbloom.NewAtomic(n, 0.01)
			f.AddParallel(keys.Views(nil, 0, n/2))
			return f.Add, f.Test
		}, func(n uint) func([]byte) { return ohbloom.NewAtomic(uint64(n), 0.01).Add }},
		{"bitsandblooms-mutex", func() (func([]byte), func([]byte) bool) {
			m := &mutexBloom{f: bloom.NewWithEstimates(n, 0.01)}
			for i := range n / 2 {
				m.f.Add(keys.At(i))
			}
			return m.Add, m.Test
		}, func(n uint) func([]byte) { return (&mutexBloom{f: bloom.NewWithEstimates(n, 0.01)}).Add }},
	}
	for _, l := range libs {
		add, test := l.full()
		hot := l.fresh(1000)
		for i := range 16 {
			hot(keys.At(i))
		}
		run := func(name string, body func(i int)) {
			b.Run("lib="+l.name+"/op="+name, func(b *testing.B) {
				var next atomic.Int64 // hands each goroutine its own stretch
				b.RunParallel(func(pb *testing.PB) {
					i := int(next.Add(1<<22)) % n
					for pb.Next() {
						body(i)
						if i++; i == n {
							i = 0
						}
					}
				})
			})
		}
		b.Run("lib="+l.name+"/op=add", func(b *testing.B) {
			add := l.fresh(n)
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1<<22)) % n
				for pb.Next() {
					add(keys.At(i))
					if i++; i == n {
						i = 0
					}
				}
			})
		})
		run("test", func(i int) { test(keys.At(i)) })
		run("mixed-10pct-add", func(i int) {
			if i%10 == 0 {
				add(keys.At(i))
			} else {
				test(keys.At(i))
			}
		})
		run("hot-readd", func(i int) { hot(keys.At(i % 16)) })
	}
}
