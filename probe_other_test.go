//go:build !amd64 || purego

package ohbloom

import "testing"

// forEachAtomicWrite runs fn once: without amd64's vector code, the locked
// ORs are AtomicFilter's only way to set a new key's bits.
func forEachAtomicWrite(t *testing.T, fn func(t *testing.T)) { fn(t) }
