package ohbloom

import (
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
)

// How a new scalable filter shares its false positive rate p among its
// stages. Stage 0, the capacity the user asked for, gets firstShare·p.
// The stages after it that take the filter to rampReach times that
// capacity (3 of them at growth 2: 2n, 4n, 8n) split rampShare of the rest
// in proportion to capacity^rampExponent; every later stage gets tailDecay
// times the rate of the one before, from what is left. The rates sum to p
// however many stages there are.
//
// Why this shape: most users reserve the capacity they need, so stage 0
// is where the bytes matter, and gets most of p; for a filter that grows to
// a known size the split that costs least gives each stage a rate in
// proportion to its capacity, so the first stages after it share theirs
// rising with capacity, and only the stages past rampReach fall
// geometrically, as RedisBloom's do. The constants are the best of a grid
// by their bytes against RedisBloom's from 2× to 1024× the reserve;
// docs/sizing.md ("Why") has the figures, the bounds that
// TestScheduleAgainstRedisBloom pins and the command that searches the
// grid. The file records these parameters (ScalableFilter.WriteTo), so
// changing them changes new filters only.
const (
	firstShare   = 0.75
	rampReach    = 8
	rampShare    = 0.86
	rampExponent = 0.8
	tailDecay    = 0.7
)

// Schedule kinds, recorded in the file (see ScalableFilter.WriteTo).
const (
	// scheduleV1 is format version 1's schedule: growth 2, stage i at rate
	// p·0.2·0.8^i, computed as that code computed it, so that filters
	// written then keep growing exactly as they would have.
	scheduleV1 = 1
	// scheduleRamp is the schedule described above, with its parameters
	// recorded.
	scheduleRamp = 2
)

// maxRamp bounds the ramp stages a schedule may have: rampReach needs 7 at
// growth 1 and fewer at any other.
const maxRamp = 64

// schedule decides the capacity and the false positive rate of each stage
// of a scalable filter, from the first stage's capacity and the overall
// rate. Its fields are recorded in the file, so that a filter keeps the
// schedule it was built with when the constants above change.
type schedule struct {
	kind      uint8
	growth    uint64  // stage i+1 holds growth times the keys of stage i
	first     float64 // share of p that stage 0 gets
	ramp      uint64  // stages after the first that split rampShare
	rampShare float64 // share of the rest that the ramp stages split
	rampRatio float64 // rate of ramp stage i+1 over that of ramp stage i
	decay     float64 // rate of stage i+1 over that of stage i, after the ramp
}

// newSchedule returns the schedule of a new filter with the given growth.
func newSchedule(growth uint64) schedule {
	return schedule{kind: scheduleRamp, growth: growth, first: firstShare,
		ramp: rampStages(growth, rampReach), rampShare: rampShare,
		rampRatio: math.Pow(float64(growth), rampExponent), decay: tailDecay}
}

// v1Schedule is the schedule of filters read from format version 1.
var v1Schedule = schedule{kind: scheduleV1, growth: 2, first: 0.2, decay: 0.8}

// rampStages returns how many stages after the first a filter of this
// growth needs to hold reach times the first's capacity.
func rampStages(growth, reach uint64) uint64 {
	held, c, n := uint64(1), uint64(1), uint64(0)
	for held < reach {
		hi, lo := bits.Mul64(c, growth)
		if hi != 0 {
			lo = math.MaxUint64
		}
		c = lo
		held = satAdd(held, c)
		n++
	}
	return n
}

// rate returns the false positive rate of stage i for the overall rate p.
// Every product is rounded explicitly (float64(...)), so that no platform
// fuses it into a multiply-add and a file's recorded rates are recomputed
// bit for bit everywhere.
func (s schedule) rate(p float64, i int) float64 {
	if s.kind == scheduleV1 {
		r := p * (1 - 0.8)
		for range i {
			r *= 0.8
		}
		return r
	}
	if i == 0 {
		return float64(s.first * p)
	}
	rest := float64((1 - s.first) * p)
	if uint64(i) <= s.ramp {
		sum, w, wi := 0.0, 1.0, 0.0
		for j := range s.ramp {
			if j == uint64(i-1) {
				wi = w
			}
			sum += w
			w = float64(w * s.rampRatio)
		}
		return float64(rest * float64(s.rampShare*float64(wi/sum)))
	}
	r := float64(rest * float64((1-s.rampShare)*(1-s.decay)))
	for range uint64(i) - s.ramp - 1 {
		r = float64(r * s.decay)
	}
	return r
}

