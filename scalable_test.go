package ohbloom

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// TestScalableKeepsItsRate grows a filter to 10, 100 and 1000 times its
// initial capacity and measures, at each, the false positive rate on absent
// keys (it must stay at or below p), the stages, and the memory against a
// filter sized right from the start.
func TestScalableKeepsItsRate(t *testing.T) {
	const initial, p = 1000, 0.01
	growths := []uint64{10, 100, 1000}
	queries := uint64(1_000_000)
	if testing.Short() {
		growths, queries = []uint64{10, 100}, 200_000
	}
	s := NewScalable(initial, p)
	a := NewAtomicScalable(initial, p)
	var buf []byte
	added := uint64(0)
	shape := keyShapes[0]
	for _, g := range growths {
		for ; added < g*initial; added++ {
			buf = shape.key(buf, added)
			s.Add(buf)
			a.Add(buf)
		}
		for i := range added {
			buf = shape.key(buf, i)
			if !s.Test(buf) || !a.Test(buf) {
				t.Fatalf("at %dx: key %d not found", g, i)
			}
		}
		fp := 0
		for i := range queries {
			buf = shape.key(buf, 1<<40+i)
			if s.Test(buf) {
				fp++
			}
		}
		rate := float64(fp) / float64(queries)
		right := New(added, p)
		t.Logf("%5dx: %2d stages, FPR %.4f (p=%g), %.2f bits/key, %.2fx a right-sized filter",
			g, s.Stages(), rate, p, float64(s.SizeBytes()*8)/float64(added), float64(s.SizeBytes())/float64(right.SizeBytes()))
		if rate > p {
			t.Errorf("at %dx the initial capacity: FPR %.4f > %g", g, rate, p)
		}
		if s.Stages() != a.Stages() {
			t.Errorf("the atomic filter has %d stages, the plain one %d", a.Stages(), s.Stages())
		}
		for i := range s.Stages() {
			if !s.Stage(i).Equal((*a.stages.Load())[i].f.ToFilter()) {
				t.Errorf("stage %d differs between the plain and the atomic filter", i)
			}
		}
	}
	if s.Err() != nil || a.Err() != nil {
		t.Fatal(s.Err(), a.Err())
	}
}

// TestScalableDoesNotCountPresentKeys: re-adding keys must not make the
// filter grow.
func TestScalableDoesNotCountPresentKeys(t *testing.T) {
	s := NewScalable(100, 0.01)
	for range 50 {
		for i := range 90 {
			s.AddString(fmt.Sprint(i))
		}
	}
	if s.Stages() != 1 {
		t.Fatalf("%d stages after re-adding 90 keys", s.Stages())
	}
}

func TestScalableConcurrent(t *testing.T) {
	a := NewAtomicScalable(500, 0.01)
	const writers, per = 4, 5000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range per {
				k := fmt.Sprintf("%d/%d", w, i)
				a.AddString(k)
				if !a.TestString(k) {
					t.Errorf("key %s not found after Add", k)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 20000 {
			a.TestString("reader")
		}
	})
	wg.Wait()
	for w := range writers {
		for i := range per {
			if !a.TestString(fmt.Sprintf("%d/%d", w, i)) {
				t.Fatalf("key %d/%d lost", w, i)
			}
		}
	}
	if a.Stages() < 5 {
		t.Fatalf("%d stages for 40x the initial capacity", a.Stages())
	}
	if n := a.EstimatedCount(); n < writers*per*95/100 || n > writers*per*105/100 {
		t.Errorf("estimated %d keys, added %d", n, writers*per)
	}
}

func TestScalableConfig(t *testing.T) {
	if _, err := NewScalableWithConfig(Config{Blocks: 10, K: 6}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("explicit geometry: %v", err)
	}
	if _, err := NewAtomicScalableWithConfig(Config{Capacity: 0, FPR: 0.01}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("zero capacity: %v", err)
	}
	r1, _ := NewScalableWithConfig(Config{Capacity: 10, FPR: 0.01, RandomSeed: true})
	for i := range 100 {
		r1.AddString(fmt.Sprint(i))
	}
	if r1.Stages() < 2 || r1.Stage(0).Seed() != r1.Stage(1).Seed() {
		t.Fatal("stages of a random-seeded filter must share its seed")
	}
	if !r1.TestString("99") || r1.Hash([]byte("x")) != r1.Stage(1).Hash([]byte("x")) {
		t.Fatal("stages disagree on hashes")
	}
}

func TestScalableEncoding(t *testing.T) {
	s := NewScalable(100, 0.01)
	a := NewAtomicScalable(100, 0.01)
	for i := range 1000 {
		s.AddString(fmt.Sprint(i))
		a.AddString(fmt.Sprint(i))
	}
	var b1, b2 bytes.Buffer
	if _, err := s.WriteTo(&b1); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteTo(&b2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
		t.Fatal("the plain and the atomic scalable filter encode differently")
	}
	data := b1.Bytes()
	var r ScalableFilter
	if n, err := r.ReadFrom(bytes.NewReader(data)); err != nil || n != int64(len(data)) {
		t.Fatalf("ReadFrom: %v (%d of %d bytes)", err, n, len(data))
	}
	var ra AtomicScalableFilter
	if _, err := ra.ReadFrom(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if r.Stages() != s.Stages() || ra.Stages() != s.Stages() {
		t.Fatalf("%d and %d stages read, %d written", r.Stages(), ra.Stages(), s.Stages())
	}
	for i := range 1000 {
		if !r.TestString(fmt.Sprint(i)) || !ra.TestString(fmt.Sprint(i)) {
			t.Fatalf("key %d lost", i)
		}
	}
	// It keeps growing after a reload, and writes back the same bytes.
	var again bytes.Buffer
	r.WriteTo(&again)
	if !bytes.Equal(again.Bytes(), data) {
		t.Fatal("a decoded scalable filter re-encodes differently")
	}
	for i := 1000; i < 3000; i++ {
		r.AddString(fmt.Sprint(i))
	}
	if r.Stages() <= s.Stages() {
		t.Fatal("the reloaded filter does not grow")
	}

	plain, _ := New(100, 0.01).MarshalBinary()
	flipped := bytes.Clone(data)
	flipped[len(flipped)/2] ^= 1
	for name, c := range map[string]struct {
		data []byte
		want error
	}{
		"a Filter":   {plain, ErrUnknownKind},
		"truncated":  {data[:len(data)-5], ErrTruncated},
		"bit flip":   {flipped, ErrChecksum},
		"empty":      {nil, ErrTruncated},
		"no trailer": {data[:len(data)-8], ErrTruncated},
	} {
		keep := NewScalable(10, 0.1)
		if _, err := keep.ReadFrom(bytes.NewReader(c.data)); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
		if keep.Stages() != 1 || keep.config.Capacity != 10 {
			t.Errorf("%s: a failed ReadFrom changed the filter", name)
		}
	}
}

func FuzzReadScalable(f *testing.F) {
	s := NewScalable(20, 0.05)
	for i := range 100 {
		s.AddString(fmt.Sprint(i))
	}
	var b bytes.Buffer
	s.WriteTo(&b)
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:200])
	f.Fuzz(func(t *testing.T, data []byte) {
		var r ScalableFilter
		n, err := r.ReadFrom(bytes.NewReader(data))
		if err != nil {
			checkDecodeError(t, err, nil)
			return
		}
		var again bytes.Buffer
		r.WriteTo(&again)
		if !bytes.Equal(again.Bytes(), data[:n]) {
			t.Fatal("a decoded scalable filter re-encodes differently")
		}
	})
}
