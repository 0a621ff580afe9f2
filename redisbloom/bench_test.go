package redisbloom

import (
	"fmt"
	"testing"

	"github.com/ohbloom/ohbloom/classic"
	"github.com/ohbloom/ohbloom/internal/testkeys"
)

// BenchmarkRedisBloom compares the RedisBloom chains with a classic.Filter
// of the same bits and hashes (its first filter's), so that the difference
// is the code: RedisBloom's two MurmurHash64A passes and modulo positions
// against bits-and-blooms' MurmurHash3 pair. Keys are testkeys.Key16's;
// the filters hold n keys, add re-adds them, test-miss asks for others,
// add-new adds distinct keys to an empty filter reserved for 2^24.
func BenchmarkRedisBloom(b *testing.B) {
	for _, n := range []uint64{1e4, 1e6, 1e8} {
		if n > 1e6 && testing.Short() {
			continue
		}
		b.Run(fmt.Sprintf("n=%.0e/p=0.01", float64(n)), func(b *testing.B) { benchRedisBloom(b, n) })
	}
}

func benchRedisBloom(b *testing.B, n uint64) {
	c := Config{Capacity: n, ErrorRate: 0.01, Expansion: 2}
	plain, err := New(c)
	if err != nil {
		b.Fatal(err)
	}
	atomic, _ := NewAtomic(c)
	link := plain.Link(0)
	twin, _ := classic.New(classic.BitsAndBlooms, link.Bits, uint64(link.Hashes))
	big := Config{Capacity: 1 << 24, ErrorRate: 0.01, Expansion: 2}
	bigChain, _ := New(big)
	bigLink := bigChain.Link(0)
	var buf [16]byte
	for i := range n {
		k := testkeys.Key16(&buf, i)
		plain.Add(k)
		atomic.Add(k)
		twin.Add(k)
	}
	for _, s := range []struct {
		name  string
		add   func([]byte)
		test  func([]byte) bool
		fresh func() func([]byte)
	}{
		{"redisbloom", func(k []byte) { plain.Add(k) }, plain.Test, func() func([]byte) {
			f, _ := New(big)
			return func(k []byte) { f.Add(k) }
		}},
		{"redisbloom-atomic", func(k []byte) { atomic.Add(k) }, atomic.Test, func() func([]byte) {
			f, _ := NewAtomic(big)
			return func(k []byte) { f.Add(k) }
		}},
		{"classic", twin.Add, twin.Test, func() func([]byte) {
			f, _ := classic.New(classic.BitsAndBlooms, bigLink.Bits, uint64(bigLink.Hashes))
			return f.Add
		}},
	} {
		// New items into an empty filter reserved for 2^24 of them, so
		// that the chains do not grow during the run.
		b.Run(s.name+"/add-new", func(b *testing.B) {
			b.ReportAllocs()
			add := s.fresh()
			i := uint64(0)
			for b.Loop() {
				add(testkeys.Key16(&buf, i))
				i++
			}
		})
		b.Run(s.name+"/add", func(b *testing.B) {
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				s.add(testkeys.Key16(&buf, i%n))
				i++
			}
		})
		b.Run(s.name+"/test-hit", func(b *testing.B) {
			b.ReportAllocs()
			i, hits := uint64(0), 0
			for b.Loop() {
				if s.test(testkeys.Key16(&buf, i%n)) {
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
				s.test(testkeys.Key16(&buf, n+i))
				i++
			}
		})
	}
}
