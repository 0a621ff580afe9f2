package bench

import (
	"math/bits"
	"runtime"
	"sync"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// The limit of a one-hash blocked filter is one XXH3 of the key and one
// random 64-byte line of memory: any probe must hash the key and fetch its
// block, and everything else it does (the k bit positions, the compare,
// the write) is arithmetic on a line already in a register. The functions
// here do exactly the hash and the read, on an array of the filter's size
// filled with data (so its pages are real, not the kernel's shared zero
// page), to measure that limit beside the filter in the same run.

// line is one 64-byte cache line, as a filter block.
type line [8]uint64

// sink keeps the sums of the reads, so the compiler cannot drop them.
var sink uint64

// newLines returns n lines, 64-byte aligned, advised for huge pages like a
// filter, and filled with pseudo-random words on all cores.
func newLines(n uint64) []line {
	raw := make([]line, n+1)
	skip := (64 - uintptr(unsafe.Pointer(&raw[0]))%64) % 64 / 8
	lines := unsafe.Slice((*line)(unsafe.Add(unsafe.Pointer(&raw[0]), skip*8)), n)
	adviseHugePages(lines)
	workers := uint64(runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			x := w * 0x9E3779B97F4A7C15
			for i := n * w / workers; i < n*(w+1)/workers; i++ {
				for j := range lines[i] {
					x += 0x9E3779B97F4A7C15
					lines[i][j] = splitmix(x)
				}
			}
		})
	}
	wg.Wait()
	return lines
}

func splitmix(x uint64) uint64 {
	z := (x ^ x>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// lineOf returns the line of a hash, by the filter's fastrange.
func lineOf(lines []line, h uint64) *line {
	i, _ := bits.Mul64(h, uint64(len(lines)))
	return &lines[i]
}

// readLines is the batched limit: it hashes keys and reads one word of
// the line of each, as the library's runKeys probes them (a ring of two
// windows, the next window hashed a step at a time, prefetches
// limitDistance keys ahead), and returns the sum of the words read.
func readLines(lines []line, keys [][]byte, seed uint64) uint64 {
	if len(keys) == 0 {
		return 0
	}
	base, n := unsafe.Pointer(&lines[0]), uint64(len(lines))
	var sum uint64
	var ring [2][limitWindow]uint64
	cur := ring[0][:min(limitWindow, len(keys))]
	for i := range cur {
		cur[i] = xxh3.HashSeed(keys[i], seed)
	}
	prefetchLines(base, n, cur[:min(limitDistance, len(cur))])
	for w := 0; len(cur) > 0; w++ {
		from := min(len(keys), (w+1)*limitWindow)
		next := ring[(w+1)%2][:min(limitWindow, len(keys)-from)]
		nextKeys := keys[from : from+len(next)]
		for i := 0; i < len(cur); i += limitStep {
			ahead, end := i+limitDistance, i+limitDistance+limitStep
			if ahead < len(cur) {
				prefetchLines(base, n, cur[ahead:min(len(cur), end)])
			}
			if lo, hi := min(len(next), max(0, ahead-len(cur))), min(len(next), end-len(cur)); lo < hi {
				prefetchLines(base, n, next[lo:hi])
			}
			if i < len(next) {
				for j := i; j < min(len(next), i+limitStep); j++ {
					next[j] = xxh3.HashSeed(nextKeys[j], seed)
				}
			}
			for _, h := range cur[i:min(len(cur), i+limitStep)] {
				sum += lineOf(lines, h)[0]
			}
		}
		cur = next
	}
	return sum
}
