package ohbloom

import (
	"iter"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/zeebo/xxh3"
)

// A bulk load that sets every word with an atomic OR is slower on two cores
// than a plain Filter.AddBatch on one: each OR is a full fence on amd64,
// which stops the cache misses of the following keys from starting while
// it waits for its own line. So a large bulk load builds privately: the
// block range is split among the workers, each worker owns one part and
// keeps a private, plain copy of it, every key's hash is handed to the
// owner of its block, and each owner sets the bits in its copy with plain
// writes, prefetching ahead as AddBatch does. At the end each owner ORs its
// copy into the shared filter, word by word with atomic ORs, over
// sequential memory (about 3 ns a word on a 2-vCPU AMD EPYC VM, against
// 100 ns and more for a random one). Adds running meanwhile go straight
// to the shared filter, and since OR is monotone neither side loses a bit.
// The price is memory: the private copies add up to one more filter (plus
// a block per worker) until the load returns, and the keys of the load are
// not visible to Test before the load returns.
//
// A load too small to fill the blocks (fewer keys than blocks) would spend
// more on the copy than it saves, so it adds to the shared filter directly.

// AddParallel adds keys using every core and returns when all are in.
// Other goroutines may Add and Test meanwhile (a live stream during a bulk
// load): nothing is lost, though Test may not find keys of the load before
// AddParallel returns.
//
// With at least as many keys as the filter has blocks (about one key in 50
// of a filter's capacity at p = 1%), AddParallel builds in private copies
// of the filter's blocks, one part per core, and ORs them into the filter
// at the end: memory for one more filter while it runs.
func (f *AtomicFilter) AddParallel(keys [][]byte) { addParallel(f, keys) }

// AddParallelStrings is AddParallel for string keys.
func (f *AtomicFilter) AddParallelStrings(keys []string) { addParallel(f, keys) }

func addParallel[K []byte | string](f *AtomicFilter, keys []K) {
	workers := min(runtime.GOMAXPROCS(0), max(1, len(keys)/parallelMin))
	if workers == 1 || uint64(len(keys)) < f.nblocks {
		inParallel(len(keys), func(from, to int) { runKeys(&f.layout, keys[from:to], opAtomicAdd, nil) })
		return
	}
	b := newBuild(&f.layout, workers, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := b.router(w)
			var hs [batchSize]uint64
			from, to := len(keys)*w/workers, len(keys)*(w+1)/workers
			for at := from; at < to; at += batchSize {
				n := min(batchSize, to-at)
				hashWindow(hs[:n], keys[at:at+n], f.seed)
				r.route(hs[:n])
			}
			r.finish()
			b.own(w, true)
		})
	}
	wg.Wait()
}

// parallelMin is the fewest keys worth a goroutine: below it the start-up
// cost of the goroutines outweighs what they save.
const parallelMin = 1 << 14

// inParallel splits [0, n) into one contiguous range per core and runs fn
// on each in its own goroutine.
func inParallel(n int, fn func(from, to int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/parallelMin))
	if workers == 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		from, to := n*w/workers, n*(w+1)/workers
		wg.Go(func() { fn(from, to) })
	}
	wg.Wait()
}

// seqBatch is how many hashes AddSeq hands a worker at a time.
const seqBatch = 4096

