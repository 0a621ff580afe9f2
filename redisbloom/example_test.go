package redisbloom_test

import (
	"errors"
	"fmt"

	"github.com/ohbloom/ohbloom/redisbloom"
)

func ExampleNew() {
	// BF.RESERVE k 0.01 1000, then BF.ADD and BF.EXISTS.
	f, err := redisbloom.New(redisbloom.Config{Capacity: 1000, ErrorRate: 0.01, Expansion: 2})
	if err != nil {
		panic(err)
	}
	added, _ := f.AddString("did:plc:alice")
	again, _ := f.AddString("did:plc:alice")
	fmt.Println(added, again, f.TestString("did:plc:alice"), f.TestString("did:plc:bob"))
	for i := range 1500 {
		f.AddString(fmt.Sprint("user-", i))
	}
	in := f.Info()
	fmt.Printf("Capacity %d, Size %d, Number of filters %d, Number of items inserted %d, Expansion rate %d\n",
		in.Capacity, in.Size, in.Filters, in.Items, in.Expansion)
	// Output:
	// true false true false
	// Capacity 3000, Size 4664, Number of filters 2, Number of items inserted 1501, Expansion rate 2
}

func ExampleNewAtomicFromHeader() {
	// A filter dumped from RedisBloom with BF.SCANDUMP (here made locally)
	// is loaded chunk by chunk, as BF.LOADCHUNK does, into a chain that
	// many goroutines may use at once, and dumped back.
	source, _ := redisbloom.New(redisbloom.Config{Capacity: 100, ErrorRate: 0.01, Expansion: 2})
	for i := range 250 {
		source.AddString(fmt.Sprint("item-", i))
	}
	iter, header := source.ScanDump(0, nil)
	f, err := redisbloom.NewAtomicFromHeader(header, 0)
	if err != nil {
		panic(err)
	}
	for {
		next, chunk := source.ScanDump(iter, nil)
		if next == 0 {
			break
		}
		if err := f.LoadChunk(next, chunk); err != nil {
			panic(err)
		}
		fmt.Printf("chunk at iterator %d: %d bytes\n", next, len(chunk))
		iter = next
	}
	// 249 items: one of the 250 tested present when it was added (a false
	// positive), so RedisBloom did not count it, and neither does the copy.
	fmt.Println(f.TestString("item-7"), f.Info().Items)
	if err := f.LoadChunk(99999, []byte{1}); errors.Is(err, redisbloom.ErrNoLink) {
		fmt.Println("ERR invalid offset - no link found")
	}
	// Output:
	// chunk at iterator 145: 144 bytes
	// chunk at iterator 457: 312 bytes
	// true 249
	// ERR invalid offset - no link found
}
