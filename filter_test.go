package ohbloom

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

// tester is what the no-false-negative checks need of either filter type.
type tester interface {
	Test([]byte) bool
	TestString(string) bool
}

// requireAll fails unless f finds keys [0, n) of shape.
func requireAll(t *testing.T, what string, f tester, shape keyShape, n uint64) {
	t.Helper()
	var buf []byte
	for i := range n {
		buf = shape.key(buf, i)
		if !f.Test(buf) || !f.TestString(string(buf)) {
			t.Fatalf("%s: false negative for %s key %d (%x)", what, shape.name, i, buf)
		}
	}
}

func TestNoFalseNegatives(t *testing.T) {
	const n = 20000
	for _, shape := range keyShapes {
		t.Run(shape.name, func(t *testing.T) {
			f := New(n, 0.01)
			a := NewAtomic(n, 0.01)
			var buf []byte
			for i := range uint64(n) {
				buf = shape.key(buf, i)
				if i%2 == 0 {
					f.Add(buf)
					a.Add(buf)
				} else {
					f.AddString(string(buf))
					a.AddString(string(buf))
				}
			}
			requireAll(t, "Filter", f, shape, n)
			requireAll(t, "AtomicFilter", a, shape, n)

			data, err := f.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var u Filter
			if err := u.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			requireAll(t, "after UnmarshalBinary", &u, shape, n)

			var stream bytes.Buffer
			if _, err := a.WriteTo(&stream); err != nil {
				t.Fatal(err)
			}
			var r AtomicFilter
			if _, err := r.ReadFrom(&stream); err != nil {
				t.Fatal(err)
			}
			requireAll(t, "after ReadFrom", &r, shape, n)

			requireAll(t, "Clone", f.Clone(), shape, n)
			requireAll(t, "ToAtomic", f.ToAtomic(), shape, n)
			requireAll(t, "ToFilter", a.ToPlain(), shape, n)

			// A union of the filter with an empty one, and an empty one with
			// the filter, keeps every key.
			u1 := f.Clone()
			u1.Union(New(n, 0.01))
			requireAll(t, "Union", u1, shape, n)
			u2 := NewAtomic(n, 0.01)
			u2.Union(a)
			requireAll(t, "AtomicFilter.Union", u2, shape, n)
			i1 := f.Clone()
			if err := i1.Intersect(f); err != nil {
				t.Fatal(err)
			}
			requireAll(t, "Intersect with itself", i1, shape, n)
		})
	}
}

func TestExtremeKeys(t *testing.T) {
	huge := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	keys := [][]byte{nil, {}, {0}, {0, 0}, huge, huge[:len(huge)-1]}
	f := New(100, 0.001)
	a := NewAtomic(100, 0.001)
	for _, k := range keys {
		f.Add(k)
		a.Add(k)
	}
	for i, k := range keys {
		if !f.Test(k) || !a.Test(k) || !f.TestString(string(k)) || !a.TestString(string(k)) {
			t.Errorf("key %d (%d bytes) not found", i, len(k))
		}
	}
	// The empty key and the nil key are the same key.
	g := New(100, 0.001)
	g.Add(nil)
	if !g.Test([]byte{}) || !g.TestString("") {
		t.Error("nil key added, empty key not found")
	}
}

// TestNilFilterPanics holds the single-key calls to Go's nil receiver
// panic: they pass the core to the assembly with no nil check of their
// own (Filter.lay), so the fault has to come from inside it, for every
// length of key the assembly hashes and for the longer keys it hands on.
func TestNilFilterPanics(t *testing.T) {
	var f *Filter
	var a *AtomicFilter
	calls := map[string]func(key []byte){
		"Filter.Test":            func(key []byte) { f.Test(key) },
		"Filter.TestString":      func(key []byte) { f.TestString(string(key)) },
		"Filter.Add":             func(key []byte) { f.Add(key) },
		"Filter.AddString":       func(key []byte) { f.AddString(string(key)) },
		"AtomicFilter.Add":       func(key []byte) { a.Add(key) },
		"AtomicFilter.AddString": func(key []byte) { a.AddString(string(key)) },
	}
	for name, call := range calls {
		for _, n := range []int{0, 2, 5, 12, 32, 100, 300} {
			func() {
				defer func() {
					err, ok := recover().(runtime.Error)
					if !ok || !strings.Contains(err.Error(), "nil pointer dereference") {
						t.Errorf("%s of a %d-byte key on nil: recovered %v, want a nil pointer dereference", name, n, err)
					}
				}()
				call(make([]byte, n))
			}()
		}
	}
}

