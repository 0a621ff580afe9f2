//go:build !amd64 || purego

package bench

// The batched limit's pipeline under purego or off amd64: the library's
// constants there (prefetch_other.go in the root), so that the limit reads
// in the same windows and steps as the batched calls.
const (
	limitWindow   = 256
	limitDistance = 128
	limitStep     = 128
)
