//go:build !linux

package ohbloom

// physicalMemory is unknown here: only MaxBlocks and the address space
// bound a filter.
func physicalMemory() uint64 { return ^uint64(0) }