// AddSeq adds every key keys yields, and returns how many it added. It is
// meant for keys that stream in, from a database cursor or a channel: the
// calling goroutine pulls and hashes the keys (so a key's bytes may be
// reused as soon as the iterator yields the next one, as database/sql's
// RawBytes are), and GOMAXPROCS workers add the hashes. Like AddParallel,
// it may run while other goroutines Add and Test. Once it has seen as
// many keys as the filter has blocks, it builds the rest in private
// copies as AddParallel does: memory for one more filter, and keys that
// Test may not find before AddSeq returns.
//
// A channel becomes an iterator with a three-line function:
//
//	func(yield func([]byte) bool) {
//		for k := range ch {
//			if !yield(k) {
//				return
//			}
//		}
//	}
func (f *AtomicFilter) AddSeq(keys iter.Seq[[]byte]) uint64 {
	workers := runtime.GOMAXPROCS(0)
	// Until the load has as many keys as the filter has blocks, workers
	// add batches of hashes to the shared filter.
	full := make(chan []uint64, workers)
	free := make(chan []uint64, workers+1)
	for range workers + 1 {
		free <- make([]uint64, 0, seqBatch)
	}
	var shared sync.WaitGroup
	work := full // full is set to nil when the build takes over
	for range workers {
		shared.Go(func() {
			for hs := range work {
				f.AddHashes(hs)
				free <- hs[:0]
			}
		})
	}
	// From then on, owners of block ranges take them, through r.
	var b *build
	var r *router
	var owners sync.WaitGroup
	var hs []uint64 // hashes not yet handed over
	// Deferred so that the workers stop even if the iterator panics.
	defer func() {
		if full != nil {
			close(full)
			shared.Wait()
		}
		if r != nil {
			r.route(hs)
			r.finish()
			owners.Wait()
		}
	}()
	var n uint64
	hs = <-free
	for k := range keys {
		h := xxh3.HashSeed(k, f.seed)
		n++
		if r != nil {
			hs = append(hs, h)
			if len(hs) == batchSize {
				r.route(hs)
				hs = hs[:0]
			}
			continue
		}
		hs = append(hs, h)
		if len(hs) == seqBatch {
			full <- hs
			hs = <-free
		}
		if n == f.nblocks && workers > 1 {
			full <- hs
			close(full)
			full = nil
			shared.Wait()
			b = newBuild(&f.layout, workers, 1)
			r = b.router(-1)
			hs = make([]uint64, 0, batchSize)
			for w := range workers {
				owners.Go(func() { b.own(w, false) })
			}
		}
	}
	if full != nil {
		f.AddHashes(hs)
	}
	return n
}

// build is a private bulk load (see the top of this file).
type build struct {
	l         *layout
	producers int // goroutines that route hashes
	owners    []owner
	free      chan []uint64 // spare route buffers
}

// owner is one part of the block range, with its private copy.
type owner struct {
	first  uint64  // the part's first block in the filter
	blocks []block // the private copy of the part
	// inbox brings entries from other goroutines' routers; an empty
	// buffer says that one of them has finished.
	inbox chan []uint64
	// finished counts the routers that have said so; only the owner's
	// goroutine touches it, wherever it takes its inbox (in own, or in
	// send while it routes).
	finished int
}

// routeLen is how many entries a route buffer carries: large enough that
// handing it over costs little per key, small enough to stay in the L1
// cache with its neighbours.
const routeLen = 1024

// newBuild splits l's blocks among workers owners: owner w takes the
// hashes h with ⌊h·workers/2^64⌋ = w, and so the blocks those hashes map
// to, a contiguous range (two neighbours may share a block: each then ORs
// its copy of it into the filter).
func newBuild(l *layout, workers, producers int) *build {
	b := &build{l: l, producers: producers, owners: make([]owner, workers),
		free: make(chan []uint64, 4*workers*workers)}
	for w := range b.owners {
		first, last := partOf(l.nblocks, workers, w)
		b.owners[w] = owner{first: first, blocks: alignedBlocks(last - first + 1),
			inbox: make(chan []uint64, 4)}
	}
	return b
}

// partOf returns the first and last block of owner w's part: the blocks
// of the hashes from ⌈w·2^64/workers⌉ to ⌈(w+1)·2^64/workers⌉ - 1.
func partOf(nblocks uint64, workers, w int) (first, last uint64) {
	lo, rem := bits.Div64(uint64(w), 0, uint64(workers)) // ⌊w·2^64/workers⌋
	if rem != 0 {
		lo++
	}
	hi := ^uint64(0)
	if w+1 < workers {
		q, rem := bits.Div64(uint64(w+1), 0, uint64(workers))
		if rem != 0 {
			q++
		}
		hi = q - 1
	}
	first, _ = bits.Mul64(lo, nblocks)
	last, _ = bits.Mul64(hi, nblocks)
	return first, last
}

// ownerOf returns the owner of the hash h among workers.
func ownerOf(h uint64, workers int) int {
	o, _ := bits.Mul64(h, uint64(workers))
	return int(o)
}

func (b *build) get() []uint64 {
	select {
	case buf := <-b.free:
		return buf
	default:
		return make([]uint64, 0, routeLen)
	}
}

