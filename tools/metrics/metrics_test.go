package metrics

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ohbloom/ohbloom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCounts(t *testing.T) {
	f := ohbloom.NewAtomic(400_000, 0.01)
	m := New("blocks", f)
	const n = 200_000
	for i := range n {
		m.AddString(fmt.Sprint("k", i))
	}
	// Every goroutine tests the present keys and as many absent ones.
	const workers = 4
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range n {
				m.TestString(fmt.Sprint("k", i))
				m.Test(fmt.Appendf(nil, "absent-%d-%d", w, i))
			}
		})
	}
	wg.Wait()
	tests, positives, adds := m.Counts()
	// Sampled 1 in 256: a count of N has a standard deviation of about
	// sqrt(255·N), 0.6% for the 1.6e6 tests and 3.6% for the 2e5 adds; 15%
	// is over four of them.
	near := func(name string, got, want float64) {
		if math.Abs(got-want)/want > 0.15 {
			t.Errorf("%s = %.0f, want %.0f ± 15%%", name, got, want)
		}
	}
	near("tests", float64(tests), 2*workers*n)
	near("positives", float64(positives), workers*n*1.01)
	near("adds", float64(adds), n)

	// Batches are counted exactly.
	hs := make([]uint64, 1000)
	for i := range hs {
		hs[i] = m.Hash(fmt.Appendf(nil, "k%d", i))
	}
	results := make([]bool, len(hs))
	m.TestBatch(hs, results)
	m.AddBatch(hs[:10])
	t2, p2, a2 := m.Counts()
	if t2-tests != 1000 || p2-positives != 1000 || a2-adds != 10 {
		t.Errorf("batch counts: +%d tests, +%d positives, +%d adds; want 1000, 1000, 10", t2-tests, p2-positives, a2-adds)
	}
}

// Atomic counts as Instrumented does, and its Test sees keys added to the
// filter after it was wrapped, through the filter or through the wrapper.
func TestAtomicCounts(t *testing.T) {
	f := ohbloom.NewAtomic(400_000, 0.01)
	a := NewAtomic("blocks", f)
	const n = 200_000
	for i := range n {
		if i%2 == 0 {
			f.Add(fmt.Appendf(nil, "k%d", i))
		} else {
			a.Add(fmt.Appendf(nil, "k%d", i))
		}
	}
	const workers = 4
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range n {
				if !a.Test(fmt.Appendf(nil, "k%d", i)) {
					t.Errorf("k%d added but not found", i)
					return
				}
				a.TestString(fmt.Sprintf("absent-%d-%d", w, i))
			}
		})
	}
	wg.Wait()
	tests, positives, _ := a.Counts()
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"tests", float64(tests), 2 * workers * n}, {"positives", float64(positives), workers * n * 1.01}} {
		if math.Abs(c.got-c.want)/c.want > 0.15 { // sampled 1 in 256, as in TestCounts
			t.Errorf("%s = %.0f, want %.0f ± 15%%", c.name, c.got, c.want)
		}
	}
	if n := testutil.CollectAndCount(a); n != 8 {
		t.Fatalf("%d metrics, want 8", n)
	}
}

func TestCollector(t *testing.T) {
	f := ohbloom.NewAtomic(10_000, 0.01)
	m := New("blocks", f)
	m.StatsEvery = time.Hour
	for i := range 10_000 {
		m.AddString(fmt.Sprint(i))
	}
	hs := []uint64{m.Hash([]byte("1")), m.Hash([]byte("nope"))}
	m.TestBatch(hs, make([]bool, 2))

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(`
# HELP ohbloom_memory_bytes Memory the filter's bits occupy.
# TYPE ohbloom_memory_bytes gauge
ohbloom_memory_bytes{filter="blocks"} %d
# HELP ohbloom_positive_ratio Positives over tests since start: the share of lookups that reach the database.
# TYPE ohbloom_positive_ratio gauge
ohbloom_positive_ratio{filter="blocks"} 0.5
`, f.SizeBytes())), "ohbloom_memory_bytes", "ohbloom_positive_ratio"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m); n != 8 {
		t.Fatalf("%d metrics, want 8", n)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for _, fam := range families {
		values[fam.GetName()] = fam.GetMetric()[0].GetGauge().GetValue()
	}
	if c := values["ohbloom_estimated_keys"]; math.Abs(c-10_000)/10_000 > 0.03 {
		t.Errorf("estimated keys %v, want 10000 ± 3%%", c)
	}
	if fill := values["ohbloom_fill_ratio"]; fill < 0.3 || fill > 0.7 {
		t.Errorf("fill ratio %v", fill)
	}
	if fpr := values["ohbloom_estimated_false_positive_ratio"]; fpr <= 0 || fpr > 0.01 {
		t.Errorf("estimated FPR %v", fpr)
	}
	// The scan-based figures are reused within StatsEvery.
	for i := range 10_000 {
		f.AddString(fmt.Sprint("more", i))
	}
	families, _ = reg.Gather()
	for _, fam := range families {
		if fam.GetName() == "ohbloom_estimated_keys" && fam.GetMetric()[0].GetGauge().GetValue() != values["ohbloom_estimated_keys"] {
			t.Error("estimated keys recomputed before StatsEvery")
		}
	}
}

func TestReadOnlySnapshotCounts(t *testing.T) {
	f := ohbloom.New(100, 0.01)
	f.AddString("x")
	path := t.TempDir() + "/s"
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	s, err := ohbloom.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := New("snap", s)
	if !m.TestString("x") || m.TestString("y") {
		t.Fatal("wrong answers through the wrapper")
	}
	defer func() {
		if recover() == nil {
			t.Error("Add on a read-only snapshot did not panic")
		}
	}()
	m.AddString("z")
}

// BenchmarkTestOverhead measures what counting costs a Test, on one
// goroutine and on all, against the bare filter (10^6 keys, in cache: the
// case where the overhead shows most). -count runs each case back to back,
// which on a noisy machine skews the comparison; interleave whole runs:
//
//	go test -c -o m.test ./tools/metrics/
//	for i in $(seq 10); do ./m.test -test.run '^$' -test.bench TestOverhead; done > m.txt
//	benchstat -col /counting m.txt
func BenchmarkTestOverhead(b *testing.B) {
	f := ohbloom.NewAtomic(1_000_000, 0.01)
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", i)
		f.Add(keys[i])
	}
	m := New("bench", f)
	a := NewAtomic("bench", f)
	for _, c := range []struct {
		name string
		test func([]byte) bool
	}{{"off", f.Test}, {"on", m.Test}, {"atomic", a.Test}} {
		b.Run("counting="+c.name+"/goroutines=1", func(b *testing.B) {
			i := 0
			for b.Loop() {
				c.test(keys[i&(len(keys)-1)])
				i++
			}
		})
		b.Run("counting="+c.name+"/goroutines=all", func(b *testing.B) {
			var start atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(start.Add(12345))
				for pb.Next() {
					c.test(keys[i&(len(keys)-1)])
					i++
				}
			})
		})
	}
}
