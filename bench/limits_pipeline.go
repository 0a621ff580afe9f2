//go:build amd64 && !purego

package bench

// The batched limit's pipeline: the library's constants with its vector
// code and PREFETCHT0 (prefetch_amd64.go in the root), so that the limit
// keeps the same number of misses in flight as the batched calls.
const (
	limitWindow   = 64
	limitDistance = 48
	limitStep     = 8
)
