//go:build !linux

package redisbloom

// cfAdviseHugePages does nothing where there is no madvise.
func cfAdviseHugePages([]uint64) {}
