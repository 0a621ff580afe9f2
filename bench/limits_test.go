package bench

import (
	"encoding/binary"
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/ohbloom/ohbloom"
	"github.com/zeebo/xxh3"
)

var (
	limitRounds = flag.Int("limits.rounds", 3, "interleaved rounds of BenchmarkLimits")
	limitOnly   = flag.Int("limits.n", 0, "run BenchmarkLimits at this capacity only (1000000, 30000000 or 1000000000)")
)

// limitCases are the filters of BenchmarkLimits, at p = 1%: in the caches
// (1.25 MB), past them (37.6 MB) and past 1 GiB (1.25 GB). The last is
// sized for 10^9 keys and filled with 2^24 real keys and pseudo-random
// hashes for the rest (10^9 keys would take 32 GB), so that every block is
// as full as in a real filter.
var limitCases = []struct{ capacity, keys int }{{1e6, 1e6}, {3e7, 3e7}, {1e9, 1 << 24}}

// limitWindowKeys is how many keys a batched call gets, as in BenchmarkBatch.
const limitWindowKeys = 4096

// BenchmarkLimits measures each call against the design's physical limit:
// one XXH3 of the key plus one independent random 64-byte read from an
// array of the filter's size, filled with data (limits.go). In one
// process, for each size, -limits.rounds rounds run every case in turn,
// a second or so each. Every case
// reports ns per key (ns/op, b.N counts keys) and x-limit, its ratio to
// the limit measured in the same round: single-key calls to the
// single-key limit, batched calls to the batched limit (the same reads
// with the batches' prefetch pipeline). It also measures what
// BenchmarkLimitsPaired does not: XXH3 alone, and the adds of new keys.
// Its ratios spread widely from round to round on a shared machine;
// BenchmarkLimitsPaired's do not, and they are the ones to judge the
// calls by. The 1.25 GB case is skipped under -short; it holds about
// 6 GB, so run it under the bench lock:
//
//	cd bench && go test -c -o limits.test
//	flock /tmp/ohbloom-bench.lock ./limits.test -test.run '^$' -test.bench '^BenchmarkLimits$' -test.timeout 2h > limits.txt
//	go run ./cmd/limitstable < limits.txt
func BenchmarkLimits(b *testing.B) {
	forLimitSizes(func(capacity, keys int) { runLimits(b, capacity, keys) })
}

// forLimitSizes runs fn on each size of limitCases that -short and
// -limits.n leave, collecting the last one's memory before the next.
func forLimitSizes(fn func(capacity, keys int)) {
	for _, c := range limitCases {
		if testing.Short() && c.capacity > 1e6 || *limitOnly != 0 && c.capacity != *limitOnly {
			continue
		}
		fn(c.capacity, c.keys)
		runtime.GC()
	}
}

// limitCase is what one size of BenchmarkLimits holds: the keys, the
// filled filter, the limit's array, and the scratch filters that the
// new-key adds fill.
type limitCase struct {
	n       int // keys
	keys    Keys
	views   [][]byte
	absent  Keys
	absentV [][]byte
	f       *ohbloom.Filter
	lines   []line
	results []bool

	// Adds of new keys go to filters with another seed, so that the
	// same keys are new to them; they are emptied when every key has
	// been added. next is how many keys each holds.
	fresh        *ohbloom.Filter
	freshAtomic  *ohbloom.AtomicFilter
	next, nextAt int

	limit map[string]float64 // "single" and "batch" limit of the current round, ns/key
}

// newLimitCase builds one size of BenchmarkLimits: nkeys keys in a filter
// sized for capacity, topped up with pseudo-random hashes, and the limit's
// array of as many lines as the filter has blocks and the empty filters
// the new-key adds fill, unless paired (BenchmarkLimitsPaired needs
// neither).
func newLimitCase(b *testing.B, capacity, nkeys int, paired bool) *limitCase {
	c := &limitCase{n: nkeys, keys: NewKeys(nkeys, 1), absent: NewKeys(1<<20, 2),
		results: make([]bool, limitWindowKeys), limit: map[string]float64{}}
	c.views = c.keys.Views(nil, 0, nkeys)
	c.absentV = c.absent.Views(nil, 0, c.absent.Len())
	c.f = ohbloom.New(uint64(capacity), 0.01)
	fillWithHashes(c.f, capacity-nkeys)
	c.f.AddBatch(c.views)
	if paired {
		return c
	}
	c.lines = newLines(c.f.Blocks())
	other := ohbloom.Config{Capacity: uint64(capacity), FPR: 0.01, Seed: ohbloom.DefaultSeed + 1}
	var err error
	if c.fresh, err = ohbloom.NewWithConfig(other); err != nil {
		b.Fatal(err)
	}
	if c.freshAtomic, err = ohbloom.NewAtomicWithConfig(other); err != nil {
		b.Fatal(err)
	}
	c.fresh.Reset() // fault the pages in before any timing
	c.freshAtomic.Reset()
	return c
}

