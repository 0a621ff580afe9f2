//go:build race

package ohbloom

// raceEnabled reports whether the race detector is on: its instrumentation
// of memory accesses cannot survive a deliberate fault.
const raceEnabled = true
