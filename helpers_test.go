package ohbloom

import (
	"math/bits"
	"runtime"
)

func mul64(a, b uint64) (uint64, uint64) { return bits.Mul64(a, b) }

func popcount(x uint64) int { return bits.OnesCount64(x) }

type runtimeMem struct{ totalAlloc uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.totalAlloc = s.TotalAlloc
}