func runLimits(b *testing.B, capacity, nkeys int) {
	c := newLimitCase(b, capacity, nkeys, false)
	seed := c.f.Seed()
	for round := 1; round <= *limitRounds; round++ {
		run := func(op, limit string, body func(b *testing.B)) {
			b.Run(fmt.Sprintf("n=%d/op=%s/round=%d", capacity, op, round), func(b *testing.B) {
				body(b)
				perKey := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				switch limit {
				case "":
				case "set-single", "set-batch":
					c.limit[limit[4:]] = perKey
				default:
					b.ReportMetric(perKey/c.limit[limit], "x-limit")
				}
			})
		}
		run("xxh3", "", func(b *testing.B) {
			var sum uint64
			for i, j := 0, 0; i < b.N; i++ {
				sum += xxh3.HashSeed(c.keys.At(j), seed)
				if j++; j == c.n {
					j = 0
				}
			}
			sink += sum
		})
		run("limit", "set-single", func(b *testing.B) {
			var sum uint64
			for i, j := 0, 0; i < b.N; i++ {
				sum += lineOf(c.lines, xxh3.HashSeed(c.keys.At(j), seed))[0]
				if j++; j == c.n {
					j = 0
				}
			}
			sink += sum
		})
		run("limit-batch", "set-batch", func(b *testing.B) {
			var sum uint64
			c.batches(b, func(from, to int) { sum += readLines(c.lines, c.views[from:to], seed) })
			sink += sum
		})
		run("test-present", "single", func(b *testing.B) {
			for i, j := 0, 0; i < b.N; i++ {
				if !c.f.Test(c.keys.At(j)) {
					b.Fatal("false negative")
				}
				if j++; j == c.n {
					j = 0
				}
			}
		})
		run("test-absent", "single", func(b *testing.B) {
			fp := 0
			for i, j := 0, 0; i < b.N; i++ {
				if c.f.Test(c.absent.At(j)) {
					fp++
				}
				j = (j + 1) & (c.absent.Len() - 1)
			}
			b.ReportMetric(float64(fp)/float64(b.N), "fpr")
		})
		run("add-present", "single", func(b *testing.B) {
			for i, j := 0, 0; i < b.N; i++ {
				c.f.Add(c.keys.At(j))
				if j++; j == c.n {
					j = 0
				}
			}
		})
		run("testbatch-present", "batch", func(b *testing.B) {
			c.batches(b, func(from, to int) {
				c.f.TestBatch(c.views[from:to], c.results)
				for _, r := range c.results[:to-from] {
					if !r {
						b.Fatal("false negative")
					}
				}
			})
		})
		run("testbatch-absent", "batch", func(b *testing.B) {
			fp, at := 0, 0
			for done := 0; done < b.N; {
				w := min(limitWindowKeys, b.N-done, len(c.absentV)-at)
				c.f.TestBatch(c.absentV[at:at+w], c.results)
				for _, r := range c.results[:w] {
					if r {
						fp++
					}
				}
				done += w
				if at += w; at == len(c.absentV) {
					at = 0
				}
			}
			b.ReportMetric(float64(fp)/float64(b.N), "fpr")
		})
		run("addbatch-present", "batch", func(b *testing.B) {
			c.batches(b, func(from, to int) { c.f.AddBatch(c.views[from:to]) })
		})
		run("add-new", "single", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if c.next == c.n {
					b.StopTimer()
					c.fresh.Reset()
					c.next = 0
					b.StartTimer()
				}
				c.fresh.Add(c.keys.At(c.next))
				c.next++
			}
		})
		run("atomic-add-new", "single", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if c.nextAt == c.n {
					b.StopTimer()
					c.freshAtomic.Reset()
					c.nextAt = 0
					b.StartTimer()
				}
				c.freshAtomic.Add(c.keys.At(c.nextAt))
				c.nextAt++
			}
		})
		run("atomic-add-present", "single", func(b *testing.B) {
			// Re-add keys the atomic filter holds, at least 2^16 of them.
			if c.nextAt < 1<<16 {
				for ; c.nextAt < 1<<16; c.nextAt++ {
					c.freshAtomic.Add(c.keys.At(c.nextAt))
				}
				b.ResetTimer()
			}
			for i, j := 0, 0; i < b.N; i++ {
				c.freshAtomic.Add(c.keys.At(j))
				if j++; j == c.nextAt {
					j = 0
				}
			}
		})
	}
}

