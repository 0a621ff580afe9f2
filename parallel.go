package ohbloom

import (
	"iter"
	"math"
	"math/bits"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/ohbloom/ohbloom/internal/sysmem"
	"github.com/zeebo/xxh3"
)

// A bulk load that sets every word with an atomic OR is slower on two cores
// than a plain Filter.AddBatch on one: each OR is a full fence on amd64,
// which stops the cache misses of the following keys from starting while
// it waits for its own line. So a large bulk load builds in private, plain
// memory, and ORs what it built into the shared filter at the end, word by
// word with atomic ORs over sequential memory, where the CPU streams the
// lines instead of waiting for each. Adds running meanwhile go straight to
// the shared filter, and since OR is monotone neither side loses a bit;
// the keys of the load are not visible to Test before the load returns.
// There are two ways to split the work:
//
//   - Whole copies (copyLoad): each worker adds a share of the keys to a
//     private filter of the full size, with exactly the code of a
//     single-core AddBatch, and at the end each worker ORs its range of
//     blocks of all the copies into the filter. Nothing passes between
//     the workers until the end, so on two cores it runs as fast as two
//     independent single-core builds, plus the OR pass. It costs one
//     filter per worker, and each worker's OR pass reads a filter's worth
//     of copies whatever the number of workers.
//   - Block ranges (build): the block range is split among the workers,
//     each owns one part and keeps a private copy of it, and every key's
//     hash is handed to the owner of its block. The copies add up to one
//     filter, but routing every hash to another core costs about as much
//     as adding it, so it gains less over a single-core AddBatch than the
//     whole copies do (docs/design.md, "Bulk loads").
//
// A load uses whole copies when there are at most maxCopies workers and
// the copies fit the memory budget (ParallelConfig), block ranges when one
// filter fits it, and otherwise atomic adds to the shared filter. A load
// too small to fill the blocks (fewer keys than blocks) would spend more
// on a copy than it saves, so it adds to the shared filter directly.

// ParallelConfig tunes a bulk load by AddParallelWith or AddSeqWith.
type ParallelConfig struct {
	// MaxMemory bounds what the load allocates beside the filter and the
	// keys, in bytes. Zero means a quarter of the machine's memory, or of
	// the Go memory limit when one is set and lower. A budget that holds
	// one copy of the filter per core lets the load run at the speed of
	// independent single-core builds; one that holds one copy, at about
	// two thirds of that on two cores; less than one, with atomic adds
	// (see AddParallel).
	MaxMemory uint64

	_ struct{} // fields are named, so more may come
}

// maxCopies is the most workers that build whole copies: each worker's OR
// pass reads a filter's worth of copies however many there are, while its
// share of the keys shrinks with their number, so with many cores the
// block ranges, whose routing costs the same per key at any number, take
// over. (Only two cores were at hand to measure: the bound is a guess.)
const maxCopies = 4

// loadPlan is how a bulk load builds.
type loadPlan int

const (
	planShared loadPlan = iota // atomic adds to the shared filter
	planRanges                 // private copies of block ranges (build)
	planCopies                 // a private copy of the whole filter per worker (copyLoad)
)

// plan returns how workers load keys (or more) into l under c.
func (c ParallelConfig) plan(l *core, workers int, keys uint64) loadPlan {
	if workers < 2 || keys < l.nblocks {
		return planShared
	}
	budget, size := c.MaxMemory, l.nblocks*blockBytes
	if budget == 0 {
		budget = defaultLoadMemory()
	}
	switch {
	case workers <= maxCopies && size <= budget/uint64(workers):
		return planCopies
	case size <= budget:
		return planRanges
	}
	return planShared
}

// defaultLoadMemory is a quarter of the machine's memory, or of the Go
// memory limit when one is set and lower.
func defaultLoadMemory() uint64 {
	mem := sysmem.RAMPlusSwap()
	if limit := debug.SetMemoryLimit(-1); limit > 0 && limit < math.MaxInt64 {
		mem = min(mem, uint64(limit))
	}
	return mem / 4
}

// AddParallel adds keys using every core and returns when all are in.
// Other goroutines may Add and Test meanwhile (a live stream during a bulk
// load): nothing is lost, though Test may not find keys of the load before
// AddParallel returns.
//
// With at least as many keys as the filter has blocks (about one key in
// 50 of a filter's capacity at p = 1%), AddParallel builds in private
// memory and ORs it into the filter at the end: on up to four cores, a
// whole copy of the filter per core, when those copies take at most a
// quarter of the machine's memory; otherwise copies of block ranges that
// add up to one filter. AddParallelWith sets another bound.
func (f *AtomicFilter) AddParallel(keys [][]byte) { addParallel(f, keys, ParallelConfig{}) }

// AddParallelWith is AddParallel with the memory of its private build
// bounded by c.
func (f *AtomicFilter) AddParallelWith(keys [][]byte, c ParallelConfig) { addParallel(f, keys, c) }

