//go:build !linux

package ohbloom

// adviseHugePages does nothing where there is no madvise(MADV_HUGEPAGE).
func adviseHugePages([]block) {}

// populate does nothing here: the build's writes fault the pages in.
func populate([]block) {}
