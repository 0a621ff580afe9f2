package redisbloom

import "syscall"

// cuckooPhysicalMemory returns the machine's RAM plus swap in bytes: a
// filter larger than that can never be allocated, and asking the Go runtime
// for it would kill the process instead of returning an error.
func cuckooPhysicalMemory() uint64 {
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