// capacity returns the capacity of stage i for a first stage of c0 keys,
// and false if it overflows a uint64.
func (s schedule) capacity(c0 uint64, i int) (uint64, bool) {
	c := c0
	for range i {
		hi, lo := bits.Mul64(c, s.growth)
		if hi != 0 {
			return 0, false
		}
		c = lo
	}
	return c, true
}

// valid checks a schedule read from a file: parameters in range, and
// positive, finite ramp rates.
func (s schedule) valid() error {
	switch s.kind {
	case scheduleV1:
		if s != v1Schedule {
			return fmt.Errorf("%w: schedule 1 with parameters %+v", ErrCorrupt, s)
		}
		return nil
	case scheduleRamp:
	default:
		return fmt.Errorf("%w: unknown schedule %d", ErrCorrupt, s.kind)
	}
	ok := s.growth >= 1 && s.first > 0 && s.first < 1 && s.ramp <= maxRamp &&
		s.rampShare >= 0 && s.rampShare < 1 && (s.ramp == 0) == (s.rampShare == 0) &&
		s.rampRatio > 0 && s.rampRatio <= math.MaxUint64 && s.decay > 0 && s.decay < 1
	for i := 1; ok && uint64(i) <= s.ramp; i++ {
		r := s.rate(0.5, i)
		ok = r > 0 && r < 1
	}
	if !ok {
		return fmt.Errorf("%w: schedule %+v", ErrCorrupt, s)
	}
	return nil
}

// stageConfig returns the Config of stage i of a scalable filter.
func stageConfig(c Config, s schedule, i int) (Config, error) {
	capacity, ok := s.capacity(c.Capacity, i)
	if !ok {
		return Config{}, fmt.Errorf("%w: stage %d would hold %d·%d^%d keys, more than a uint64 counts",
			ErrTooLarge, i, c.Capacity, s.growth, i)
	}
	return Config{Capacity: capacity, FPR: s.rate(c.FPR, i), Seed: c.Seed}, nil
}

// scalableConfig validates the Config of a new scalable filter and returns
// it with its growth resolved, the schedule, and its first stage's Config.
func scalableConfig(c Config) (Config, schedule, Config, error) {
	if c.Blocks != 0 || c.K != 0 {
		return c, schedule{}, c, fmt.Errorf("%w: a scalable filter sizes its own stages; set Capacity and FPR, not Blocks and K", ErrInvalidConfig)
	}
	if !(c.FPR > 0 && c.FPR < 1) { // also catches NaN
		return c, schedule{}, c, fmt.Errorf("%w: FPR = %v, want 0 < FPR < 1", ErrInvalidConfig, c.FPR)
	}
	if c.Growth == 0 {
		c.Growth = DefaultGrowth
	}
	s := newSchedule(c.Growth)
	first, err := stageConfig(c, s, 0)
	first.RandomSeed, first.MaxBytes = c.RandomSeed, c.MaxBytes
	return c, s, first, err
}

// ScalableSizeBytes returns the memory that NewScalableWithConfig(c) and
// NewAtomicScalableWithConfig(c) take for their bits (SizeBytes): the first
// stage's, which is sized for c.Capacity keys at a share of c.FPR, not at
// c.FPR. It returns the error they would return (ErrTooLarge when the first
// stage exceeds c.MaxBytes), without allocating.
func ScalableSizeBytes(c Config) (uint64, error) {
	_, _, first, err := scalableConfig(c)
	if err != nil {
		return 0, err
	}
	nblocks, _, _, err := first.geometry(bitTable)
	if err != nil {
		return 0, err
	}
	return nblocks * blockBytes, nil
}

