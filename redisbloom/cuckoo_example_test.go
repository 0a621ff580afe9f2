package redisbloom_test

import (
	"errors"
	"fmt"

	"github.com/ohbloom/ohbloom/redisbloom"
)

func ExampleNewCuckoo() {
	// CF.RESERVE k 1000 with RedisBloom's defaults.
	f, err := redisbloom.NewCuckoo(redisbloom.DefaultCuckooConfig(1000))
	if err != nil {
		panic(err)
	}
	f.Add([]byte("apple"))
	f.Add([]byte("apple"))
	added, _ := f.AddUnique([]byte("apple")) // CF.ADDNX
	fmt.Println(added, f.Test([]byte("apple")), f.Count([]byte("apple")))
	f.Delete([]byte("apple"))
	fmt.Println(f.Count([]byte("apple")))
	in := f.Info()
	fmt.Println(in.Size, in.Buckets, in.Items, in.Deleted)
	// Output:
	// false true 2
	// 1
	// 1080 512 1 1
}

func ExampleCuckooConfig_expansion() {
	// CF.RESERVE k 4 BUCKETSIZE 1 EXPANSION 0: four slots, no growth.
	f, _ := redisbloom.NewCuckoo(redisbloom.CuckooConfig{Capacity: 4, BucketSize: 1, MaxIterations: 20, Expansion: 0})
	for i := range 6 {
		if err := f.Add([]byte{byte(i)}); errors.Is(err, redisbloom.ErrCuckooFull) {
			fmt.Println("item", i, "refused: Filter is full")
		}
	}
	// Output:
	// item 4 refused: Filter is full
	// item 5 refused: Filter is full
}

func ExampleCuckooFilter_ScanDump() {
	f, _ := redisbloom.NewCuckoo(redisbloom.DefaultCuckooConfig(1000))
	for i := range 100 {
		f.Add(fmt.Appendf(nil, "item %d", i))
	}
	// CF.SCANDUMP until iterator 0, each chunk given to CF.LOADCHUNK.
	var g *redisbloom.CuckooFilter
	for it := int64(0); ; {
		next, chunk := f.ScanDump(it, nil)
		if next == 0 {
			break
		}
		var err error
		if it == 0 {
			g, err = redisbloom.NewCuckooFromHeader(chunk, 1<<30)
		} else {
			err = g.LoadChunk(next, chunk)
		}
		if err != nil {
			panic(err)
		}
		fmt.Println("iterator", next, "bytes", len(chunk))
		it = next
	}
	fmt.Println(g.Equal(f), g.Test([]byte("item 7")))
	// Output:
	// iterator 1 bytes 38
	// iterator 1025 bytes 1024
	// true true
}

func ExampleCuckooFilter_MarshalRDB() {
	f, _ := redisbloom.NewCuckoo(redisbloom.DefaultCuckooConfig(64))
	f.Add([]byte("x"))
	v := f.MarshalRDB() // the MBbloomCF value of a DUMP payload or an RDB file
	var g redisbloom.CuckooFilter
	n, err := g.UnmarshalRDB(v, redisbloom.CuckooRDBEncVer, 1<<20)
	fmt.Println(n == len(v), err, g.Test([]byte("x")))
	// Output:
	// true <nil> true
}

func ExampleNewAtomicCuckoo() {
	f, _ := redisbloom.NewAtomicCuckoo(redisbloom.DefaultCuckooConfig(1 << 16))
	done := make(chan bool)
	for w := range 4 {
		go func() {
			for i := range 1000 {
				f.Add(fmt.Appendf(nil, "%d:%d", w, i))
			}
			done <- true
		}()
	}
	for range 4 {
		<-done
	}
	fmt.Println(f.Info().Items, f.Test([]byte("3:999")))
	// Output:
	// 4000 true
}