func (b *build) put(buf []uint64) {
	select {
	case b.free <- buf[:0]:
	default:
	}
}

// router hands hashes to their owners, as packed entries: the block's
// index in the owner's part in the high 32 bits, the residue in the low.
type router struct {
	b     *build
	self  int // the owner whose goroutine routes, or -1
	out   [][]uint64
	first []uint64 // each owner's first block
}

func (b *build) router(self int) *router {
	r := &router{b: b, self: self, out: make([][]uint64, len(b.owners)), first: make([]uint64, len(b.owners))}
	for o := range r.out {
		r.out[o] = b.get()
		r.first[o] = b.owners[o].first
	}
	return r
}

// route hands the hashes hs to their owners.
func (r *router) route(hs []uint64) {
	nblocks, owners := r.b.l.nblocks, uint64(len(r.out))
	for _, h := range hs {
		o, _ := bits.Mul64(h, owners)
		i, _ := bits.Mul64(h, nblocks)
		out := &r.out[o]
		*out = append(*out, (i-r.first[o])<<32|uint64(residue(h)))
		if len(*out) == routeLen {
			r.flush(int(o))
		}
	}
}

// flush applies or sends the entries for owner o.
func (r *router) flush(o int) {
	buf := r.out[o]
	if o == r.self {
		r.b.apply(o, buf)
		r.out[o] = buf[:0]
		return
	}
	r.send(o, buf)
	r.out[o] = r.b.get()
}

// send hands buf to owner o. A router that is an owner itself takes its
// own entries meanwhile, so that two owners sending to each other never
// both wait.
func (r *router) send(o int, buf []uint64) {
	to := r.b.owners[o].inbox
	if r.self < 0 {
		to <- buf
		return
	}
	for {
		select {
		case to <- buf:
			return
		case in := <-r.b.owners[r.self].inbox:
			r.b.take(r.self, in)
		}
	}
}

// finish flushes every buffer and tells the other owners this router is
// done.
func (r *router) finish() {
	for o := range r.out {
		if len(r.out[o]) > 0 {
			r.flush(o)
		}
		if o != r.self {
			r.send(o, nil)
		}
	}
}

// take applies entries that came to owner o's inbox, or counts an end.
func (b *build) take(o int, in []uint64) {
	if len(in) == 0 {
		b.owners[o].finished++
		return
	}
	b.apply(o, in)
	b.put(in)
}

// own takes owner o's entries until every router has finished, then ORs
// the private copy into the filter. routes says whether o's goroutine
// routed too (AddParallel), and so sends itself no end marker.
func (b *build) own(o int, routes bool) {
	others := b.producers
	if routes {
		others--
	}
	for b.owners[o].finished < others {
		b.take(o, <-b.owners[o].inbox)
	}
	b.publish(o)
}

// apply sets the bits of entries ps in owner o's private copy, plain
// writes prefetched prefetchDistance entries ahead.
func (b *build) apply(o int, ps []uint64) {
	blocks, l := b.owners[o].blocks, b.l
	prefetchEntries(blocks, ps[:min(len(ps), prefetchDistance)])
	for i := 0; i < len(ps); i += prefetchStep {
		if ahead := i + prefetchDistance; ahead < len(ps) {
			prefetchEntries(blocks, ps[ahead:min(len(ps), ahead+prefetchStep)])
		}
		step := ps[i:min(len(ps), i+prefetchStep)]
		if l.vec != nil {
			vecAddEntries(blocks, step, l.vec)
			continue
		}
		for _, p := range step {
			l.add(&blocks[p>>32], uint32(p))
		}
	}
}

// publish ORs owner o's private copy into the filter, an atomic OR for
// each word that has bits the filter lacks, and drops the copy.
func (b *build) publish(o int) {
	ow := &b.owners[o]
	dst := b.l.blocks[ow.first : ow.first+uint64(len(ow.blocks))]
	for i := range ow.blocks {
		for w, m := range &ow.blocks[i] {
			if m != 0 && atomic.LoadUint64(&dst[i][w])&m != m {
				atomic.OrUint64(&dst[i][w], m)
			}
		}
	}
	ow.blocks = nil
}
