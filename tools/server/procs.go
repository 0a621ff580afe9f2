package server

import (
	"os"
	"runtime"
	"sync/atomic"
)

// MinProcs is the GOMAXPROCS that RaiseProcs gives a process that has
// fewer: one processor for an event loop, one for a goroutine running a
// heavy command, one for the garbage collector's dedicated mark worker,
// and one spare to take a goroutine from another's queue.
const MinProcs = 4

// cpuProcs is the GOMAXPROCS the process had before RaiseProcs raised it
// (0: it did not): the processors the CPUs give, which the default
// number of event loops follows.
var cpuProcs atomic.Int32

// RaiseProcs raises GOMAXPROCS to MinProcs where it is lower and the
// GOMAXPROCS environment variable does not set it, and returns what it
// is then. ohbloom serve calls it before New; a program that embeds the
// server may too.
//
// Why: with GOMAXPROCS 2 (two cores), a garbage collection takes one
// processor for its dedicated mark worker for the whole mark phase, and
// a goroutine running a heavy command (clearing a new 256 MB filter, in
// steps that yield to each other) the other. An event loop preempted
// then waits in the first processor's queue, where nothing takes it,
// until the mark ends: 0.9 s in a runtime trace of
// TestAuthenticatedAttacks beside CPU hogs, against at most 0.13 s with
// four. The extra processors have threads the kernel shares out like any
// others; the event loops stay one per two of the processors there were
// (Config.EventLoops).
func RaiseProcs() int {
	n := runtime.GOMAXPROCS(0)
	if _, set := os.LookupEnv("GOMAXPROCS"); set || n >= MinProcs {
		return n
	}
	cpuProcs.CompareAndSwap(0, int32(n))
	runtime.GOMAXPROCS(MinProcs)
	return MinProcs
}

// processors is the GOMAXPROCS the CPUs give the process: before
// RaiseProcs raised it, if it did.
func processors() int {
	if n := cpuProcs.Load(); n > 0 {
		return int(n)
	}
	return runtime.GOMAXPROCS(0)
}
