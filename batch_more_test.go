package ohbloom

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/ohbloom/ohbloom/internal/testkeys"
)

// The counting filters' batched tests answer as single tests, for every key
// shape and lengths around the batch size, with duplicates (counted twice).
func TestCountingBatchMatchesSingle(t *testing.T) {
	keys, strs := batchKeys(300)
	half := len(keys) / 2
	for _, n := range []int{0, 1, batchSize - 1, batchSize, batchSize + 1, 2*batchSize + 3, half} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ref := NewCounting(uint64(len(keys)), 0.01)
			for _, k := range keys[:n] {
				ref.Add(k)
			}
			want := make([]bool, len(keys))
			for i, k := range keys {
				want[i] = ref.Test(k)
			}
			aref := ref.ToAtomic()
			got := make([]bool, len(keys)+3)
			check := matchesSingle(t, want, got)
			check("CountingFilter.TestBatch", func() { ref.TestBatch(keys, got) })
			check("CountingFilter.TestBatchStrings", func() { ref.TestBatchStrings(strs, got) })
			check("AtomicCountingFilter.TestBatch", func() { aref.TestBatch(keys, got) })
			check("AtomicCountingFilter.TestBatchStrings", func() { aref.TestBatchStrings(strs, got) })
		})
	}
}

// A scalable filter's TestBatch answers as Test, across the growth of
// several stages.
func TestScalableBatchMatchesSingle(t *testing.T) {
	keys, _ := batchKeys(400)
	for _, n := range []int{0, 1, stageWindow - 1, stageWindow, stageWindow + 1, len(keys)} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := Config{Capacity: 100, FPR: 0.01, Growth: 2}
			ref, _ := NewScalableWithConfig(c)
			for _, k := range keys[:n] {
				ref.Add(k)
			}
			a, _ := NewAtomicScalableWithConfig(c)
			for _, k := range keys[:n] {
				a.Add(k)
			}
			if n == len(keys) && ref.Stages() < 4 {
				t.Fatalf("%d keys in a filter for 100: %d stages, want growth", n, ref.Stages())
			}

			// Added keys, and as many others, against a filter of several
			// stages.
			all := append(append([][]byte(nil), keys...), absentKeys(len(keys))...)
			allStrs := make([]string, len(all))
			for i, k := range all {
				allStrs[i] = string(k)
			}
			wantT := make([]bool, len(all))
			found := 0
			for i, k := range all {
				wantT[i] = ref.Test(k)
				if wantT[i] {
					found++
				}
			}
			if n > 0 && (found < n/2 || found == len(all)) {
				t.Fatalf("%d of %d keys found: the test keys do not exercise both answers", found, len(all))
			}
			aref := a
			got := make([]bool, len(all))
			check := matchesSingle(t, wantT, got)
			check("ScalableFilter.TestBatch", func() { ref.TestBatch(all, got) })
			check("ScalableFilter.TestBatchStrings", func() { ref.TestBatchStrings(allStrs, got) })
			check("AtomicScalableFilter.TestBatch", func() { aref.TestBatch(all, got) })
			check("AtomicScalableFilter.TestBatchStrings", func() { aref.TestBatchStrings(allStrs, got) })
		})
	}
}

// absentKeys returns n keys that batchKeys does not.
func absentKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "absent-%d", i)
	}
	return keys
}

func TestNewBatchesPanicOnShortResults(t *testing.T) {
	keys := make([][]byte, 5)
	short := make([]bool, 4)
	for name, call := range map[string]func(){
		"CountingFilter":       func() { NewCounting(10, 0.1).TestBatch(keys, short) },
		"AtomicCountingFilter": func() { NewAtomicCounting(10, 0.1).TestBatch(keys, short) },
		"ScalableFilter":       func() { NewScalable(10, 0.1).TestBatch(keys, short) },
		"AtomicScalableFilter": func() { NewAtomicScalable(10, 0.1).TestBatch(keys, short) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s.TestBatch with a short results slice did not panic", name)
				}
			}()
			call()
		}()
	}
}

