package redisbloom

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ohbloom/ohbloom/internal/sysmem"
)

// AtomicFilter is a Filter safe for concurrent use by
// multiple goroutines, for a server that serves many connections at once.
// Tests take no lock: the filters are published as an immutable list
// through an atomic pointer and their words are read with atomic loads.
// Adds set missing bits with atomic ORs and count a new item with an atomic
// add on its filter's counter. A goroutine takes the lock only to grow the
// chain or to allocate a filter's bits on its first write, once per filter.
//
// Sequential adds give exactly Filter's results: the same bits,
// counts, growth and dumps. Concurrent adds give the same bits as some
// order of the same adds, except that goroutines adding the same new item
// at once may all count it, and that adds racing with a full filter may
// each put their item into it before one of them grows the chain, so that
// a filter can end a few items past its capacity (a NONSCALING one too).
// LoadChunk replaces bytes: adds running at the same time into the same
// bytes may be lost, as they would be overwritten had they come first.
//
// The zero AtomicFilter is not usable; build one with
// NewAtomic, NewAtomicFromHeader or ReadFrom.
type AtomicFilter struct {
	bfChain
	links atomic.Pointer[[]*bfAtomicLink]
	mu    sync.Mutex // growth, first allocation of a filter's words, SetMaxBytes
}

// bfAtomicLink is one filter of an AtomicFilter.
type bfAtomicLink struct {
	bfParams
	words atomic.Pointer[[]uint64] // nil until first written
	items atomic.Uint64
	_     [64 - 8]byte // the counter alone on its line, away from the params that every probe reads
}

// NewAtomic is New for an AtomicFilter.
func NewAtomic(c Config) (*AtomicFilter, error) {
	ch, p, err := newBFChain(c)
	if err != nil {
		return nil, err
	}
	f := &AtomicFilter{bfChain: ch}
	l := &bfAtomicLink{bfParams: p}
	words := make([]uint64, p.words())
	l.words.Store(&words)
	f.links.Store(&[]*bfAtomicLink{l})
	return f, nil
}

// NewAtomicFromHeader is NewFromHeader for an
// AtomicFilter.
func NewAtomicFromHeader(header []byte, maxBytes uint64) (*AtomicFilter, error) {
	h, err := decodeBFHeader(header, maxBytes)
	if err != nil {
		return nil, err
	}
	return newAtomicBFFrom(h, nil), nil
}

// newAtomicBFFrom builds a chain from a decoded header and, if not nil,
// the filters' words.
func newAtomicBFFrom(h bfHeader, words [][]uint64) *AtomicFilter {
	f := &AtomicFilter{bfChain: h.bfChain}
	links := make([]*bfAtomicLink, len(h.params))
	for i := range links {
		l := &bfAtomicLink{bfParams: h.params[i]}
		l.items.Store(h.items[i])
		if words != nil && words[i] != nil {
			l.words.Store(&words[i])
		}
		links[i] = l
	}
	f.links.Store(&links)
	return f
}

func (l *bfAtomicLink) loadWords() []uint64 {
	if w := l.words.Load(); w != nil {
		return *w
	}
	return nil
}

// Add is Filter.Add, safe to call concurrently with any method
// but ReadFrom and UnmarshalBinary.
func (f *AtomicFilter) Add(item []byte) (bool, error) {
	a, b := f.hasher.hash(item)
	return f.addHash(a, b)
}

// AddString is Add for a string item.
func (f *AtomicFilter) AddString(item string) (bool, error) {
	return f.Add(stringBytes(item))
}

// Hash returns the chain's hashes of item, the pair (a, b) every filter
// of the chain probes with (see Filter's doc). They depend on
// the chain's options and hash configuration, never on its filters, so
// they stay valid as the chain grows.
func (f *AtomicFilter) Hash(item []byte) (a, b uint64) { return f.hasher.hash(item) }

// AddHash is Add for the item whose Hash is (a, b): a server logs the pair
// of each added item and replays its log with AddHash, which reaches the
// same bits, counts and growth as the adds did when applied in the same
// order.
func (f *AtomicFilter) AddHash(a, b uint64) (bool, error) { return f.addHash(a, b) }

// TestHash is Test for the item whose Hash is (a, b).
func (f *AtomicFilter) TestHash(a, b uint64) bool {
	return testBFLinks(*f.links.Load(), a, b)
}

// addHash is Filter.addHash with atomic operations.
func (f *AtomicFilter) addHash(a, b uint64) (bool, error) {
	links := *f.links.Load()
	cur := links[len(links)-1]
	if cur.items.Load() >= cur.entries {
		if testBFLinks(links, a, b) {
			return false, nil
		}
		var err error
		if links, err = f.grow(len(links)); err != nil {
			return false, err
		}
		cur = links[len(links)-1]
	} else if testBFLinks(links[:len(links)-1], a, b) {
		return false, nil
	}
	words := cur.loadWords()
	if words == nil {
		if cur.test(nil, a, b) {
			return false, nil
		}
		words = f.allocate(cur)
	}
	if cur.atomicAdd(words, a, b) {
		cur.items.Add(1)
		return true, nil
	}
	return false, nil
}

