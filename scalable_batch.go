package ohbloom

// A scalable filter's batched calls take the keys a window at a time: they
// hash the window once (every stage has the same seed), test it against
// the newest stage with Filter's pipeline, which keeps the cache misses of
// many keys in flight, and then against each older stage the keys not yet
// found, newest first, as Test goes.

// stageWindow is how many keys a scalable filter's batched call hashes at
// once: the hashes, and the keys left for the older stages, live on the
// stack.
const stageWindow = 256

// TestBatch tests keys and writes the answers to results[i], as Test does
// each, without allocating. It panics if results is shorter than keys.
func (s *ScalableFilter) TestBatch(keys [][]byte, results []bool) {
	testStagesBatch(s.stageCores(), keys, opTest, results)
}

// TestBatchStrings is TestBatch for string keys.
func (s *ScalableFilter) TestBatchStrings(keys []string, results []bool) {
	testStagesBatch(s.stageCores(), keys, opTest, results)
}

// stageCores is the stages' cores, oldest first, as testStagesBatch takes
// them.
func (s *ScalableFilter) stageCores() stageList {
	return stageList{n: len(s.stages), plain: s.stages}
}

// TestBatch tests keys as ScalableFilter.TestBatch does. A stage added
// during the call is not tested: keys being added meanwhile may or may not
// be found.
func (s *AtomicScalableFilter) TestBatch(keys [][]byte, results []bool) {
	testStagesBatch(s.stageCores(), keys, opAtomicTest, results)
}

// TestBatchStrings is TestBatch for string keys.
func (s *AtomicScalableFilter) TestBatchStrings(keys []string, results []bool) {
	testStagesBatch(s.stageCores(), keys, opAtomicTest, results)
}

func (s *AtomicScalableFilter) stageCores() stageList {
	stages := *s.stages.Load()
	return stageList{n: len(stages), atomic: stages}
}

// stageList is the stages of either scalable filter, oldest first.
type stageList struct {
	n      int
	plain  []*Filter
	atomic []*atomicStage
}

func (l stageList) core(i int) *core {
	if l.plain != nil {
		return &l.plain[i].core
	}
	return &l.atomic[i].f.core
}

// testStagesBatch tests keys against the stages, a window at a time.
func testStagesBatch[K []byte | string](stages stageList, keys []K, op op, results []bool) {
	results = results[:len(keys)]
	var hs [stageWindow]uint64
	for from := 0; from < len(keys); from += stageWindow {
		to := min(len(keys), from+stageWindow)
		testStagesHashed(stages, keys[from:to], hs[:to-from], op, results[from:to])
	}
}

// testStagesHashed hashes a window of at most stageWindow keys into hs and
// tests them against the stages, newest first: each stage takes the keys
// the newer ones did not find.
func testStagesHashed[K []byte | string](stages stageList, keys []K, hs []uint64, op op, results []bool) {
	var left [stageWindow]uint64
	var at [stageWindow]uint16
	var found [stageWindow]bool
	hashWindow(stages.core(0), hs, keys)
	stages.core(stages.n-1).runHashes(hs, op, results)
	n := 0 // left[:n] are the keys not found yet, at[:n] where they are
	for j, ok := range results {
		if !ok {
			left[n], at[n] = hs[j], uint16(j)
			n++
		}
	}
	for i := stages.n - 2; i >= 0 && n > 0; i-- {
		stages.core(i).runHashes(left[:n], op, found[:n])
		m := 0
		for j, ok := range found[:n] {
			if ok {
				results[at[j]] = true
			} else {
				left[m], at[m] = left[j], at[j]
				m++
			}
		}
		n = m
	}
}
