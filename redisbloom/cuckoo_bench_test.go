package redisbloom

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
)

// cfBenchKeys returns n distinct 16-byte keys.
func cfBenchKeys(n int, seed uint64) [][]byte {
	keys := make([][]byte, n)
	flat := make([]byte, 16*n)
	for i := range keys {
		k := flat[16*i : 16*i+16 : 16*i+16]
		binary.LittleEndian.PutUint64(k, seed)
		binary.LittleEndian.PutUint64(k[8:], uint64(i))
		keys[i] = k
	}
	return keys
}

// BenchmarkCuckoo times the plain filter's calls at CF.RESERVE n with
// RedisBloom's defaults, filled with n keys, and the concurrent filter's.
//
//	go test -run '^$' -bench 'Cuckoo$' ./redisbloom
func BenchmarkCuckoo(b *testing.B) {
	for _, n := range []int{1e4, 1e6} {
		present, absent := cfBenchKeys(n, 1), cfBenchKeys(1<<16, 2)
		plain, _ := NewCuckoo(DefaultCuckooConfig(uint64(n)))
		shared, _ := NewAtomicCuckoo(DefaultCuckooConfig(uint64(n)))
		for _, k := range present {
			plain.Add(k)
			shared.Add(k)
		}
		for _, f := range []struct {
			name string
			test func([]byte) bool
			add  func([]byte) error
			del  func([]byte) bool
		}{{"plain", plain.Test, plain.Add, plain.Delete}, {"atomic", shared.Test, shared.Add, shared.Delete}} {
			prefix := fmt.Sprintf("n=%d/%s", n, f.name)
			b.Run(prefix+"/test-hit", func(b *testing.B) {
				i := 0
				for b.Loop() {
					f.test(present[i%n])
					i++
				}
			})
			b.Run(prefix+"/test-miss", func(b *testing.B) {
				i := 0
				for b.Loop() {
					f.test(absent[i%len(absent)])
					i++
				}
			})
			b.Run(prefix+"/add+delete", func(b *testing.B) {
				i := 0
				for b.Loop() {
					k := absent[i%len(absent)]
					f.add(k)
					f.del(k)
					i++
				}
			})
		}
	}
}

// rwCuckoo is the baseline for the concurrent filter: a CuckooFilter
// behind a sync.RWMutex.
type rwCuckoo struct {
	mu sync.RWMutex
	f  *CuckooFilter
}

func (r *rwCuckoo) Test(k []byte) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.f.Test(k)
}

func (r *rwCuckoo) Add(k []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.f.Add(k)
}

func (r *rwCuckoo) Delete(k []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.f.Delete(k)
}

// BenchmarkCuckooParallel shares one filter among b.RunParallel's
// goroutines: tests only, and an add and a delete in 16 calls (the filter
// stays as full), against a
// RWMutex-wrapped CuckooFilter.
//
//	go test -run '^$' -bench CuckooParallel -cpu 1,2 ./redisbloom
func BenchmarkCuckooParallel(b *testing.B) {
	const n = 1 << 20
	present := cfBenchKeys(n, 1)
	extra := cfBenchKeys(n, 3)
	for _, kind := range []string{"atomic", "rwmutex"} {
		for _, mix := range []string{"tests", "adds1in16"} {
			var test func([]byte) bool
			var add func([]byte) error
			var del func([]byte) bool
			if kind == "atomic" {
				f, _ := NewAtomicCuckoo(DefaultCuckooConfig(2 * n))
				test, add, del = f.Test, f.Add, f.Delete
			} else {
				f, _ := NewCuckoo(DefaultCuckooConfig(2 * n))
				r := &rwCuckoo{f: f}
				test, add, del = r.Test, r.Add, r.Delete
			}
			for _, k := range present {
				add(k)
			}
			b.Run(kind+"/"+mix, func(b *testing.B) {
				var next sync.Mutex
				seed := 0
				b.RunParallel(func(pb *testing.PB) {
					next.Lock()
					i := seed * 7919
					seed++
					next.Unlock()
					for pb.Next() {
						if mix == "adds1in16" && i%16 == 0 {
							add(extra[i%n])
							del(extra[i%n])
						} else {
							test(present[i%n])
						}
						i++
					}
				})
			})
		}
	}
}
