package ohbloom

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Growth and tightening of scalable filters (Almeida et al., "Scalable
// Bloom Filters", 2007). Stage i holds initial·2^i keys at false positive
// rate p·(1−0.8)·0.8^i, so the rates of all stages sum to less than p
// however many there are. The ratios were chosen by computing, with Size,
// the memory of every pair in {2, 4} × {0.5, 0.7, 0.8, 0.9} after growth to
// 10, 100 and 1000 times the initial capacity: 2 and 0.8 came within 3% of
// the best at every size (2.3, 2.2 and 1.9 times the memory of a filter
// sized right from the start, counting the unused part of the newest stage).
const (
	scalableGrowth     = 2
	scalableTightening = 0.8
)

// stageConfig returns the Config of stage i of a scalable filter.
func stageConfig(c Config, seed uint64, i int) Config {
	capacity, p := c.Capacity, c.FPR*(1-scalableTightening)
	for range i {
		capacity *= scalableGrowth
		p *= scalableTightening
	}
	return Config{Capacity: capacity, FPR: p, Seed: seed}
}

// ScalableFilter is a Bloom filter for an unknown number of keys: a chain
// of Filters of growing capacity and tightening false positive rate. Test
// checks every stage, Add goes to the newest, and a new stage starts when
// the newest has taken as many new keys as it was sized for. Its false
// positive rate stays at or below the p it was built with however far it
// grows. All stages share one seed, so a key is hashed once for all.
//
// It is not safe for concurrent use; see AtomicScalableFilter.
type ScalableFilter struct {
	config Config
	stages []*Filter
	added  uint64 // new keys in the newest stage
	err    error
}

// NewScalable returns a ScalableFilter that starts with room for initial
// keys and keeps its false positive rate at or below p. It panics on invalid
// parameters, as New does.
func NewScalable(initial uint64, p float64) *ScalableFilter {
	s, err := NewScalableWithConfig(Config{Capacity: initial, FPR: p})
	if err != nil {
		panic(err)
	}
	return s
}

// NewScalableWithConfig returns a ScalableFilter whose first stage holds
// c.Capacity keys, for the overall rate c.FPR, with c's seed. Blocks and K
// must not be set.
func NewScalableWithConfig(c Config) (*ScalableFilter, error) {
	first, err := firstStage(c)
	if err != nil {
		return nil, err
	}
	f, err := NewWithConfig(first)
	if err != nil {
		return nil, err
	}
	c.Seed, c.RandomSeed = f.seed, false
	return &ScalableFilter{config: c, stages: []*Filter{f}}, nil
}

func firstStage(c Config) (Config, error) {
	if c.Blocks != 0 || c.K != 0 {
		return c, fmt.Errorf("%w: a scalable filter sizes its own stages; set Capacity and FPR, not Blocks and K", ErrInvalidConfig)
	}
	first := stageConfig(c, c.Seed, 0)
	first.RandomSeed = c.RandomSeed
	return first, nil
}

// Add inserts key into the newest stage, unless the filter already tests
// positive for it.
func (s *ScalableFilter) Add(key []byte) { s.AddHash(s.stages[0].Hash(key)) }

// AddString is Add for a string key.
func (s *ScalableFilter) AddString(key string) { s.AddHash(s.stages[0].HashString(key)) }

// AddHash adds the key whose Hash is h.
func (s *ScalableFilter) AddHash(h uint64) { s.TestAndAddHash(h) }

// TestAndAdd reports whether key may already be in the filter, and adds it
// if not.
func (s *ScalableFilter) TestAndAdd(key []byte) bool { return s.TestAndAddHash(s.stages[0].Hash(key)) }

// TestAndAddString is TestAndAdd for a string key.
func (s *ScalableFilter) TestAndAddString(key string) bool {
	return s.TestAndAddHash(s.stages[0].HashString(key))
}

// TestAndAddHash is TestAndAdd for the key whose Hash is h.
func (s *ScalableFilter) TestAndAddHash(h uint64) bool {
	if s.TestHash(h) {
		return true
	}
	newest := s.stages[len(s.stages)-1]
	newest.AddHash(h)
	if s.added++; s.added >= newest.capacity && s.err == nil {
		f, err := NewWithConfig(stageConfig(s.config, s.config.Seed, len(s.stages)))
		if err != nil {
			// The newest stage takes the keys from now on, beyond its
			// capacity: the rate rises, which Err reports.
			s.err = err
			return false
		}
		s.stages = append(s.stages, f)
		s.added = 0
	}
	return false
}

// Test reports whether key may be in the filter.
func (s *ScalableFilter) Test(key []byte) bool { return s.TestHash(s.stages[0].Hash(key)) }

// TestString is Test for a string key.
func (s *ScalableFilter) TestString(key string) bool {
	return s.TestHash(s.stages[0].HashString(key))
}

// TestHash tests the key whose Hash is h, newest stage first.
func (s *ScalableFilter) TestHash(h uint64) bool {
	for i := len(s.stages) - 1; i >= 0; i-- {
		if s.stages[i].TestHash(h) {
			return true
		}
	}
	return false
}

// Hash returns the filter's hash of key (XXH3 with its seed).
func (s *ScalableFilter) Hash(key []byte) uint64 { return s.stages[0].Hash(key) }

// Stages returns the number of stages.
func (s *ScalableFilter) Stages() int { return len(s.stages) }

// Stage returns stage i, oldest first, to inspect it.
func (s *ScalableFilter) Stage(i int) *Filter { return s.stages[i] }

// SizeBytes returns the memory of all stages' bits.
func (s *ScalableFilter) SizeBytes() uint64 { return sizeOfStages(s.stages) }

// EstimatedCount estimates the number of distinct keys, from the bits of
// every stage.
func (s *ScalableFilter) EstimatedCount() uint64 { return countOfStages(s.stages) }

// Err returns why the filter could not grow, if it could not (a new stage
// would have exceeded MaxBlocks or the machine's memory); the newest stage
// then takes keys beyond its capacity and the rate rises above the target.
func (s *ScalableFilter) Err() error { return s.err }

func sizeOfStages[F interface{ SizeBytes() uint64 }](stages []F) uint64 {
	var n uint64
	for _, f := range stages {
		n += f.SizeBytes()
	}
	return n
}

func countOfStages[F interface{ EstimatedCount() uint64 }](stages []F) uint64 {
	var n uint64
	for _, f := range stages {
		n += f.EstimatedCount()
	}
	return n
}

// AtomicScalableFilter is a ScalableFilter safe for concurrent use by
// multiple goroutines. Tests never wait: the stages are published as an
// immutable list through an atomic pointer, and a new stage is added by
// publishing a new list. Only goroutines that race to add the stage take a
// lock, once per growth. Each new key increments its stage's counter, an
// atomic add on one cache line shared by the adding goroutines; adding
// keys already present touches nothing but loads.
type AtomicScalableFilter struct {
	config Config
	stages atomic.Pointer[[]*atomicStage]
	grow   sync.Mutex
	err    atomic.Pointer[error]
}

type atomicStage struct {
	f     *AtomicFilter
	added atomic.Uint64
	_     [64 - 8]byte // the counter alone on its line, away from other stages
}

// NewAtomicScalable is NewScalable for an AtomicScalableFilter.
func NewAtomicScalable(initial uint64, p float64) *AtomicScalableFilter {
	s, err := NewAtomicScalableWithConfig(Config{Capacity: initial, FPR: p})
	if err != nil {
		panic(err)
	}
	return s
}

// NewAtomicScalableWithConfig is NewScalableWithConfig for an
// AtomicScalableFilter.
func NewAtomicScalableWithConfig(c Config) (*AtomicScalableFilter, error) {
	first, err := firstStage(c)
	if err != nil {
		return nil, err
	}
	f, err := NewAtomicWithConfig(first)
	if err != nil {
		return nil, err
	}
	c.Seed, c.RandomSeed = f.seed, false
	s := &AtomicScalableFilter{config: c}
	s.stages.Store(&[]*atomicStage{{f: f}})
	return s, nil
}

// Add inserts key into the newest stage, unless the filter already tests
// positive for it.
func (s *AtomicScalableFilter) Add(key []byte) { s.AddHash(s.first().Hash(key)) }

// AddString is Add for a string key.
func (s *AtomicScalableFilter) AddString(key string) { s.AddHash(s.first().HashString(key)) }

func (s *AtomicScalableFilter) first() *AtomicFilter { return (*s.stages.Load())[0].f }

// AddHash adds the key whose Hash is h.
func (s *AtomicScalableFilter) AddHash(h uint64) { s.TestAndAddHash(h) }

// TestAndAdd reports whether key may already be in the filter, and adds it
// if not. When goroutines add the same new key at once, at least one of them
// reports it as new, as AtomicFilter.TestAndAdd does.
func (s *AtomicScalableFilter) TestAndAdd(key []byte) bool {
	return s.TestAndAddHash(s.first().Hash(key))
}

// TestAndAddString is TestAndAdd for a string key.
func (s *AtomicScalableFilter) TestAndAddString(key string) bool {
	return s.TestAndAddHash(s.first().HashString(key))
}

// TestAndAddHash is TestAndAdd for the key whose Hash is h. Only a key the
// newest stage reports as new counts toward its capacity.
func (s *AtomicScalableFilter) TestAndAddHash(h uint64) bool {
	stages := *s.stages.Load()
	if full := stages[len(stages)-1]; full.added.Load() >= full.f.capacity && s.err.Load() == nil {
		// The goroutine that filled the newest stage is making the next
		// one. Wait for it rather than overfill this one: the allocation
		// can take long enough, or that goroutine can lose its CPU for
		// long enough, that the others would pour thousands of keys into
		// a full stage and drive its false positive rate far past p.
		s.addStage(len(stages))
		stages = *s.stages.Load()
	}
	if testStages(stages, h) {
		return true
	}
	newest := stages[len(stages)-1]
	if newest.f.testAndAddHash(h) {
		return true
	}
	if newest.added.Add(1) == newest.f.capacity {
		s.addStage(len(stages))
	}
	return false
}

// addStage publishes stage i, unless another goroutine already has.
func (s *AtomicScalableFilter) addStage(i int) {
	s.grow.Lock()
	defer s.grow.Unlock()
	stages := *s.stages.Load()
	if len(stages) > i {
		return
	}
	f, err := NewAtomicWithConfig(stageConfig(s.config, s.config.Seed, i))
	if err != nil {
		s.err.Store(&err)
		return
	}
	next := append(stages[:len(stages):len(stages)], &atomicStage{f: f})
	s.stages.Store(&next)
}

// Test reports whether key may be in the filter.
func (s *AtomicScalableFilter) Test(key []byte) bool {
	stages := *s.stages.Load()
	return testStages(stages, stages[0].f.Hash(key))
}

// TestString is Test for a string key.
func (s *AtomicScalableFilter) TestString(key string) bool {
	stages := *s.stages.Load()
	return testStages(stages, stages[0].f.HashString(key))
}

// TestHash tests the key whose Hash is h.
func (s *AtomicScalableFilter) TestHash(h uint64) bool { return testStages(*s.stages.Load(), h) }

func testStages(stages []*atomicStage, h uint64) bool {
	for i := len(stages) - 1; i >= 0; i-- {
		if stages[i].f.TestHash(h) {
			return true
		}
	}
	return false
}

// Stages returns the number of stages.
func (s *AtomicScalableFilter) Stages() int { return len(*s.stages.Load()) }

// Stage returns stage i, oldest first. It is shared, not copied: adds to
// the filter show in it.
func (s *AtomicScalableFilter) Stage(i int) *AtomicFilter { return (*s.stages.Load())[i].f }

// SizeBytes returns the memory of all stages' bits.
func (s *AtomicScalableFilter) SizeBytes() uint64 { return sizeOfStages(s.filters()) }

// EstimatedCount estimates the number of distinct keys from the bits.
func (s *AtomicScalableFilter) EstimatedCount() uint64 { return countOfStages(s.filters()) }

func (s *AtomicScalableFilter) filters() []*AtomicFilter {
	stages := *s.stages.Load()
	fs := make([]*AtomicFilter, len(stages))
	for i, st := range stages {
		fs[i] = st.f
	}
	return fs
}

// Err is ScalableFilter.Err.
func (s *AtomicScalableFilter) Err() error {
	if e := s.err.Load(); e != nil {
		return *e
	}
	return nil
}