// batches calls fn on windows of limitWindowKeys present keys until b.N
// keys are done, wrapping around the keys.
func (c *limitCase) batches(b *testing.B, fn func(from, to int)) {
	at := 0
	for done := 0; done < b.N; {
		w := min(limitWindowKeys, b.N-done, c.n-at)
		fn(at, at+w)
		done += w
		if at += w; at == c.n {
			at = 0
		}
	}
}

// BenchmarkLimitsPaired measures each call against its limit in turns of
// limitWindowKeys keys: a window through the limit, another window, half
// the keys away, through the call, which one first alternating (by the
// count of keys done, so a window cut short where the keys wrap around
// can break the alternation once), each timed on its own.
// BenchmarkLimits runs a second of one after a second of the other; on a
// shared machine a noisy stretch then hits one and not the other, and
// its rounds spread by more than the floors' margins. Here it hits both.
//
// The limit reads the filter's own blocks (filterLines), not an array of
// their size: taking turns, two arrays would share the caches that each
// has to itself in BenchmarkLimits, and the kernel (and the hypervisor)
// may back two arrays with different page sizes, which made the ratio of
// one process differ from the next by a third. One array has neither
// problem; it is filled with the filter's bits, as the limit's array is
// filled with data. Single-key calls are paired with the single-key
// limit, batched calls with the batched limit (readLines). Reports the
// call's and the limit's ns per key and x-limit, the ratio of their sums;
// at 1.25 GB, huge-share, the share of the memory advised for huge pages
// that they back. -limits.n picks one size; -short runs 10^6 only.
//
//	flock /tmp/ohbloom-bench.lock ./limits.test -test.run '^$' -test.bench LimitsPaired -test.timeout 1h
func BenchmarkLimitsPaired(b *testing.B) {
	forLimitSizes(func(capacity, keys int) { runLimitsPaired(b, capacity, keys) })
}

func runLimitsPaired(b *testing.B, capacity, nkeys int) {
	c := newLimitCase(b, capacity, nkeys, true)
	lines := filterLines(b, c.f)
	seed := c.f.Seed()
	single := func(keys [][]byte) {
		var sum uint64
		for _, k := range keys {
			sum += lineOf(lines, xxh3.HashSeed(k, seed))[0]
		}
		sink += sum
	}
	batched := func(keys [][]byte) { sink += readLines(lines, keys, seed) }
	ops := []struct {
		name  string
		keys  [][]byte
		limit func(keys [][]byte)
		call  func(keys [][]byte)
	}{
		{"test-present", c.views, single, func(keys [][]byte) {
			for _, k := range keys {
				if !c.f.Test(k) {
					b.Fatal("false negative")
				}
			}
		}},
		{"test-absent", c.absentV, single, func(keys [][]byte) {
			for _, k := range keys {
				c.results[0] = c.f.Test(k)
			}
		}},
		{"add-present", c.views, single, func(keys [][]byte) {
			for _, k := range keys {
				c.f.Add(k)
			}
		}},
		{"testbatch-present", c.views, batched, func(keys [][]byte) { c.f.TestBatch(keys, c.results) }},
		{"testbatch-absent", c.absentV, batched, func(keys [][]byte) { c.f.TestBatch(keys, c.results) }},
		{"addbatch-present", c.views, batched, func(keys [][]byte) { c.f.AddBatch(keys) }},
	}
	for round := 1; round <= *limitRounds; round++ {
		for _, op := range ops {
			b.Run(fmt.Sprintf("n=%d/op=%s/round=%d", capacity, op.name, round), func(b *testing.B) {
				// The limit takes its keys half the keys away from the
				// call's, so that neither finds lines the other just read.
				var inCall, inLimit time.Duration
				n := len(op.keys)
				at, limitAt := 0, n/2
				for done, w := 0, 0; done < b.N; done += w {
					w = min(limitWindowKeys, b.N-done, n-at, n-limitAt)
					keys, limitKeys := op.keys[at:at+w], op.keys[limitAt:limitAt+w]
					t0 := time.Now()
					if done/limitWindowKeys%2 == 0 {
						op.limit(limitKeys)
						t1 := time.Now()
						op.call(keys)
						inLimit, inCall = inLimit+t1.Sub(t0), inCall+time.Since(t1)
					} else {
						op.call(keys)
						t1 := time.Now()
						op.limit(limitKeys)
						inCall, inLimit = inCall+t1.Sub(t0), inLimit+time.Since(t1)
					}
					if at += w; at == n {
						at = 0
					}
					if limitAt += w; limitAt == n {
						limitAt = 0
					}
				}
				b.ReportMetric(float64(inCall.Nanoseconds())/float64(b.N), "call-ns/key")
				b.ReportMetric(float64(inLimit.Nanoseconds())/float64(b.N), "limit-ns/key")
				b.ReportMetric(float64(inCall)/float64(inLimit), "x-limit")
				if capacity >= 1e9 {
					b.ReportMetric(hugePageShare(), "huge-share")
				}
			})
		}
	}
}

