package ohbloom_test

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/ohbloom/ohbloom"
)

func ExampleNew() {
	// A filter for a million keys that answers at most 1% false positives.
	f := ohbloom.New(1_000_000, 0.01)
	f.AddString("did:plc:alice|did:plc:bob")

	fmt.Println(f.TestString("did:plc:alice|did:plc:bob"))
	fmt.Println(f.TestString("did:plc:alice|did:plc:carol"))
	fmt.Printf("k=%d, %.1f bits per key\n", f.K(), float64(f.Bits())/1_000_000)
	// Output:
	// true
	// false
	// k=6, 10.0 bits per key
}

func ExampleNewAtomic() {
	// Many goroutines add to one filter, without locks.
	f := ohbloom.NewAtomic(10_000, 0.01)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				f.AddString(fmt.Sprintf("user-%d-%d", w, i))
			}
		})
	}
	wg.Wait()
	fmt.Println(f.TestString("user-3-999"))
	fmt.Println(f.EstimatedCount() > 3900 && f.EstimatedCount() < 4100)
	// Output:
	// true
	// true
}

func ExampleFilter_TestAndAdd() {
	// Deduplicate a stream: TestAndAdd says whether a key was (probably)
	// seen before, and adds it.
	seen := ohbloom.New(1000, 0.001)
	for _, event := range []string{"a", "b", "a", "c", "b"} {
		if seen.TestAndAdd([]byte(event)) {
			fmt.Println("duplicate:", event)
		}
	}
	// Output:
	// duplicate: a
	// duplicate: b
}

func ExampleNewWithConfig() {
	// Keys chosen by untrusted users: a secret seed, so that nobody can
	// craft keys that all land in one block.
	f, err := ohbloom.NewWithConfig(ohbloom.Config{Capacity: 1e6, FPR: 0.001, RandomSeed: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(f.K())

	_, err = ohbloom.NewWithConfig(ohbloom.Config{Capacity: 1e6, FPR: 1.5})
	fmt.Println(err)
	// Output:
	// 9
	// ohbloom: invalid config: FPR = 1.5, want 0 < FPR < 1
}

func ExampleFilter_WriteTo() {
	f := ohbloom.New(1000, 0.01)
	f.AddString("saved")

	var file bytes.Buffer // an *os.File in practice
	if _, err := f.WriteTo(&file); err != nil {
		panic(err)
	}

	var g ohbloom.Filter
	if _, err := g.ReadFrom(&file); err != nil {
		panic(err)
	}
	fmt.Println(g.TestString("saved"), g.Equal(f))
	// Output: true true
}

func ExampleFilter_ToAtomic() {
	// Bulk-build on one goroutine, then publish for concurrent use.
	f := ohbloom.New(1000, 0.01)
	for i := range 1000 {
		f.AddString(fmt.Sprint(i))
	}
	shared := f.ToAtomic()
	fmt.Println(shared.TestString("999"))
	// Output: true
}

func ExampleFilter_Union() {
	// Filters built apart, with the same size and seed, merge.
	a, b := ohbloom.New(1000, 0.01), ohbloom.New(1000, 0.01)
	a.AddString("from a")
	b.AddString("from b")
	if err := a.Union(b); err != nil {
		panic(err)
	}
	fmt.Println(a.TestString("from a"), a.TestString("from b"))
	// Output: true true
}

func ExampleNewCounting() {
	// Blocks can be lifted: a counting filter lets keys go.
	blocks := ohbloom.NewCounting(10_000, 0.01)
	blocks.AddString("did:plc:alice|did:plc:bob")
	fmt.Println(blocks.TestString("did:plc:alice|did:plc:bob"))

	if err := blocks.RemoveString("did:plc:alice|did:plc:bob"); err != nil {
		panic(err)
	}
	fmt.Println(blocks.TestString("did:plc:alice|did:plc:bob"))
	fmt.Println(blocks.RemoveString("did:plc:alice|did:plc:bob"))
	// Output:
	// true
	// false
	// ohbloom: key not in the filter
}

func ExampleNewScalable() {
	// Room for 1,000 keys to start with; it grows, and stays under 1%.
	f := ohbloom.NewScalable(1000, 0.01)
	for i := range 100_000 {
		f.AddString(fmt.Sprint("user-", i))
	}
	fmt.Println(f.Stages(), f.TestString("user-99999"))
	// Output: 7 true
}

// A Layout places keys without holding the bits, so the bits can live
// elsewhere: here a map of encoded blocks stands in for a remote store, and
// only the one block a key needs is read.
func ExampleLayout_BlockMask() {
	f := ohbloom.New(1000, 0.01)
	f.AddString("alice")
	layout := f.Layout()

	remote := map[uint64][]byte{} // block index → encoded block
	for i := range layout.Blocks() {
		remote[i] = f.AppendBlocks(nil, i, 1)
	}

	for _, key := range []string{"alice", "mallory"} {
		index, mask := layout.BlockMask(ohbloom.HashString(layout.Seed(), key))
		fmt.Println(key, ohbloom.ContainsMask(remote[index], &mask))
	}
	// Output:
	// alice true
	// mallory false
}
