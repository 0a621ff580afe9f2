package ohbloom

import (
	"fmt"
	"testing"
)

// BenchmarkRedisBloom compares the RedisBloom chains with a ClassicFilter
// of the same bits and hashes (its first filter's), so that the difference
// is the code: RedisBloom's two MurmurHash64A passes and modulo positions
// against bits-and-blooms' MurmurHash3 pair. Keys are benchKey's 16 bytes;
// the filters hold n keys, add re-adds them, test-miss asks for others.
func BenchmarkRedisBloom(b *testing.B) {
	for _, n := range []uint64{1e4, 1e6, 1e8} {
		if n > 1e6 && testing.Short() {
			continue
		}
		b.Run(fmt.Sprintf("n=%.0e/p=0.01", float64(n)), func(b *testing.B) { benchRedisBloom(b, n) })
	}
}

func benchRedisBloom(b *testing.B, n uint64) {
	c := RedisBloomConfig{Capacity: n, ErrorRate: 0.01, Expansion: 2}
	plain, err := NewRedisBloom(c)
	if err != nil {
		b.Fatal(err)
	}
	atomic, _ := NewAtomicRedisBloom(c)
	link := plain.Link(0)
	classic, _ := NewClassic(BitsAndBlooms, link.Bits, uint64(link.Hashes))
	var buf [16]byte
	for i := range n {
		k := benchKey(&buf, i)
		plain.Add(k)
		atomic.Add(k)
		classic.Add(k)
	}
	for _, s := range []struct {
		name string
		add  func([]byte)
		test func([]byte) bool
	}{
		{"redisbloom", func(k []byte) { plain.Add(k) }, plain.Test},
		{"redisbloom-atomic", func(k []byte) { atomic.Add(k) }, atomic.Test},
		{"classic", classic.Add, classic.Test},
	} {
		b.Run(s.name+"/add", func(b *testing.B) {
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				s.add(benchKey(&buf, i%n))
				i++
			}
		})
		b.Run(s.name+"/test-hit", func(b *testing.B) {
			b.ReportAllocs()
			i, hits := uint64(0), 0
			for b.Loop() {
				if s.test(benchKey(&buf, i%n)) {
					hits++
				}
				i++
			}
			if hits != b.N {
				b.Fatal("false negatives")
			}
		})
		b.Run(s.name+"/test-miss", func(b *testing.B) {
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				s.test(benchKey(&buf, n+i))
				i++
			}
		})
	}
}