// buildStage builds stage i of a filter that holds used bytes, or returns
// why it cannot, wrapping ErrFull.
func buildStage[F any](c Config, s schedule, i int, used uint64, build func(Config) (F, error)) (F, error) {
	var none F
	sc, err := stageConfig(c, s, i)
	if err == nil {
		var nblocks uint64
		nblocks, _, _, err = sc.geometry(bitTable)
		if err == nil && c.MaxBytes != 0 && (used > c.MaxBytes || nblocks > (c.MaxBytes-used)/blockBytes) {
			return none, fmt.Errorf("%w: stage %d (%d keys) takes %d bytes, and %d of MaxBytes %d are in use",
				ErrFull, i, sc.Capacity, nblocks*blockBytes, used, c.MaxBytes)
		}
	}
	if err == nil {
		var f F
		if f, err = build(sc); err == nil {
			return f, nil
		}
	}
	return none, fmt.Errorf("%w: stage %d cannot be built: %w", ErrFull, i, err)
}

// ScalableFilter is a Bloom filter for an unknown number of keys: a chain
// of Filters (stages) of growing capacity and tightening false positive
// rate. Test checks every stage; a new key goes to the newest, and a new
// stage starts when a key that is not in the filter arrives while the
// newest holds its capacity. Its false positive rate stays at or below the
// p it was built with however far it grows: the stages' rates sum to p.
// All stages share one seed, so a key is hashed once for all.
//
// Stage i holds Capacity·Growth^i keys. Stage 0 gets 3/4 of p and the
// stages after it share the rest, rising with capacity up to 8 times the
// first stage's capacity and falling geometrically after (see
// docs/sizing.md for why, and what it costs against RedisBloom).
//
// It is not safe for concurrent use; see AtomicScalableFilter.
type ScalableFilter struct {
	config   Config // Seed and Growth resolved
	schedule schedule
	stages   []*Filter
	counts   []uint64 // new keys added to each stage
	err      error    // why the filter could not grow, until SetMaxBytes
}

// NewScalable returns a ScalableFilter that starts with room for initial
// keys, grows by DefaultGrowth and keeps its false positive rate at or below
// p. It panics on invalid parameters, as New does.
func NewScalable[P Rate](initial uint64, p P) *ScalableFilter {
	s, err := NewScalableWithConfig(Config{Capacity: initial, FPR: float64(p)})
	if err != nil {
		panic(constructorPanic("NewScalable", initial, float64(p), err))
	}
	return s
}

// NewScalableWithConfig returns a ScalableFilter whose first stage holds
// c.Capacity keys, for the overall rate c.FPR, growing by c.Growth (0:
// DefaultGrowth), with c's seed and bounded by c.MaxBytes. Blocks and K
// must not be set. The first stage takes ScalableSizeBytes(c) bytes.
func NewScalableWithConfig(c Config) (*ScalableFilter, error) {
	c, sched, first, err := scalableConfig(c)
	if err != nil {
		return nil, err
	}
	f, err := NewWithConfig(first)
	if err != nil {
		return nil, err
	}
	c.Seed, c.RandomSeed = f.seed, false
	return &ScalableFilter{config: c, schedule: sched, stages: []*Filter{f}, counts: []uint64{0}}, nil
}

// Add inserts key into the newest stage, unless the filter already tests
// positive for it. When the filter is full (see ErrFull), Add still adds
// the key, to the newest stage beyond its capacity: no key is lost, but the
// false positive rate rises above p, and Err says why. TryAdd refuses
// instead.
func (s *ScalableFilter) Add(key []byte) { s.AddHash(s.stages[0].hash(key)) }

// AddString is Add for a string key.
func (s *ScalableFilter) AddString(key string) { s.AddHash(s.stages[0].hashString(key)) }

// AddHash adds the key whose Hash is h.
func (s *ScalableFilter) AddHash(h uint64) { s.insert(h, true) }

// TestOrAdd reports whether key may already be in the filter, and adds it
// only if not, as Add does: bits-and-blooms' TestOrAdd. A scalable filter
// has no TestAndAdd (bits-and-blooms' "add whatever the test says"): a key
// it holds would take a place in the newest stage again, and the filter
// would grow for keys it already has.
func (s *ScalableFilter) TestOrAdd(key []byte) bool { return s.TestOrAddHash(s.stages[0].hash(key)) }

// TestOrAddString is TestOrAdd for a string key.
func (s *ScalableFilter) TestOrAddString(key string) bool {
	return s.TestOrAddHash(s.stages[0].hashString(key))
}

// TestOrAddHash is TestOrAdd for the key whose Hash is h.
func (s *ScalableFilter) TestOrAddHash(h uint64) bool {
	added, _ := s.insert(h, true)
	return !added
}

