// Package metrics counts what a filter answers and exposes it, with the
// filter's own estimates, as Prometheus metrics.
//
// The number operators graph is the positive rate: the share of tests that
// reach the database. Counting every test with one shared atomic counter
// would make every core fight over one cache line and cost more than the
// test itself, so single tests are sampled: one in SampleEvery is counted,
// with weight SampleEvery, in one of 64 counters padded to their own cache
// lines. Which calls are counted is decided by the key's hash, which the
// test computes anyway, XORed with a salt: free, where even the runtime's
// random generator costs more than a test in the caches
// (docs/operations.md). A fixed rule would always count the same
// hot keys or never, so the salt changes every few thousand counted calls; over
// time every key is counted one time in SampleEvery. Batched calls are
// counted exactly, once per batch.
package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ohbloom/ohbloom"
	"github.com/prometheus/client_golang/prometheus"
)

// Filter is what Instrumented needs of a filter. *ohbloom.Filter,
// *ohbloom.AtomicFilter and *ohbloom.Snapshot have it.
type Filter interface {
	Seed() uint64
	TestHash(uint64) bool
	TestHashes([]uint64, []bool)
	FillRatio() float64
	EstimatedCount() uint64
	EstimatedFPR() float64
	SizeBytes() uint64
}

// Adder is what Instrumented needs to add to a filter.
type Adder interface {
	AddHash(uint64)
	AddHashes([]uint64)
}

// SampleEvery is how many single Tests and Adds one counted call stands for.
const SampleEvery = 1 << sampleBits

const sampleBits = 8

const shards = 64

// shard is one set of counters. It is padded to 128 bytes so that no two
// shards share a cache line however the array is aligned, and the array is
// allocated apart from the Instrumented, whose fields every call reads.
type shard struct {
	tests, positives, adds atomic.Uint64
	_                      [128 - 3*8]byte
}

// Instrumented wraps a filter, counts its tests, positives and adds, and is
// a prometheus.Collector. It is safe for concurrent use when the filter is.
type Instrumented struct {
	f      Filter
	seed   uint64                // f's hash seed: keys are hashed with ohbloom.Hash(seed, key)
	atomic *ohbloom.AtomicFilter // f, when it is one: static calls, no interface dispatch
	add    Adder                 // nil for a read-only filter
	salt   atomic.Uint64         // changes now and then; read-mostly, so cheap to load
	shards *[shards]shard
	name   string

	// StatsEvery is how long the scan-based figures (fill ratio, estimated
	// count and FPR, which read the whole filter) are reused between
	// scrapes. Zero means 15 seconds.
	StatsEvery time.Duration

	mu        sync.Mutex
	statsAt   time.Time
	fill, fpr float64
	count     uint64

	desc descs
}

type descs struct {
	tests, positives, adds, rate, fill, count, fpr, bytes *prometheus.Desc
}

// New wraps f, whose metrics carry the label filter=name. If f can be added
// to (it implements Adder), Add and AddBatch are counted too.
func New(name string, f Filter) *Instrumented {
	m := &Instrumented{f: f, seed: f.Seed(), name: name, shards: new([shards]shard)}
	m.add, _ = f.(Adder)
	m.atomic, _ = f.(*ohbloom.AtomicFilter)
	label := prometheus.Labels{"filter": name}
	d := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc("ohbloom_"+metric, help, nil, label)
	}
	m.desc = descs{
		tests:     d("tests_total", "Tests of keys (single tests sampled 1 in 256)."),
		positives: d("positives_total", "Tests that answered possibly present (sampled as tests)."),
		adds:      d("adds_total", "Keys added (single adds sampled 1 in 256)."),
		rate:      d("positive_ratio", "Positives over tests since start: the share of lookups that reach the database."),
		fill:      d("fill_ratio", "Fraction of the filter's bits that are set."),
		count:     d("estimated_keys", "Distinct keys estimated from the bits."),
		fpr:       d("estimated_false_positive_ratio", "False positive rate computed from the bits."),
		bytes:     d("memory_bytes", "Memory the filter's bits occupy."),
	}
	return m
}

// Test reports whether key may be in the filter, and counts the test.
func (m *Instrumented) Test(key []byte) bool {
	if a := m.atomic; a != nil {
		return m.record(a.HashTest(key)) // one call, as a bare Test
	}
	h := ohbloom.Hash(m.seed, key)
	return m.record(h, m.f.TestHash(h))
}

// Atomic is Instrumented for an *ohbloom.AtomicFilter, with a Test that
// costs a few percent over the filter's own: where Instrumented.Test calls
// the filter through a method of its own and a pointer, Atomic.Test is one
// call, which the compiler inlines into the caller, to
// AtomicFilter.HashTest on a copy of the filter's header held in the
// Atomic itself. The copy shares the filter's bits, so keys added to the
// filter by anyone are seen; it does not follow an UnmarshalBinary or
// ReadFrom into the filter, which replace the bits.
type Atomic struct {
	*Instrumented
	view ohbloom.AtomicFilter
}

// NewAtomic wraps f as New does.
func NewAtomic(name string, f *ohbloom.AtomicFilter) *Atomic {
	return &Atomic{Instrumented: New(name, f), view: *f}
}

// Test reports whether key may be in the filter, and counts the test.
func (a *Atomic) Test(key []byte) bool {
	h, ok := a.view.HashTest(key)
	if (h^a.salt.Load())&sampleMask == 0 {
		a.countTest(ok)
	}
	return ok
}

// TestString is Test for a string key.
func (a *Atomic) TestString(key string) bool {
	h, ok := a.view.HashTestString(key)
	if (h^a.salt.Load())&sampleMask == 0 {
		a.countTest(ok)
	}
	return ok
}

