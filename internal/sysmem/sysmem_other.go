//go:build !linux

package sysmem

// RAMPlusSwap is unknown here: the largest uint64, so that only a filter's
// own limits and the address space bound it.
func RAMPlusSwap() uint64 { return ^uint64(0) }
