// Package sysmem reports how much memory the machine has, so that a filter
// too large for it is refused with an error rather than allocated: the Go
// runtime answers an allocation it cannot make by killing the process.
package sysmem

import "syscall"

// RAMPlusSwap returns the machine's RAM plus swap in bytes: the most a
// process could ever allocate here, not what is free now and not the Go
// memory limit (GOMEMLIMIT). Where it cannot be read it is the largest
// uint64.
func RAMPlusSwap() uint64 {
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil {
		return ^uint64(0)
	}
	unit := uint64(info.Unit)
	if unit == 0 {
		unit = 1
	}
	return (uint64(info.Totalram) + uint64(info.Totalswap)) * unit
}