// sampleMask selects the top sampleBits bits of a hash: the calls
// Instrumented.record counts.
const sampleMask = uint64(1<<sampleBits-1) << (64 - sampleBits)

// TestString is Test for a string key.
func (m *Instrumented) TestString(key string) bool {
	if a := m.atomic; a != nil {
		return m.record(a.HashTestString(key))
	}
	h := ohbloom.HashString(m.seed, key)
	return m.record(h, m.f.TestHash(h))
}

// record counts a test of the key with hash h that answered ok, if the
// call is sampled: one in SampleEvery, decided by the top bits of h^salt
// (the low bits of h pick the block and are better left alone). It inlines,
// so the calls that are not sampled pay a load, a XOR and a compare.
func (m *Instrumented) record(h uint64, ok bool) bool {
	if (h^m.salt.Load())>>(64-sampleBits) == 0 {
		m.countTest(ok)
	}
	return ok
}

// countTest counts a sampled test. The shard comes from the address of the
// calling goroutine's stack, so that goroutines testing the same hot key
// count in different cache lines.
func (m *Instrumented) countTest(ok bool) {
	s := &m.shards[stackShard()]
	m.resalt(s.tests.Add(SampleEvery))
	if ok {
		s.positives.Add(SampleEvery)
	}
}

// resalt changes the salt when a counter passes a multiple of 2^18, once
// every 2^18/SampleEvery counted calls of that shard.
func (m *Instrumented) resalt(count uint64) {
	if count%(1<<18) == 0 {
		m.salt.Store(m.salt.Load()*0x9E3779B97F4A7C15 + count)
	}
}

// TestBatch tests keys into results as ohbloom's TestBatch does, and
// counts them exactly.
func (m *Instrumented) TestBatch(hs []uint64, results []bool) {
	m.f.TestHashes(hs, results)
	positives := 0
	for _, r := range results[:len(hs)] {
		if r {
			positives++
		}
	}
	s := &m.shards[stackShard()]
	s.tests.Add(uint64(len(hs)))
	s.positives.Add(uint64(positives))
}

// Add adds key, and counts it. It panics if the filter cannot be added to.
func (m *Instrumented) Add(key []byte) { m.addHash(ohbloom.Hash(m.seed, key)) }

// AddString is Add for a string key.
func (m *Instrumented) AddString(key string) { m.addHash(ohbloom.HashString(m.seed, key)) }

func (m *Instrumented) addHash(h uint64) {
	m.add.AddHash(h)
	if (h^m.salt.Load())>>(64-sampleBits) == 0 {
		m.resalt(m.shards[stackShard()].adds.Add(SampleEvery))
	}
}

// AddBatch adds the keys whose hashes are hs (see Hash) and counts them
// exactly.
func (m *Instrumented) AddBatch(hs []uint64) {
	m.add.AddHashes(hs)
	m.shards[stackShard()].adds.Add(uint64(len(hs)))
}

// Hash returns the filter's hash of key, for TestBatch and AddBatch.
func (m *Instrumented) Hash(key []byte) uint64 { return ohbloom.Hash(m.seed, key) }

// Counts returns the tests, positives and adds counted so far.
func (m *Instrumented) Counts() (tests, positives, adds uint64) {
	for i := range m.shards {
		tests += m.shards[i].tests.Load()
		positives += m.shards[i].positives.Load()
		adds += m.shards[i].adds.Load()
	}
	return tests, positives, adds
}

// Describe implements prometheus.Collector.
func (m *Instrumented) Describe(ch chan<- *prometheus.Desc) {
	d := m.desc
	for _, x := range []*prometheus.Desc{d.tests, d.positives, d.adds, d.rate, d.fill, d.count, d.fpr, d.bytes} {
		ch <- x
	}
}

// Collect implements prometheus.Collector.
func (m *Instrumented) Collect(ch chan<- prometheus.Metric) {
	tests, positives, adds := m.Counts()
	rate := 0.0
	if tests > 0 {
		rate = float64(positives) / float64(tests)
	}
	fill, count, fpr := m.stats()
	d := m.desc
	ch <- prometheus.MustNewConstMetric(d.tests, prometheus.CounterValue, float64(tests))
	ch <- prometheus.MustNewConstMetric(d.positives, prometheus.CounterValue, float64(positives))
	ch <- prometheus.MustNewConstMetric(d.adds, prometheus.CounterValue, float64(adds))
	ch <- prometheus.MustNewConstMetric(d.rate, prometheus.GaugeValue, rate)
	ch <- prometheus.MustNewConstMetric(d.fill, prometheus.GaugeValue, fill)
	ch <- prometheus.MustNewConstMetric(d.count, prometheus.GaugeValue, float64(count))
	ch <- prometheus.MustNewConstMetric(d.fpr, prometheus.GaugeValue, fpr)
	ch <- prometheus.MustNewConstMetric(d.bytes, prometheus.GaugeValue, float64(m.f.SizeBytes()))
}

// stats returns the scan-based figures, recomputed at most every
// StatsEvery.
func (m *Instrumented) stats() (fill float64, count uint64, fpr float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	every := m.StatsEvery
	if every <= 0 {
		every = 15 * time.Second
	}
	if m.statsAt.IsZero() || time.Since(m.statsAt) >= every {
		m.fill, m.count, m.fpr = m.f.FillRatio(), m.f.EstimatedCount(), m.f.EstimatedFPR()
		m.statsAt = time.Now()
	}
	return m.fill, m.count, m.fpr
}

var (
	_ prometheus.Collector = (*Instrumented)(nil)
	_ Filter               = (*ohbloom.Filter)(nil)
	_ Filter               = (*ohbloom.AtomicFilter)(nil)
	_ Filter               = (*ohbloom.Snapshot)(nil)
	_ Adder                = (*ohbloom.AtomicFilter)(nil)
)
