//go:build !amd64 || purego

package ohbloom

// vecProbe is empty here: this platform has no vector probe, and
// newVecProbe always returns nil, so the generated probes run.
type vecProbe struct{}

const hasVector = false

// probeChoice has no effect here: there is only the scalar probe.
const probeChoice = ""

// hashSecret is empty here: only amd64's assembly hash reads it.
type hashSecret struct{}

func (*hashSecret) fold(uint64) {}

// hashWindow hashes keys into hs with xxh3: the assembly hash is amd64's.
func hashWindow[K []byte | string](l *core, hs []uint64, keys []K) {
	goHashWindow(hs, keys, l.seed)
}

func newVecProbe([]partition) *vecProbe  { return nil }
func makeVecProbe([]partition) *vecProbe { return nil }

// keyTest, keyAdd and keyAtomicAdd are testKey, addKey and atomicAddKey:
// the vector code that hashes and probes in one call is amd64's.
func keyTest(l *core, p *byte, n int) bool { return testKey(l, p, n) }
func keyAdd(l *core, p *byte, n int)       { addKey(l, p, n) }

func keyAtomicAdd(l *core, p *byte, n int) { atomicAddKey(l, p, n) }

// The single-block probes are the generated ones: there is no other here.
func probeTest(l *core, b *block, x uint32) bool       { return scalarTest(l, b, x) }
func probeAtomicTest(l *core, b *block, x uint32) bool { return scalarAtomicTest(l, b, x) }
func probeAdd(l *core, b *block, x uint32)             { scalarAdd(l, b, x) }
func probeTestAndAdd(l *core, b *block, x uint32) bool { return scalarTestAndAdd(l, b, x) }
func probeAtomicAdd(l *core, b *block, x uint32) bool  { return scalarAtomicAdd(l, b, x) }

func (l *core) vecTestWindow([]uint64, []bool) { panic("ohbloom: no vector probe") }
func (l *core) vecAddWindow([]uint64)          { panic("ohbloom: no vector probe") }

func vecAddEntries([]block, []uint64, *vecProbe) { panic("ohbloom: no vector probe") }