func TestTestAndAdd(t *testing.T) {
	f := New(1000, 0.001)
	a := NewAtomic(1000, 0.001)
	if f.TestAndAdd([]byte("x")) || a.TestAndAdd([]byte("x")) {
		t.Fatal("TestAndAdd reported a new key as present")
	}
	if !f.TestAndAdd([]byte("x")) || !a.TestAndAdd([]byte("x")) {
		t.Fatal("TestAndAdd reported an added key as new")
	}
	if f.TestAndAddString("y") || a.TestAndAddString("y") {
		t.Fatal("TestAndAddString reported a new key as present")
	}
	if !f.TestString("y") || !a.TestString("y") || !f.TestAndAddString("y") || !a.TestAndAddString("y") {
		t.Fatal("key added by TestAndAddString not found")
	}
	if !f.Equal(a.ToPlain()) {
		t.Fatal("Filter and AtomicFilter differ after the same TestAndAdds")
	}
}

func TestBlocksAreCacheAligned(t *testing.T) {
	for n := uint64(1); n < 300; n++ {
		b := alignedBlocks(n)
		if uint64(len(b)) != n {
			t.Fatalf("alignedBlocks(%d) has %d blocks", n, len(b))
		}
		for _, i := range []uint64{0, n - 1} {
			if addr := blockAddress(&b[i]); addr%64 != 0 {
				t.Fatalf("alignedBlocks(%d): block %d at %#x, not 64-byte aligned", n, i, addr)
			}
		}
	}
	for _, f := range []*Filter{New(1, 0.5), New(1e5, 0.01), New(1e5, 0.01).Clone(), NewAtomic(3, 0.1).ToPlain()} {
		if addr := blockAddress(&f.blocks[0]); addr%64 != 0 {
			t.Fatalf("filter blocks at %#x, not 64-byte aligned", addr)
		}
	}
	var u Filter
	data, _ := New(1000, 0.01).MarshalBinary()
	if err := u.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	var r Filter
	if _, err := r.ReadFrom(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if blockAddress(&u.blocks[0])%64 != 0 || blockAddress(&r.blocks[0])%64 != 0 {
		t.Fatal("decoded blocks not 64-byte aligned")
	}
}

func TestZeroAllocations(t *testing.T) {
	f := New(1000, 0.01)
	a := NewAtomic(1000, 0.01)
	key := []byte("some key")
	str := "some key"
	ops := map[string]func(){
		"Filter.Add":                    func() { f.Add(key) },
		"Filter.AddString":              func() { f.AddString(str) },
		"Filter.Test":                   func() { f.Test(key) },
		"Filter.TestString":             func() { f.TestString(str) },
		"Filter.TestAndAdd":             func() { f.TestAndAdd(key) },
		"Filter.TestAndAddString":       func() { f.TestAndAddString(str) },
		"AtomicFilter.Add":              func() { a.Add(key) },
		"AtomicFilter.AddString":        func() { a.AddString(str) },
		"AtomicFilter.Test":             func() { a.Test(key) },
		"AtomicFilter.TestString":       func() { a.TestString(str) },
		"AtomicFilter.TestAndAdd":       func() { a.TestAndAdd(key) },
		"AtomicFilter.TestAndAddString": func() { a.TestAndAddString(str) },
	}
	for name, op := range ops {
		if n := testing.AllocsPerRun(100, op); n != 0 {
			t.Errorf("%s allocates %v times per call", name, n)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	bad := []Config{
		{},
		{Capacity: 0, FPR: 0.01},
		{Capacity: 10, FPR: 0},
		{Capacity: 10, FPR: -0.1},
		{Capacity: 10, FPR: 1},
		{Capacity: 10, FPR: 1.5},
		{Capacity: 10, FPR: math.NaN()},
		{Capacity: 10, FPR: math.Inf(1)},
		{Capacity: 10, FPR: 0.01, Seed: 1, RandomSeed: true},
		{Blocks: 10, K: 1},
		{Blocks: 10, K: 17},
		{Blocks: 0, K: 6},
		{Blocks: 10},
	}
	for _, c := range bad {
		if _, err := NewWithConfig(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewWithConfig(%+v) = %v, want ErrInvalidConfig", c, err)
		}
		if _, err := NewAtomicWithConfig(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewAtomicWithConfig(%+v) = %v, want ErrInvalidConfig", c, err)
		}
	}
	tooLarge := []Config{
		{Capacity: math.MaxUint64, FPR: 0.01},
		{Capacity: 1 << 40, FPR: 0.01},
		{Capacity: 10, FPR: 1e-300},
		{Blocks: MaxBlocks + 1, K: 6},
	}
	for _, c := range tooLarge {
		if _, err := NewWithConfig(c); !errors.Is(err, ErrTooLarge) {
			t.Errorf("NewWithConfig(%+v) = %v, want ErrTooLarge", c, err)
		}
	}
	for _, c := range []Config{{Capacity: 10, FPR: 0.01}, {Blocks: 10, K: 7}, {Capacity: 10, FPR: 0.01, Seed: 99}} {
		if _, err := NewWithConfig(c); err != nil {
			t.Errorf("NewWithConfig(%+v) = %v", c, err)
		}
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("New(0, 0.01) did not panic")
		} else if err, ok := r.(error); !ok || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(0, 0.01) panicked with %v, want an ErrInvalidConfig", r)
		}
	}()
	New(0, 0.01)
}

func TestSeeds(t *testing.T) {
	if New(10, 0.01).Seed() != DefaultSeed {
		t.Error("New does not use DefaultSeed")
	}
	r1, _ := NewWithConfig(Config{Capacity: 10, FPR: 0.01, RandomSeed: true})
	r2, _ := NewWithConfig(Config{Capacity: 10, FPR: 0.01, RandomSeed: true})
	if r1.Seed() == r2.Seed() {
		t.Errorf("two random seeds are equal: %#x", r1.Seed())
	}
	// Different seeds put the same keys on different bits.
	s1, _ := NewWithConfig(Config{Capacity: 1000, FPR: 0.01, Seed: 1})
	s2, _ := NewWithConfig(Config{Capacity: 1000, FPR: 0.01, Seed: 2})
	for i := range 1000 {
		s1.AddString(string(rune(i)))
		s2.AddString(string(rune(i)))
	}
	if equalWords(s1.blocks, s2.blocks) {
		t.Error("seeds 1 and 2 set the same bits")
	}
	if err := s1.Union(s2); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Union across seeds = %v, want ErrIncompatible", err)
	}
}

