//go:build race

// Package race reports whether the race detector is on, for the tests that
// must skip under it: its instrumentation allocates, and it cannot survive
// a deliberate fault.
package race

// Enabled reports whether the race detector is on.
const Enabled = true
