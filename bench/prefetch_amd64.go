package bench

import "unsafe"

// prefetchLines starts loading the lines of hs (prefetch_amd64.s).
//
//go:noescape
func prefetchLines(lines unsafe.Pointer, nlines uint64, hs []uint64)