func equalWords(a, b []block) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestUnionIntersectEqualReset(t *testing.T) {
	a, b := New(1000, 0.01), New(1000, 0.01)
	for i := range 500 {
		a.AddString("a" + string(rune(i)))
		b.AddString("b" + string(rune(i)))
		a.AddString("both" + string(rune(i)))
		b.AddString("both" + string(rune(i)))
	}
	ab := a.Clone()
	if err := ab.Union(b); err != nil {
		t.Fatal(err)
	}
	both := a.Clone()
	if err := both.Intersect(b); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		for _, k := range []string{"a", "b", "both"} {
			if !ab.TestString(k + string(rune(i))) {
				t.Fatalf("union lost %s%d", k, i)
			}
		}
		if !both.TestString("both" + string(rune(i))) {
			t.Fatalf("intersection lost both%d", i)
		}
	}
	// Bitwise: the union is the OR and the intersection the AND.
	for i := range a.blocks {
		for w := range blockWords {
			if ab.blocks[i][w] != a.blocks[i][w]|b.blocks[i][w] || both.blocks[i][w] != a.blocks[i][w]&b.blocks[i][w] {
				t.Fatalf("block %d word %d: union or intersection is not the bitwise OR/AND", i, w)
			}
		}
	}
	// The atomic versions agree with the plain ones.
	aa := a.ToAtomic()
	if err := aa.Union(b.ToAtomic()); err != nil || !aa.ToPlain().Equal(ab) {
		t.Fatalf("AtomicFilter.Union differs from Filter.Union (err %v)", err)
	}
	ai := a.ToAtomic()
	if err := ai.Intersect(b.ToAtomic()); err != nil || !ai.ToPlain().Equal(both) {
		t.Fatalf("AtomicFilter.Intersect differs from Filter.Intersect (err %v)", err)
	}
	if a.Equal(b) || !a.Equal(a.Clone()) || !aa.Equal(aa.Clone()) {
		t.Fatal("Equal is wrong")
	}
	if err := a.Union(New(100000, 0.01)); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("Union of different sizes = %v", err)
	}
	if err := a.Intersect(New(1000, 0.0001)); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("Intersect of different k = %v", err)
	}
	if err := aa.Union(NewAtomic(5, 0.01)); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("AtomicFilter.Union of different sizes = %v", err)
	}
	if err := aa.Intersect(NewAtomic(5, 0.01)); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("AtomicFilter.Intersect of different sizes = %v", err)
	}
	c := a.Clone()
	c.Reset()
	aa.Reset()
	if c.FillRatio() != 0 || aa.FillRatio() != 0 || a.FillRatio() == 0 {
		t.Fatal("Reset did not clear, or cleared the original")
	}
	if c.Blocks() != a.Blocks() || c.K() != a.K() {
		t.Fatal("Reset changed the geometry")
	}
}