func TestNewBatchesZeroAllocations(t *testing.T) {
	keys, strs := batchKeys(20)
	results := make([]bool, len(keys))
	c, ac := NewCounting(1000, 0.01), NewAtomicCounting(1000, 0.01)
	s, as := NewScalable(10_000, 0.01), NewAtomicScalable(10_000, 0.01)
	ops := map[string]func(){
		"CountingFilter.TestBatch":              func() { c.TestBatch(keys, results) },
		"CountingFilter.TestBatchStrings":       func() { c.TestBatchStrings(strs, results) },
		"AtomicCountingFilter.TestBatch":        func() { ac.TestBatch(keys, results) },
		"ScalableFilter.TestBatch":              func() { s.TestBatch(keys, results) },
		"ScalableFilter.TestBatchStrings":       func() { s.TestBatchStrings(strs, results) },
		"AtomicScalableFilter.TestBatch":        func() { as.TestBatch(keys, results) },
		"AtomicScalableFilter.TestBatchStrings": func() { as.TestBatchStrings(strs, results) },
	}
	for name, op := range ops {
		if n := testing.AllocsPerRun(10, op); n != 0 {
			t.Errorf("%s allocates %v times", name, n)
		}
	}
}

// BenchmarkBatchKinds compares the batched calls of the counting and
// scalable filters with the same calls one key at a time, on the same
// filter, 16-byte keys at p = 1%: one filter in the caches and one past
// them. The scalable filter starts at a hundredth of the keys and grows
// (7 stages at 10^5 keys, 8 at 10^7); present keys stop at their stage,
// absent ones probe every stage.
//
//	go test -c -o b.test .
//	for i in 1 2 3; do flock /tmp/ohbloom-bench.lock ./b.test -test.run '^$' -test.bench BatchKinds; done > kinds.txt
//	benchstat -col /op -row /filter,/n,/keys kinds.txt
func BenchmarkBatchKinds(b *testing.B) {
	const window = 4096 // keys per batched call
	for _, n := range []int{1e5, 1e7} {
		if testing.Short() && n > 1e5 {
			continue
		}
		var buf [16]byte
		keys := make([][]byte, 2*n) // present, then absent
		for i := range keys {
			keys[i] = bytes.Clone(testkeys.Key16(&buf, uint64(i)))
		}
		c, ac := NewCounting(uint64(n), 0.01), NewAtomicCounting(uint64(n), 0.01)
		s, as := NewScalable(uint64(n/100), 0.01), NewAtomicScalable(uint64(n/100), 0.01)
		for _, k := range keys[:n] {
			c.Add(k)
			ac.Add(k)
			s.Add(k)
			as.Add(k)
		}
		results := make([]bool, window)
		type filter struct {
			name       string
			test       func([]byte) bool
			testBatch  func([][]byte, []bool)
			absentKeys bool
		}
		for _, f := range []filter{
			{"counting", c.Test, c.TestBatch, false},
			{"atomic-counting", ac.Test, ac.TestBatch, false},
			{"scalable", s.Test, s.TestBatch, true},
			{"atomic-scalable", as.Test, as.TestBatch, true},
		} {
			sets := []struct {
				name string
				keys [][]byte
			}{{"present", keys[:n]}, {"absent", keys[n:]}}
			if !f.absentKeys {
				sets = sets[:1]
			}
			for _, set := range sets {
				name := fmt.Sprintf("filter=%s/n=%d/keys=%s", f.name, n, set.name)
				perKey := func(b *testing.B, keys int) {
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(keys), "ns/key")
				}
				// A function value per key costs the loop an indirect call
				// that Filter's benchmark (bench/batch_test.go) spares it;
				// it costs the batched calls one per 4096 keys.
				b.Run(name+"/op=test-loop", func(b *testing.B) {
					at, done := 0, 0
					for b.Loop() {
						if at+window > n {
							at = 0
						}
						for _, k := range set.keys[at : at+window] {
							f.test(k)
						}
						at += window
						done += window
					}
					perKey(b, done)
				})
				b.Run(name+"/op=test-batch", func(b *testing.B) {
					at, done := 0, 0
					for b.Loop() {
						if at+window > n {
							at = 0
						}
						f.testBatch(set.keys[at:at+window], results)
						at += window
						done += window
					}
					perKey(b, done)
				})
			}
		}
	}
}

