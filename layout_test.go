package ohbloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// The layout alone must place every key exactly where the filter does:
// BlockMask's block index and bits are the filter's own (locate), and the
// block AppendBlocks returns holds them.
func TestLayoutBlockMaskMatchesFilter(t *testing.T) {
	for _, k := range []int{2, 5, 7, 11, 16} {
		f, err := NewWithConfig(Config{Blocks: 977, K: k, Seed: 42})
		if err != nil {
			t.Fatal(err)
		}
		g := f.Layout()
		if g.Blocks() != 977 || g.K() != k || g.Seed() != 42 {
			t.Fatalf("layout %d blocks k=%d seed=%d", g.Blocks(), g.K(), g.Seed())
		}
		for i := range 3000 {
			key := fmt.Appendf(nil, "key-%d", i)
			f.Add(key)
			h := Hash(g.Seed(), key)
			index, mask := g.BlockMask(h)
			wantIndex, wantMask := f.locate(h)
			if index != wantIndex {
				t.Fatalf("k=%d key %s: block %d, filter uses %d", k, key, index, wantIndex)
			}
			for w := range blockWords {
				if got := binary.LittleEndian.Uint64(mask[w*8:]); got != wantMask[w] {
					t.Fatalf("k=%d key %s: word %d of mask %#x, filter sets %#x", k, key, w, got, wantMask[w])
				}
			}
			if !ContainsMask(f.AppendBlocks(nil, index, 1), &mask) {
				t.Fatalf("k=%d: block of added key %s lacks its mask", k, key)
			}
		}
	}
}

func TestContainsMaskShortBlock(t *testing.T) {
	var mask [BlockBytes]byte
	mask[3] = 0x10
	if !ContainsMask([]byte{0, 0, 0, 0x11}, &mask) {
		t.Error("block holding the bit reported absent")
	}
	if ContainsMask([]byte{0, 0, 0}, &mask) {
		t.Error("a block ending before the bit reported present")
	}
	var empty [BlockBytes]byte
	if !ContainsMask(nil, &empty) {
		t.Error("an empty mask is in every block")
	}
}

func TestNewLayoutSizesLikeNew(t *testing.T) {
	c := Config{Capacity: 100_000, FPR: 0.001, Seed: 7}
	g, err := NewLayout(c)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := NewWithConfig(c)
	if !g.Equal(f.Layout()) || g.Capacity() != c.Capacity || g.TargetFPR() != c.FPR {
		t.Fatalf("NewLayout %d blocks k=%d, NewWithConfig %d blocks k=%d", g.Blocks(), g.K(), f.Blocks(), f.K())
	}
	if _, err := NewLayout(Config{Capacity: 10, FPR: 1.5}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("FPR 1.5: %v", err)
	}
}

// Blocks copied out with AppendBlocks and ORed into an empty filter of the
// same layout rebuild it exactly, in pieces of any size, for both types.
func TestAppendOrBlocksRoundTrip(t *testing.T) {
	f := New(20_000, 0.01)
	for i := range 20_000 {
		f.AddString(fmt.Sprint(i))
	}
	plain, err := NewWithConfig(f.Layout().Config())
	if err != nil {
		t.Fatal(err)
	}
	atomicCopy, err := NewAtomicWithConfig(f.Layout().Config())
	if err != nil {
		t.Fatal(err)
	}
	for first := uint64(0); first < f.Blocks(); first += 37 {
		n := min(37, f.Blocks()-first)
		data := f.AppendBlocks([]byte("prefix"), first, n)[len("prefix"):]
		if err := plain.OrBlocks(first, data); err != nil {
			t.Fatal(err)
		}
		if err := atomicCopy.OrBlocks(first, atomicCopy.AppendBlocks(nil, first, 0)); err != nil {
			t.Fatal(err)
		}
		if err := atomicCopy.OrBlocks(first, data); err != nil {
			t.Fatal(err)
		}
	}
	if !plain.Equal(f) || !atomicCopy.ToPlain().Equal(f) {
		t.Fatal("filter rebuilt from its blocks differs")
	}
}

func TestOrBlocksRefusesBadRanges(t *testing.T) {
	f, _ := NewWithConfig(Config{Blocks: 10, K: 7})
	before := f.Clone()
	ones := make([]byte, 3*BlockBytes)
	for i := range ones {
		ones[i] = 0xFF
	}
	for _, tc := range []struct {
		first uint64
		data  []byte
	}{
		{0, ones[:BlockBytes+1]},
		{8, ones},
		{11, ones[:BlockBytes]},
		{1 << 63, ones[:BlockBytes]},
	} {
		if err := f.OrBlocks(tc.first, tc.data); !errors.Is(err, ErrBlockRange) {
			t.Errorf("%d bytes at block %d: %v, want ErrBlockRange", len(tc.data), tc.first, err)
		}
	}
	if !f.Equal(before) {
		t.Fatal("a refused OrBlocks changed the filter")
	}
}

func TestScalableTestOrAdd(t *testing.T) {
	s := NewScalable(100, 0.01)
	for i := range 1000 {
		if s.TestOrAddString(fmt.Sprint(i)) && i < 50 {
			// a false positive among the first 50 keys of a filter at 1%
			// would be a 1-in-2 event at worst; each is new here
			t.Fatalf("key %d reported present before it was added", i)
		}
		if !s.TestOrAdd(fmt.Append(nil, i)) {
			t.Fatalf("key %d reported new after it was added", i)
		}
	}
	if s.Stages() < 4 {
		t.Fatalf("1000 keys in a filter for 100: %d stages, want growth", s.Stages())
	}
}

// When goroutines add the same keys at once, each key is reported new by at
// least one of them, and the stages grow as for the keys added one by one.
func TestAtomicScalableTestOrAddConcurrent(t *testing.T) {
	const keys, workers = 4000, 4
	s := NewAtomicScalable(500, 0.01)
	newCounts := make([][]bool, workers)
	var wg sync.WaitGroup
	for w := range workers {
		newCounts[w] = make([]bool, keys)
		wg.Go(func() {
			for i := range keys {
				newCounts[w][i] = !s.TestOrAddString(fmt.Sprint(i))
			}
		})
	}
	wg.Wait()
	reported := 0
	for i := range keys {
		for w := range workers {
			if newCounts[w][i] {
				reported++
				break
			}
		}
		if !s.TestString(fmt.Sprint(i)) {
			t.Fatalf("key %d lost", i)
		}
	}
	// Keys that were false positives when first added are reported new by
	// nobody; at p = 1% that is a few dozen of 4000 at most.
	if reported < keys*97/100 {
		t.Fatalf("%d of %d keys reported new by some goroutine", reported, keys)
	}
	seq := NewAtomicScalable(500, 0.01)
	for i := range keys {
		seq.AddString(fmt.Sprint(i))
	}
	if s.Stages() != seq.Stages() {
		t.Fatalf("%d stages concurrently, %d one by one", s.Stages(), seq.Stages())
	}
}

func TestHashTestIsHashAndTest(t *testing.T) {
	f := NewAtomic(1000, 0.01)
	for i := range 2000 {
		key := fmt.Sprint(i)
		if i%2 == 0 {
			f.AddString(key)
		}
		h, ok := f.HashTest([]byte(key))
		hs, oks := f.HashTestString(key)
		if h != Hash(f.Seed(), []byte(key)) || hs != h || ok != f.TestString(key) || oks != ok {
			t.Fatalf("key %s: HashTest (%#x, %v), HashTestString (%#x, %v), Hash %#x, Test %v",
				key, h, ok, hs, oks, Hash(f.Seed(), []byte(key)), f.TestString(key))
		}
	}
}
