//go:build !amd64

package bench

import (
	"math/bits"
	"unsafe"
)

// prefetchLines loads the first word of each line of hs: independent loads,
// so their misses overlap, as the library's portable prefetch does.
func prefetchLines(lines unsafe.Pointer, nlines uint64, hs []uint64) {
	ls := unsafe.Slice((*line)(lines), nlines)
	var sum uint64
	for _, h := range hs {
		i, _ := bits.Mul64(h, nlines)
		sum += ls[i][0]
	}
	sink += sum
}
