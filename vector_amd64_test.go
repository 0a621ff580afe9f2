//go:build !purego

package ohbloom

import (
	"testing"
	"unsafe"
)

// TestVecProbeOffsets pins the field offsets that vector_amd64.s hard-codes.
func TestVecProbeOffsets(t *testing.T) {
	var p vecProbe
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"inv", unsafe.Offsetof(p.inv), 0},
		{"size", unsafe.Offsetof(p.size), 128},
		{"offset", unsafe.Offsetof(p.offset), 256},
		{"halves", unsafe.Offsetof(p.halves), 384},
		{"rounds", unsafe.Offsetof(p.rounds), 392},
		{"candidates", unsafe.Offsetof(p.candidates), 400},
	} {
		if c.got != c.want {
			t.Errorf("vecProbe.%s at %d, vector_amd64.s reads it at %d", c.name, c.got, c.want)
		}
	}
}
