//go:build !linux

package ohbloom

// adviseHugePages does nothing where there is no madvise(MADV_HUGEPAGE).
func adviseHugePages([]block) {}