// grow adds filter n to the chain, unless another goroutine already has,
// and returns the filters.
func (f *AtomicFilter) grow(n int) ([]*bfAtomicLink, error) {
	if f.nonScaling() {
		return nil, ErrFull
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	links := *f.links.Load()
	if len(links) > n {
		return links, nil
	}
	next, err := f.nextLink(&links[n-1].bfParams, n, totalBFBytes(links))
	if err != nil {
		return nil, err
	}
	l := &bfAtomicLink{bfParams: next}
	words := make([]uint64, next.words())
	l.words.Store(&words)
	grown := append(links[:n:n], l)
	f.links.Store(&grown)
	return grown, nil
}

// allocate gives a filter its words on its first write, unless another
// goroutine already has.
func (f *AtomicFilter) allocate(l *bfAtomicLink) []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w := l.loadWords(); w != nil {
		return w
	}
	words := make([]uint64, l.bfParams.words())
	l.words.Store(&words)
	return words
}

// orReportNew sets the bits m in *p, with no write when they are all set
// already, and reports whether this call set one that was clear, judged on
// the value the OR replaced: of two goroutines racing on the word only one
// can see the bits clear.
func orReportNew(p *uint64, m uint64) bool {
	return atomic.LoadUint64(p)&m != m && atomic.OrUint64(p, m)&m != m
}

func totalBFBytes(links []*bfAtomicLink) uint64 {
	var n uint64
	for _, l := range links {
		n += l.bytes
	}
	return n
}

// Test is Filter.Test. It never waits.
func (f *AtomicFilter) Test(item []byte) bool {
	a, b := f.hasher.hash(item)
	return testBFLinks(*f.links.Load(), a, b)
}

// TestString is Test for a string item.
func (f *AtomicFilter) TestString(item string) bool { return f.Test(stringBytes(item)) }

func testBFLinks(links []*bfAtomicLink, a, b uint64) bool {
	for i := len(links) - 1; i >= 0; i-- {
		if l := links[i]; l.test(l.loadWords(), a, b) {
			return true
		}
	}
	return false
}

// linksOf returns accessors over a snapshot of the filters.
func linksOf(links []*bfAtomicLink) (func(int) (*bfParams, uint64), func(int) uint64) {
	return func(i int) (*bfParams, uint64) { return &links[i].bfParams, links[i].items.Load() },
		func(i int) uint64 { return links[i].bytes }
}

// Info is Filter.Info. During concurrent adds it reports some of
// them and not others.
func (f *AtomicFilter) Info() Info {
	links := *f.links.Load()
	link, _ := linksOf(links)
	return f.infoOf(len(links), link)
}

// Link is Filter.Link.
func (f *AtomicFilter) Link(i int) Link {
	l := (*f.links.Load())[i]
	return l.info(l.items.Load())
}

// Options returns the chain's option bits (NoRound etc.).
func (f *AtomicFilter) Options() uint32 { return f.options }

// SetMaxBytes is Filter.SetMaxBytes.
func (f *AtomicFilter) SetMaxBytes(n uint64) {
	if n == 0 {
		n = sysmem.RAMPlusSwap()
	}
	f.mu.Lock()
	f.maxBytes = n
	f.mu.Unlock()
}

// ScanDump is Filter.ScanDump. A header taken during concurrent
// adds counts, for each filter, the items its counter held when read, and
// the chain's total is their sum, so it is always one RedisBloom accepts.
func (f *AtomicFilter) ScanDump(iter int64, dst []byte) (int64, []byte) {
	links := *f.links.Load()
	link, bytesOf := linksOf(links)
	if iter == 0 {
		return 1, encodeBFHeader(dst, &f.bfChain, len(links), link)
	}
	if iter < 1 {
		return 0, dst
	}
	i, off, ok := findBFLink(len(links), bytesOf, uint64(iter)-1)
	if !ok {
		return 0, dst
	}
	l := links[i]
	n := min(MaxChunk, l.bytes-off)
	return iter + int64(n), appendWordBytes(dst, l.loadWords(), off, n)
}

// LoadChunk is Filter.LoadChunk.
func (f *AtomicFilter) LoadChunk(iter int64, data []byte) error {
	links := *f.links.Load()
	_, bytesOf := linksOf(links)
	i, off, err := chunkTarget(len(links), bytesOf, iter, len(data))
	if err != nil || len(data) == 0 {
		return err
	}
	words := links[i].loadWords()
	if words == nil {
		words = f.allocate(links[i])
	}
	storeWordBytes(words, off, data)
	return nil
}

// Equal is Filter.Equal.
func (f *AtomicFilter) Equal(o *AtomicFilter) bool {
	fl, ol := *f.links.Load(), *o.links.Load()
	if f.options != o.options || f.growth != o.growth || f.hasher != o.hasher || len(fl) != len(ol) {
		return false
	}
	for i := range fl {
		if fl[i].bfParams != ol[i].bfParams || fl[i].items.Load() != ol[i].items.Load() ||
			!equalBFWords(fl[i].loadWords(), ol[i].loadWords()) {
			return false
		}
	}
	return true
}

// String describes the chain briefly.
func (f *AtomicFilter) String() string {
	in := f.Info()
	return fmt.Sprintf("RedisBloom chain: %d filters, %d items, capacity %d, %d bytes", in.Filters, in.Items, in.Capacity, in.Size)
}
