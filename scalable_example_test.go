package ohbloom_test

import (
	"errors"
	"fmt"

	"github.com/ohbloom/ohbloom"
)

func ExampleNewScalableWithConfig() {
	// Room for 1,000 keys at 1%; each new stage holds 4 times the keys of
	// the one before, and the filter never takes more than 64 KiB.
	c := ohbloom.Config{Capacity: 1000, FPR: 0.01, Growth: 4, MaxBytes: 64 << 10}
	first, _ := ohbloom.ScalableSizeBytes(c) // what the reservation takes
	f, err := ohbloom.NewScalableWithConfig(c)
	if err != nil {
		panic(err)
	}
	fmt.Println(first, f.SizeBytes())
	for i := 0; ; i++ {
		if _, err := f.TryAddString(fmt.Sprint("user-", i)); errors.Is(err, ohbloom.ErrFull) {
			// The next stage would take it past 64 KiB: the key was not
			// added, and the filter still answers for the others.
			fmt.Println(f.Stages(), f.Count(), f.Capacity(), f.SizeBytes())
			break
		}
	}
	fmt.Println(f.TestString("user-0"))
	// Output:
	// 1472 1472
	// 3 21000 21000 40064
	// true
}

func ExampleScalableFilter_TestOrAdd() {
	// Deduplicate a stream of unknown length: TestOrAdd says whether a key
	// was (probably) seen, and adds it only if not, so repeats take no room
	// and the filter grows only for new keys.
	seen := ohbloom.NewScalable(2, 0.001)
	for _, event := range []string{"a", "b", "a", "c", "b", "d", "a"} {
		if seen.TestOrAddString(event) {
			fmt.Println("duplicate:", event)
		}
	}
	fmt.Println(seen.Count(), "distinct keys in", seen.Stages(), "stages")
	// Output:
	// duplicate: a
	// duplicate: b
	// duplicate: a
	// 4 distinct keys in 2 stages
}