func addParallel[K []byte | string](f *AtomicFilter, keys []K, c ParallelConfig) {
	workers := min(runtime.GOMAXPROCS(0), max(1, len(keys)/parallelMin))
	switch c.plan(&f.core, workers, uint64(len(keys))) {
	case planCopies:
		var next atomic.Int64 // the keys are taken a chunk at a time
		copyLoad(f, workers, func(w int, private func() *core) {
			l := private()
			for {
				from := int(next.Add(copyChunk) - copyChunk)
				if from >= len(keys) {
					return
				}
				runKeys(l, keys[from:min(len(keys), from+copyChunk)], opAdd, nil)
			}
		})
	case planRanges:
		rangeBuild(f, keys, workers)
	default:
		inParallel(len(keys), func(from, to int) { runKeys(&f.core, keys[from:to], opAtomicAdd, nil) })
	}
}

// copyChunk is how many keys a worker of a whole-copy load takes at a
// time: its share is not fixed in advance, so a worker slowed by other
// work on its core does not hold the others back.
const copyChunk = 1 << 16

// copyLoad runs fill for workers 0 to workers-2 on goroutines of their
// own and for the last one on the calling goroutine, each with a private
// plain filter of f's geometry (private allocates it on the first call, so a
// worker that never calls it costs no memory). When all have returned it
// ORs the copies into f, each worker over its own range of blocks, and
// drops them. If the caller's fill panics, the others still finish and
// publish before the panic goes on.
func copyLoad(f *AtomicFilter, workers int, fill func(w int, private func() *core)) {
	copies := make([][]block, workers)
	var built, wg sync.WaitGroup
	built.Add(workers)
	run := func(w int) {
		var l *core
		defer func() {
			// Every copy is complete, and so visible here, once all the
			// workers are past this point.
			built.Done()
			built.Wait()
			var all [][]block
			for _, c := range copies {
				if c != nil {
					all = append(all, c)
				}
			}
			lo, hi := f.nblocks*uint64(w)/uint64(workers), f.nblocks*uint64(w+1)/uint64(workers)
			orCopies(f.blocks[lo:hi], all, lo)
		}()
		fill(w, func() *core {
			if l == nil {
				l = new(core)
				*l = f.core
				l.blocks = privateBlocks(f.nblocks)
				copies[w] = l.blocks
			}
			return l
		})
	}
	for w := range workers - 1 {
		wg.Go(func() { run(w) })
	}
	defer wg.Wait()
	run(workers - 1)
}

// privateBlocks returns n zeroed blocks for a private build, advised for
// huge pages and faulted in (populate) in one call rather than one fault
// per page as the build first writes each.
func privateBlocks(n uint64) []block {
	b := alignedBlocks(n)
	populate(b)
	return b
}

// orCopies ORs blocks [lo, lo+len(dst)) of every copy into dst, an atomic
// OR for each word that has bits dst lacks. (One hardware transaction a
// block where the CPU has RTM, as AtomicFilter.Add uses, measured no
// faster in BenchmarkBuild: the pass is a small part of the build.)
func orCopies(dst []block, copies [][]block, lo uint64) {
	for i := range dst {
		for w := range blockWords {
			var m uint64
			for _, c := range copies {
				m |= c[lo+uint64(i)][w]
			}
			if m != 0 && atomic.LoadUint64(&dst[i][w])&m != m {
				atomic.OrUint64(&dst[i][w], m)
			}
		}
	}
}