func TestEstimates(t *testing.T) {
	const n = 200000
	f := New(n, 0.01)
	if f.Capacity() != n || f.TargetFPR() != 0.01 || f.Bits() != f.Blocks()*512 || f.SizeBytes() != f.Blocks()*64 {
		t.Fatalf("accessors: capacity %d target %v cap %d blocks %d", f.Capacity(), f.TargetFPR(), f.Bits(), f.Blocks())
	}
	if f.EstimatedCount() != 0 || f.FillRatio() != 0 || f.EstimatedFPR() != 0 {
		t.Fatal("an empty filter estimates non-zero")
	}
	var buf []byte
	for i := range uint64(n) {
		buf = keyShapes[0].key(buf, i)
		f.Add(buf)
		if i%3 == 0 {
			f.Add(buf) // re-adding must not count
		}
	}
	// The count estimate has a relative error of about 1/sqrt(bits); 1%
	// is several standard deviations at this size.
	if got := float64(f.EstimatedCount()); math.Abs(got-n)/n > 0.01 {
		t.Errorf("EstimatedCount = %.0f, want %d ± 1%%", got, n)
	}
	// Each key sets k bits, some of them already set: the fill is a bit
	// below k·n/cap, and about half at the optimum.
	if fill := f.FillRatio(); fill > float64(f.K()*n)/float64(f.Bits()) || fill < 0.35 || fill > 0.65 {
		t.Errorf("FillRatio = %v", fill)
	}
	// The estimate from the bits agrees with the model the filter was sized
	// by, within the spread of one filter.
	est, model := f.EstimatedFPR(), ExpectedFPR(n, f.Blocks(), f.K())
	if math.Abs(est-model)/model > 0.05 || est > 0.01 {
		t.Errorf("EstimatedFPR = %v, model %v, target 0.01", est, model)
	}
	full, _ := NewWithConfig(Config{Blocks: 1, K: 2})
	for i := range 100000 {
		full.AddString(string(rune(i)))
	}
	if full.FillRatio() != 1 || full.EstimatedCount() != math.MaxUint64 || full.EstimatedFPR() != 1 {
		t.Errorf("saturated filter: fill %v count %d fpr %v", full.FillRatio(), full.EstimatedCount(), full.EstimatedFPR())
	}
}