// TryAdd adds key unless the filter may already hold it, and reports
// whether it added it. When the key is new and the filter is full it adds
// nothing and returns an error wrapping ErrFull; the filter keeps its rate.
func (s *ScalableFilter) TryAdd(key []byte) (added bool, err error) {
	return s.insert(s.stages[0].hash(key), false)
}

// TryAddString is TryAdd for a string key.
func (s *ScalableFilter) TryAddString(key string) (added bool, err error) {
	return s.insert(s.stages[0].hashString(key), false)
}

// TryAddHash is TryAdd for the key whose Hash is h.
func (s *ScalableFilter) TryAddHash(h uint64) (added bool, err error) { return s.insert(h, false) }

// insert adds the key whose hash is h unless the filter holds it. A full
// filter refuses it, or, with overfill, puts it in the newest stage anyway.
func (s *ScalableFilter) insert(h uint64, overfill bool) (bool, error) {
	if s.TestHash(h) {
		return false, nil
	}
	return s.add(h, overfill)
}

// add puts the key whose hash is h, which the filter does not hold, in the
// newest stage, growing first if it is full.
func (s *ScalableFilter) add(h uint64, overfill bool) (bool, error) {
	last := len(s.stages) - 1
	if s.counts[last] >= s.stages[last].capacity {
		if err := s.grow(); err == nil {
			last++
		} else if !overfill {
			return false, err
		}
	}
	s.stages[last].AddHash(h)
	s.counts[last]++
	return true, nil
}

func (s *ScalableFilter) grow() error {
	if s.err != nil {
		return s.err
	}
	f, err := buildStage(s.config, s.schedule, len(s.stages), s.SizeBytes(), NewWithConfig)
	if err != nil {
		s.err = err
		return err
	}
	s.stages = append(s.stages, f)
	s.counts = append(s.counts, 0)
	return nil
}

// Test reports whether key may be in the filter.
func (s *ScalableFilter) Test(key []byte) bool { return s.TestHash(s.stages[0].hash(key)) }

