package metrics

import "unsafe"

// stackShard picks a counter shard for the calling goroutine from the
// address of a variable on its stack: goroutines have separate stacks, so
// concurrent callers spread over the shards, at the cost of one multiply.
// (Go has no cheap goroutine or CPU id; a stack that moves when it grows
// just changes shard, which is harmless.) This is the package's only use of
// unsafe.
//
//go:noinline
func stackShard() int {
	var marker byte
	addr := uint64(uintptr(unsafe.Pointer(&marker)))
	return int((addr >> 8) * 0x9E3779B97F4A7C15 >> (64 - 6))
}