// filterLines returns the blocks of f in place, as lines, for the limit
// to read: the first field of a Filter is its block slice. It checks what
// it found against AppendBlocks, so that a change of the Filter's layout
// fails the benchmark instead of reading the wrong memory.
func filterLines(b *testing.B, f *ohbloom.Filter) []line {
	lines := *(*[]line)(unsafe.Pointer(f))
	n := f.Blocks()
	if uint64(len(lines)) != n {
		b.Fatalf("filterLines found %d blocks, the filter has %d", len(lines), n)
	}
	for _, i := range []uint64{0, n / 2, n - 1} {
		enc := f.AppendBlocks(nil, i, 1)
		for j, w := range lines[i] {
			if binary.LittleEndian.Uint64(enc[8*j:]) != w {
				b.Fatalf("filterLines: block %d differs from AppendBlocks", i)
			}
		}
	}
	return lines
}

// BenchmarkAtomicAddPaired measures AtomicFilter.Add of new keys against
// Filter.Add of new keys as BenchmarkLimitsPaired measures a call against
// its limit: in turns of 4096 keys, each side timed on its own, which side
// goes first alternating. Both add the same keys, new to them, to empty
// filters of the same size, emptied together (untimed) once every key is
// in. It reports both sides' ns per key and x-plain, the atomic side's
// time over the plain side's. BenchmarkLimits measures the same adds a
// second apart, each into its own array, and spreads far more.
func BenchmarkAtomicAddPaired(b *testing.B) {
	forLimitSizes(func(capacity, nkeys int) {
		keys := NewKeys(nkeys, 1)
		views := keys.Views(nil, 0, nkeys)
		other := ohbloom.Config{Capacity: uint64(capacity), FPR: 0.01, Seed: ohbloom.DefaultSeed + 1}
		plain, err := ohbloom.NewWithConfig(other)
		if err != nil {
			b.Fatal(err)
		}
		atomicFilter, err := ohbloom.NewAtomicWithConfig(other)
		if err != nil {
			b.Fatal(err)
		}
		plain.Reset() // fault the pages in before any timing
		atomicFilter.Reset()
		at := 0
		for round := 1; round <= *limitRounds; round++ {
			b.Run(fmt.Sprintf("n=%d/round=%d", capacity, round), func(b *testing.B) {
				var inPlain, inAtomic time.Duration
				for done, w := 0, 0; done < b.N; done += w {
					if at == nkeys {
						b.StopTimer()
						plain.Reset()
						atomicFilter.Reset()
						at = 0
						b.StartTimer()
					}
					w = min(limitWindowKeys, b.N-done, nkeys-at)
					window := views[at : at+w]
					addPlain := func() {
						t0 := time.Now()
						for _, k := range window {
							plain.Add(k)
						}
						inPlain += time.Since(t0)
					}
					addAtomic := func() {
						t0 := time.Now()
						for _, k := range window {
							atomicFilter.Add(k)
						}
						inAtomic += time.Since(t0)
					}
					if done/limitWindowKeys%2 == 0 {
						addPlain()
						addAtomic()
					} else {
						addAtomic()
						addPlain()
					}
					at += w
				}
				b.ReportMetric(float64(inAtomic.Nanoseconds())/float64(b.N), "atomic-ns/key")
				b.ReportMetric(float64(inPlain.Nanoseconds())/float64(b.N), "plain-ns/key")
				b.ReportMetric(float64(inAtomic)/float64(inPlain), "x-plain")
			})
		}
		for _, k := range views[:at] { // what both hold since the last Reset
			if !atomicFilter.Test(k) || !plain.Test(k) {
				b.Fatal("an added key was not found")
			}
		}
	})
}