// TestString is Test for a string key.
func (s *ScalableFilter) TestString(key string) bool {
	return s.TestHash(s.stages[0].hashString(key))
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

// Stages returns the number of stages.
func (s *ScalableFilter) Stages() int { return len(s.stages) }

// Stage returns stage i, oldest first, to inspect it.
func (s *ScalableFilter) Stage(i int) *Filter { return s.stages[i] }

// SizeBytes returns the memory of all stages' bits.
func (s *ScalableFilter) SizeBytes() uint64 { return sizeOfStages(s.stages) }

// EstimatedCount estimates the number of distinct keys, from the bits of
// every stage.
func (s *ScalableFilter) EstimatedCount() uint64 { return countOfStages(s.stages) }

// Count returns the number of keys added as new: keys the filter did not
// already test positive for (RedisBloom's "Number of items inserted").
func (s *ScalableFilter) Count() uint64 { return sum(s.counts) }

// Capacity returns the number of keys the stages built so far hold: the
// sum of their capacities (RedisBloom's "Capacity").
func (s *ScalableFilter) Capacity() uint64 { return capacityOfStages(s.stages) }

// Config returns the Config the filter was built with: Capacity is the
// first stage's, Seed and Growth are the ones in use, and MaxBytes the
// current bound.
func (s *ScalableFilter) Config() Config { return s.config }

// SetMaxBytes bounds the memory of the stages' bits from now on, 0 for no
// bound; see Config.MaxBytes. A filter already larger keeps what it holds
// and adds no stage. Raising the bound lets a full filter grow again.
func (s *ScalableFilter) SetMaxBytes(n uint64) {
	s.config.MaxBytes = n
	s.err = nil
}

// Err returns why the filter could not grow, wrapping ErrFull, or nil. Add
// then puts new keys in the newest stage beyond its capacity and the rate
// rises above p; TryAdd refuses them.
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

func capacityOfStages[F interface{ Capacity() uint64 }](stages []F) uint64 {
	var n uint64
	for _, f := range stages {
		n = satAdd(n, f.Capacity())
	}
	return n
}

func sum(xs []uint64) uint64 {
	var n uint64
	for _, x := range xs {
		n = satAdd(n, x)
	}
	return n
}

func satAdd(a, b uint64) uint64 {
	if s, carry := bits.Add64(a, b, 0); carry == 0 {
		return s
	}
	return math.MaxUint64
}

// AtomicScalableFilter is a ScalableFilter safe for concurrent use by
// multiple goroutines. Tests never wait: the stages are published as an
// immutable list through an atomic pointer, and a new stage is added by
// publishing a new list.
//
// A goroutine adding a key that the filter does not hold first takes a
// place in the newest stage: a compare-and-swap on the stage's count of
// keys, one cache line shared by the adding goroutines, which never goes
// past the stage's capacity. Adding keys already present touches nothing
// but loads. When the newest stage is full, the goroutines with new keys
// take a lock: the first builds the next stage and the others wait for it,
// rather than pour keys into a full stage and drive its rate past p.
type AtomicScalableFilter struct {
	config   Config // Seed and Growth resolved; MaxBytes lives in maxBytes
	schedule schedule
	stages   atomic.Pointer[[]*atomicStage]
	grow     sync.Mutex
	err      atomic.Pointer[error]
	maxBytes atomic.Uint64
}

type atomicStage struct {
	f     *AtomicFilter
	added atomic.Uint64 // new keys, including places taken for keys being added
	_     [64 - 8]byte  // the counter alone on its line, away from other stages
}

// NewAtomicScalable is NewScalable for an AtomicScalableFilter.
func NewAtomicScalable[P Rate](initial uint64, p P) *AtomicScalableFilter {
	s, err := NewAtomicScalableWithConfig(Config{Capacity: initial, FPR: float64(p)})
	if err != nil {
		panic(constructorPanic("NewAtomicScalable", initial, float64(p), err))
	}
	return s
}

// NewAtomicScalableWithConfig is NewScalableWithConfig for an
// AtomicScalableFilter.
func NewAtomicScalableWithConfig(c Config) (*AtomicScalableFilter, error) {
	c, sched, first, err := scalableConfig(c)
	if err != nil {
		return nil, err
	}
	f, err := NewAtomicWithConfig(first)
	if err != nil {
		return nil, err
	}
	c.Seed, c.RandomSeed = f.seed, false
	s := &AtomicScalableFilter{config: c, schedule: sched}
	s.maxBytes.Store(c.MaxBytes)
	s.stages.Store(&[]*atomicStage{{f: f}})
	return s, nil
}

// Add inserts key into the newest stage, unless the filter already tests
// positive for it; see ScalableFilter.Add.
func (s *AtomicScalableFilter) Add(key []byte) { s.AddHash(s.first().hash(key)) }

// AddString is Add for a string key.
func (s *AtomicScalableFilter) AddString(key string) { s.AddHash(s.first().hashString(key)) }

func (s *AtomicScalableFilter) first() *AtomicFilter { return (*s.stages.Load())[0].f }

// AddHash adds the key whose Hash is h.
func (s *AtomicScalableFilter) AddHash(h uint64) { s.insert(h, true) }

// TestOrAdd is ScalableFilter.TestOrAdd. When goroutines add the same new
// key at once, at least one of them reports it as new, as
// AtomicFilter.TestOrAdd does.
func (s *AtomicScalableFilter) TestOrAdd(key []byte) bool {
	return s.TestOrAddHash(s.first().hash(key))
}

// TestOrAddString is TestOrAdd for a string key.
func (s *AtomicScalableFilter) TestOrAddString(key string) bool {
	return s.TestOrAddHash(s.first().hashString(key))
}

// TestOrAddHash is TestOrAdd for the key whose Hash is h.
func (s *AtomicScalableFilter) TestOrAddHash(h uint64) bool {
	added, _ := s.insert(h, true)
	return !added
}

// TryAdd is ScalableFilter.TryAdd. When goroutines add the same new key at
// once, at least one of them reports it as added.
func (s *AtomicScalableFilter) TryAdd(key []byte) (added bool, err error) {
	return s.insert(s.first().hash(key), false)
}

// TryAddString is TryAdd for a string key.
func (s *AtomicScalableFilter) TryAddString(key string) (added bool, err error) {
	return s.insert(s.first().hashString(key), false)
}

// TryAddHash is TryAdd for the key whose Hash is h.
func (s *AtomicScalableFilter) TryAddHash(h uint64) (added bool, err error) {
	return s.insert(h, false)
}

func (s *AtomicScalableFilter) insert(h uint64, overfill bool) (bool, error) {
	for {
		stages := *s.stages.Load()
		if testStages(stages, h) {
			return false, nil
		}
		newest := stages[len(stages)-1]
		for {
			n := newest.added.Load()
			if n >= newest.f.capacity {
				break
			}
			if newest.added.CompareAndSwap(n, n+1) {
				if newest.f.testAndAddHash(h) {
					// Another goroutine added the same key meanwhile:
					// give the place back.
					newest.added.Add(^uint64(0))
					return false, nil
				}
				return true, nil
			}
		}
		var err error
		if e := s.err.Load(); e != nil {
			err = *e // full: refuse without queueing on the lock
		} else {
			err = s.addStage(len(stages))
		}
		if err == nil {
			continue // test again: the key may have arrived meanwhile
		}
		if !overfill {
			return false, err
		}
		if newest.f.testAndAddHash(h) {
			return false, nil
		}
		newest.added.Add(1)
		return true, nil
	}
}

// addStage publishes stage i, unless another goroutine already has or a
// place in stage i-1 was given back; it returns why it cannot.
func (s *AtomicScalableFilter) addStage(i int) error {
	s.grow.Lock()
	defer s.grow.Unlock()
	stages := *s.stages.Load()
	if len(stages) > i {
		return nil
	}
	if e := s.err.Load(); e != nil {
		return *e
	}
	if newest := stages[i-1]; newest.added.Load() < newest.f.capacity {
		return nil
	}
	c := s.config
	c.MaxBytes = s.maxBytes.Load()
	f, err := buildStage(c, s.schedule, i, atomicSizeBytes(stages), NewAtomicWithConfig)
	if err != nil {
		s.err.Store(&err)
		return err
	}
	next := append(stages[:i:i], &atomicStage{f: f})
	s.stages.Store(&next)
	return nil
}

// Test reports whether key may be in the filter.
func (s *AtomicScalableFilter) Test(key []byte) bool {
	stages := *s.stages.Load()
	return testStages(stages, stages[0].f.hash(key))
}

// TestString is Test for a string key.
func (s *AtomicScalableFilter) TestString(key string) bool {
	stages := *s.stages.Load()
	return testStages(stages, stages[0].f.hashString(key))
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
func (s *AtomicScalableFilter) SizeBytes() uint64 { return atomicSizeBytes(*s.stages.Load()) }

func atomicSizeBytes(stages []*atomicStage) uint64 {
	var n uint64
	for _, st := range stages {
		n += st.f.SizeBytes()
	}
	return n
}

// EstimatedCount estimates the number of distinct keys from the bits.
func (s *AtomicScalableFilter) EstimatedCount() uint64 {
	var n uint64
	for _, st := range *s.stages.Load() {
		n += st.f.EstimatedCount()
	}
	return n
}

// Count is ScalableFilter.Count. Keys being added as it runs may or may not
// be counted.
func (s *AtomicScalableFilter) Count() uint64 {
	var n uint64
	for _, st := range *s.stages.Load() {
		n = satAdd(n, st.added.Load())
	}
	return n
}

// Capacity is ScalableFilter.Capacity.
func (s *AtomicScalableFilter) Capacity() uint64 {
	var n uint64
	for _, st := range *s.stages.Load() {
		n = satAdd(n, st.f.capacity)
	}
	return n
}

// Config is ScalableFilter.Config.
func (s *AtomicScalableFilter) Config() Config {
	c := s.config
	c.MaxBytes = s.maxBytes.Load()
	return c
}

// SetMaxBytes is ScalableFilter.SetMaxBytes. It may run concurrently with
// any method but ReadFrom.
func (s *AtomicScalableFilter) SetMaxBytes(n uint64) {
	s.grow.Lock()
	defer s.grow.Unlock()
	s.maxBytes.Store(n)
	s.err.Store(nil)
}

func stageCounts(stages []*atomicStage) []uint64 {
	ns := make([]uint64, len(stages))
	for i, st := range stages {
		ns[i] = st.added.Load()
	}
	return ns
}

// Err is ScalableFilter.Err.
func (s *AtomicScalableFilter) Err() error {
	if e := s.err.Load(); e != nil {
		return *e
	}
	return nil
}
