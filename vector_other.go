//go:build !amd64 || purego

package ohbloom

// vecProbe is empty here: this platform has no vector probe, and
// newVecProbe always returns nil, so the generated probes run.
type vecProbe struct{}

const hasVector = false

func newVecProbe([]partition) *vecProbe { return nil }

func vecTest(*block, uint32, *vecProbe) bool { panic("ohbloom: no vector probe") }
func vecAdd(*block, uint32, *vecProbe)       { panic("ohbloom: no vector probe") }
