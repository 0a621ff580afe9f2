//go:build !linux

package redisbloom

// cuckooPhysicalMemory is unknown here: only the caller's limits and the
// address space bound a filter.
func cuckooPhysicalMemory() uint64 { return ^uint64(0) }