// TestBatchKindsPaired measures what BenchmarkBatchKinds does in a way a
// busy machine disturbs less: round after round it times a loop of single
// calls over one window of 4096 keys and one batched call over the next,
// in alternating order, and prints the medians of both and of the rounds'
// ratios. It is a measurement, not a test: it runs only with OHBLOOM_BATCH_BENCH set.
//
//	OHBLOOM_BATCH_BENCH=1 flock /tmp/ohbloom-bench.lock go test -run TestBatchKindsPaired -v .
func TestBatchKindsPaired(t *testing.T) {
	if os.Getenv("OHBLOOM_BATCH_BENCH") == "" {
		t.Skip("a measurement: set OHBLOOM_BATCH_BENCH=1 to run it")
	}
	const window, rounds = 4096, 300
	median := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
	for _, n := range []int{1e5, 1e7} {
		var buf [16]byte
		keys := make([][]byte, 2*n) // present, then absent
		for i := range keys {
			keys[i] = bytes.Clone(testkeys.Key16(&buf, uint64(i)))
		}
		c, ac := NewCounting(uint64(n), 0.01), NewAtomicCounting(uint64(n), 0.01)
		s, as := NewScalable(uint64(n/100), 0.01), NewAtomicScalable(uint64(n/100), 0.01)
		for _, k := range keys[:n] {
			c.Add(k)
			ac.Add(k)
			s.Add(k)
			as.Add(k)
		}
		results := make([]bool, window)
		// The loops are written out: a function value per key would add
		// an indirect call to each single call.
		for _, p := range []struct {
			name        string
			keys        [][]byte
			loop, batch func([][]byte)
		}{
			{"counting test present", keys[:n],
				func(ks [][]byte) {
					for _, k := range ks {
						c.Test(k)
					}
				}, func(ks [][]byte) { c.TestBatch(ks, results) }},
			{"atomic-counting test present", keys[:n],
				func(ks [][]byte) {
					for _, k := range ks {
						ac.Test(k)
					}
				}, func(ks [][]byte) { ac.TestBatch(ks, results) }},
			{"scalable test present", keys[:n],
				func(ks [][]byte) {
					for _, k := range ks {
						s.Test(k)
					}
				}, func(ks [][]byte) { s.TestBatch(ks, results) }},
			{"scalable test absent", keys[n:],
				func(ks [][]byte) {
					for _, k := range ks {
						s.Test(k)
					}
				}, func(ks [][]byte) { s.TestBatch(ks, results) }},
			{"atomic-scalable test present", keys[:n],
				func(ks [][]byte) {
					for _, k := range ks {
						as.Test(k)
					}
				}, func(ks [][]byte) { as.TestBatch(ks, results) }},
			{"atomic-scalable test absent", keys[n:],
				func(ks [][]byte) {
					for _, k := range ks {
						as.Test(k)
					}
				}, func(ks [][]byte) { as.TestBatch(ks, results) }},
		} {
			var loops, batches, ratios []float64
			at := 0
			for r := range rounds {
				if at+2*window > len(p.keys) {
					at = 0
				}
				// Each call its own keys: neither warms the other's blocks.
				kl, kb := p.keys[at:at+window], p.keys[at+window:at+2*window]
				at += 2 * window
				var l, b time.Duration
				if r%2 == 0 {
					start := time.Now()
					p.loop(kl)
					mid := time.Now()
					p.batch(kb)
					l, b = mid.Sub(start), time.Since(mid)
				} else {
					start := time.Now()
					p.batch(kb)
					mid := time.Now()
					p.loop(kl)
					b, l = mid.Sub(start), time.Since(mid)
				}
				loops = append(loops, float64(l.Nanoseconds())/window)
				batches = append(batches, float64(b.Nanoseconds())/window)
				ratios = append(ratios, float64(b)/float64(l))
			}
			t.Logf("n=%-9d %-28s loop %6.1f ns/key  batch %6.1f ns/key  batch/loop %.2f",
				n, p.name, median(loops), median(batches), median(ratios))
		}
	}
}
