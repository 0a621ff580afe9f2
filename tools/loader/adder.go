package loader

import (
	"github.com/ohbloom/ohbloom"
)

// A load adds its keys on the goroutine that reads them, with no hand-over
// to another: the database, not the filter, sets a load's pace, and on a
// machine whose cores the database's own process shares, a worker that
// waits for keys takes the core it would have used. AddSeq's workers do
// that (they spin before they sleep): they spent more CPU than one
// goroutine doing it all, and more memory, one copy of the filter per
// core (docs/operations.md has the measurements).
//
// The keys go in as AddSeq's do: the first ones, until there are as many as
// the filter has blocks, straight into the filter with atomic adds (a load
// that small would spend more on a copy than it saves); the rest into a
// private copy with plain adds, which keep a window of cache misses in
// flight where an atomic add waits for each, ORed into the filter at the
// end. Keys of the load are not visible to Test before Run returns; the
// live stream's Adds go straight to the filter meanwhile, and since OR is
// monotone neither loses a bit.

// hashBatch is how many hashes a load gathers before it adds them.
const hashBatch = 1024

// orChunk is how many blocks of the private copy are ORed into the filter
// at a time: 256 KiB, so that the copy's encoding stays in L2.
const orChunk = 4096

type keyAdder struct {
	f         *ohbloom.AtomicFilter
	layout    ohbloom.Layout
	maxMemory uint64
	private   *ohbloom.Filter // nil until the load has nblocks keys, or when it may not be made
	hs        []uint64
	n         uint64 // keys added
}

func newKeyAdder(f *ohbloom.AtomicFilter, maxMemory uint64) *keyAdder {
	return &keyAdder{f: f, layout: f.Layout(), maxMemory: maxMemory, hs: make([]uint64, 0, hashBatch)}
}

// add adds one key. key need not outlive the call.
func (a *keyAdder) add(key []byte) {
	a.hs = append(a.hs, ohbloom.Hash(a.layout.Seed(), key))
	if len(a.hs) == hashBatch {
		a.flush()
	}
}

func (a *keyAdder) flush() {
	if a.private == nil && a.n >= a.layout.Blocks() && (a.maxMemory == 0 || a.maxMemory >= a.f.SizeBytes()) {
		// The layout's Config makes a filter of exactly this geometry.
		a.private, _ = ohbloom.NewWithConfig(a.layout.Config())
	}
	if a.private != nil {
		a.private.AddHashes(a.hs)
	} else {
		a.f.AddHashes(a.hs)
	}
	a.n += uint64(len(a.hs))
	a.hs = a.hs[:0]
}

// finish adds the keys still gathered and ORs the private copy into the
// filter.
func (a *keyAdder) finish() {
	a.flush()
	if a.private == nil {
		return
	}
	buf := make([]byte, 0, orChunk*ohbloom.BlockBytes)
	for first, blocks := uint64(0), a.layout.Blocks(); first < blocks; first += orChunk {
		buf = a.private.AppendBlocks(buf[:0], first, min(orChunk, blocks-first))
		// The range is the filter's own: OrBlocks cannot refuse it.
		a.f.OrBlocks(first, buf)
	}
	a.private = nil
}