// rangeBuild is the bulk load in copies of block ranges (build).
func rangeBuild[K []byte | string](f *AtomicFilter, keys []K, workers int) {
	b := newBuild(&f.core, workers, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := b.router(w)
			var hs [batchSize]uint64
			from, to := len(keys)*w/workers, len(keys)*(w+1)/workers
			for at := from; at < to; at += batchSize {
				n := min(batchSize, to-at)
				hashWindow(&f.core, hs[:n], keys[at:at+n])
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

// AddSeq adds every key keys yields, and returns how many it added. It is
// meant for keys that stream in, from a database cursor or a channel. The
// calling goroutine pulls the keys and hashes them (so a key's bytes may
// be reused as soon as the iterator yields the next one, as database/sql's
// RawBytes are), and the other cores add the hashes, the calling goroutine
// too when they have enough to do. Like AddParallel, it may run while
// other goroutines Add and Test, and once it has seen as many keys as the
// filter has blocks it builds the rest in private memory as AddParallel
// does: the same memory, and keys that Test may not find before AddSeq
// returns. AddSeqWith sets another bound on that memory.
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
	return f.AddSeqWith(keys, ParallelConfig{})
}

// AddSeqWith is AddSeq with the memory of its private build bounded by c.
func (f *AtomicFilter) AddSeqWith(keys iter.Seq[[]byte], c ParallelConfig) uint64 {
	workers := runtime.GOMAXPROCS(0)
	switch c.plan(&f.core, workers, f.nblocks) {
	case planCopies:
		return f.addSeqCopies(keys, workers)
	case planRanges:
		return f.addSeqRanges(keys, workers, true)
	}
	return f.addSeqRanges(keys, workers, false)
}

// An AddSeq in whole copies hands the hashes over in batches of seqBatch,
// up to seqQueue batches waiting for each worker. A worker that finds none
// waiting yields its core up to seqSpins times before it sleeps: waking a
// sleeping goroutine's thread is slow on a VM whose idle vCPU halts, time
// in which the worker would have added many batches, and without the spin
// it slept thousands of times a load (docs/design.md, "Bulk loads").
const (
	seqBatch  = 1024
	seqQueue  = 4
	seqSpins  = 1000
	seqHashes = 4096 // the batch of addSeqRanges
)

// hashBatch is a batch of an AddSeq in whole copies.
type hashBatch struct {
	hs      []uint64
	private bool // to the copy of the worker that takes it, not the shared filter
}

// addSeqCopies is AddSeq in whole copies (copyLoad). The caller hashes the
// keys and hands each batch to the workers' queue, or, when the queue is
// full, adds it itself: with only as many workers as cores, no core waits
// for another's turn on the CPU. A batch goes to the shared filter with
// atomic adds until the load has as many keys as the filter has blocks,
// and from then on to the copy of whoever takes it. Copying the keys for
// the workers to hash instead cost more than hashing them, and the load
// was slower for it (docs/design.md, "Bulk loads").
func (f *AtomicFilter) addSeqCopies(keys iter.Seq[[]byte], workers int) (n uint64) {
	full := make(chan *hashBatch, seqQueue*(workers-1))
	free := make(chan *hashBatch, cap(full)+workers+1) // never empty
	for range cap(free) {
		free <- &hashBatch{hs: make([]uint64, 0, seqBatch)}
	}
	apply := func(b *hashBatch, private func() *core) {
		if b.private {
			private().runHashes(b.hs, opAdd, nil)
		} else {
			f.runHashes(b.hs, opAtomicAdd, nil)
		}
		b.hs = b.hs[:0]
		free <- b
	}
	copyLoad(f, workers, func(w int, private func() *core) {
		if w < workers-1 {
			for b := range waitBatches(full) {
				apply(b, private)
			}
			return
		}
		// The calling goroutine.
		hand := func(b *hashBatch) {
			b.private = n >= f.nblocks
			select {
			case full <- b:
			default:
				apply(b, private)
			}
		}
		// The caller hashes into a buffer of its own, which stays in its
		// cache, and copies each full batch out with handOver. Appending
		// to the batch itself, whose lines the worker that added it last
		// read on the other core, made the caller take each line back
		// before writing it, and the worker then found its queue empty
		// hundreds of times as often (docs/design.md, "Bulk loads").
		hs, seed := make([]uint64, 0, seqBatch), f.seed
		// Deferred so that the keys pulled so far go in and the workers
		// stop even if the iterator panics.
		defer func() {
			if n += uint64(len(hs)); len(hs) > 0 {
				b := <-free
				b.hs = handOver(b.hs, hs)
				hand(b)
			}
			close(full)
		}()
		for k := range keys {
			hs = append(hs, xxh3.HashSeed(k, seed))
			if len(hs) == seqBatch {
				n += seqBatch
				b := <-free
				b.hs = handOver(b.hs, hs)
				hand(b)
				hs = hs[:0]
			}
		}
	})
	return n
}

// waitBatches yields the batches of ch until it is closed, yielding the
// core up to seqSpins times before it sleeps on an empty ch.
func waitBatches(ch chan *hashBatch) iter.Seq[*hashBatch] {
	return func(yield func(*hashBatch) bool) {
		for {
			var b *hashBatch
			ok := false
			select {
			case b, ok = <-ch:
			default:
				for range seqSpins {
					runtime.Gosched()
					if len(ch) > 0 {
						break
					}
				}
				b, ok = <-ch
			}
			if !ok || !yield(b) {
				return
			}
		}
	}
}

// addSeqRanges is AddSeq in block ranges (build), or with atomic adds only
// when private is false: the calling goroutine hashes every key.
func (f *AtomicFilter) addSeqRanges(keys iter.Seq[[]byte], workers int, private bool) uint64 {
	// Until the load has as many keys as the filter has blocks, workers
	// add batches of hashes to the shared filter.
	full := make(chan []uint64, workers)
	free := make(chan []uint64, workers+1)
	for range workers + 1 {
		free <- make([]uint64, 0, seqHashes)
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
	// Deferred so that the hashes so far go in and the workers stop even
	// if the iterator panics.
	defer func() {
		if full != nil {
			f.AddHashes(hs)
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
		if len(hs) == seqHashes {
			full <- hs
			hs = <-free
		}
		if n == f.nblocks && workers > 1 && private {
			full <- hs
			close(full)
			full = nil
			shared.Wait()
			b = newBuild(&f.core, workers, 1)
			r = b.router(-1)
			hs = make([]uint64, 0, batchSize)
			for w := range workers {
				owners.Go(func() { b.own(w, false) })
			}
		}
	}
	return n
}

// build is a private bulk load (see the top of this file).
type build struct {
	l         *core
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
func newBuild(l *core, workers, producers int) *build {
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
