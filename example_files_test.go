package ohbloom_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ohbloom/ohbloom"
)

func ExampleFilter_Save() {
	dir, err := os.MkdirTemp("", "ohbloom-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "users.ohb")

	f := ohbloom.New(1_000_000, 0.01)
	f.AddString("alice")
	// Crash-safe: a temporary file beside path, synced, renamed over it.
	if err := f.Save(path); err != nil {
		panic(err)
	}

	// Read it back whole, to add more keys.
	g, err := ohbloom.Load(path)
	if err != nil {
		panic(err)
	}
	fmt.Println(g.TestString("alice"), g.Equal(f))
	// Output: true true
}

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "ohbloom-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "users.ohb")
	f := ohbloom.New(1_000_000, 0.01)
	f.AddString("alice")
	if err := f.Save(path); err != nil {
		panic(err)
	}

	// Serve it from the file itself: mapped, checked once, no copy.
	s, err := ohbloom.Open(path)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	fmt.Println(s.TestString("alice"), s.TestString("mallory"))

	// A file of another kind of filter says what reads it.
	counting := filepath.Join(dir, "blocks.ohb")
	if err := ohbloom.NewCounting(1000, 0.01).Save(counting); err != nil {
		panic(err)
	}
	_, err = ohbloom.Open(counting)
	fmt.Println(errors.Is(err, ohbloom.ErrUnknownKind))
	fmt.Println(strings.ReplaceAll(err.Error(), dir, "DIR"))
	// Output:
	// true false
	// true
	// ohbloom: open DIR/blocks.ohb: the file holds a counting filter, not a blocked Bloom filter: read it with LoadCounting or LoadAtomicCounting
}

func ExampleInspect() {
	dir, err := os.MkdirTemp("", "ohbloom-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sessions.ohb")
	s := ohbloom.NewScalable(1000, 0.01)
	for i := range 10_000 {
		s.AddString(fmt.Sprint("session-", i))
	}
	if err := s.Save(path); err != nil {
		panic(err)
	}

	// What the file holds, without loading it.
	info, err := ohbloom.Inspect(path)
	if err != nil {
		panic(err)
	}
	// Count is the keys added as new: the other 50 of the 10,000 tested
	// positive when they came, false positives at most 1% of the time.
	fmt.Printf("%v, format %d, %d stages, %d keys\n", info.Kind, info.Version, info.Stages, info.Count)
	if info.Kind == ohbloom.KindScalable {
		s, err := ohbloom.LoadScalable(path)
		if err != nil {
			panic(err)
		}
		fmt.Println(s.TestString("session-9999"))
	}
	// Output:
	// ScalableFilter, format 2, 4 stages, 9950 keys
	// true
}

func ExampleLoadCounting() {
	dir, err := os.MkdirTemp("", "ohbloom-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "blocks.ohb")

	blocks := ohbloom.NewCounting(10_000, 0.01)
	blocks.AddString("alice|bob")
	blocks.AddString("alice|carol")
	if err := blocks.Save(path); err != nil {
		panic(err)
	}

	// After a restart: the counters come back, and keys can still go.
	again, err := ohbloom.LoadCounting(path)
	if err != nil {
		panic(err)
	}
	if err := again.RemoveString("alice|bob"); err != nil {
		panic(err)
	}
	fmt.Println(again.TestString("alice|bob"), again.TestString("alice|carol"))
	// Output: false true
}

func ExampleLoadAtomicScalable() {
	dir, err := os.MkdirTemp("", "ohbloom-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "seen.ohb")

	seen := ohbloom.NewAtomicScalable(100, 0.01)
	for i := range 1000 {
		seen.AddString(fmt.Sprint("url-", i))
	}
	if err := seen.Save(path); err != nil {
		panic(err)
	}

	// It grows on from where it was, as the saved filter would have.
	again, err := ohbloom.LoadAtomicScalable(path)
	if err != nil {
		panic(err)
	}
	fmt.Println(again.Stages(), again.Count() == seen.Count())
	for i := 1000; i < 5000; i++ {
		again.AddString(fmt.Sprint("url-", i))
	}
	fmt.Println(again.Stages(), again.TestString("url-0"))
	// Output:
	// 4 true
	// 6 true
}

func ExampleFilter_TestBatch() {
	f := ohbloom.New(1_000_000, 0.01)
	f.AddBatch([][]byte{[]byte("alice"), []byte("bob")})

	// Many keys a call: past the caches several times faster than a loop
	// of Test, as the cache misses of many keys overlap.
	keys := [][]byte{[]byte("alice"), []byte("mallory"), []byte("bob")}
	results := make([]bool, len(keys))
	f.TestBatch(keys, results)
	fmt.Println(results)
	// Output: [true false true]
}

func ExampleCountingFilter_TestBatch() {
	f := ohbloom.NewCounting(10_000, 0.01)
	for _, k := range []string{"a", "b", "c"} {
		f.AddString(k)
	}
	if err := f.RemoveString("b"); err != nil {
		panic(err)
	}
	results := make([]bool, 3)
	f.TestBatchStrings([]string{"a", "b", "c"}, results)
	fmt.Println(results)
	// Output: [true false true]
}

func ExampleAtomicFilter_AddParallel() {
	keys := make([][]byte, 100_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user-%d", i)
	}
	// A bulk load on every core; other goroutines may Add and Test
	// meanwhile.
	f := ohbloom.NewAtomic(uint64(len(keys)), 0.01)
	f.AddParallel(keys)

	results := make([]bool, len(keys))
	f.TestBatch(keys, results)
	all := true
	for _, ok := range results {
		all = all && ok
	}
	fmt.Println(all)
	// Output: true
}

func ExampleAtomicFilter_AddSeq() {
	// Keys that stream in: lines of a file, rows of a cursor. AddSeq
	// hashes each key as it is yielded, so the scanner may reuse its
	// buffer for the next line.
	lines := strings.NewReader("alice\nbob\ncarol\n")
	keys := func(yield func([]byte) bool) {
		sc := bufio.NewScanner(lines)
		for sc.Scan() {
			if !yield(sc.Bytes()) {
				return
			}
		}
	}
	f := ohbloom.NewAtomic(1000, 0.01)
	n := f.AddSeq(keys)
	fmt.Println(n, f.TestString("bob"), f.TestString("mallory"))
	// Output: 3 true false
}
