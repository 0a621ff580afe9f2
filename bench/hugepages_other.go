//go:build !linux

package bench

func adviseHugePages([]line) {}

func hugePageShare() float64 { return -1 }
