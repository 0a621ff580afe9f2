package rdb_test

import (
	"fmt"
	"io"
	"log"
	"os"

	"github.com/ohbloom/ohbloom/tools/rdb"
)

// Reading the RedisBloom filters of an RDB file, as import-rdb does: every
// key comes with its database and expiry; the values of other types
// stream past and are counted.
func ExampleReader() {
	f, err := os.Open("testdata/dump.rdb")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	r, err := rdb.NewReader(f, nil) // nil: keep RedisBloom's values only
	if err != nil {
		log.Fatal(err)
	}
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err) // an *rdb.Error, with the byte offset
		}
		if e.Value == nil {
			continue // skipped
		}
		ttl := ""
		if e.ExpireAt != rdb.NoExpiry {
			ttl = " (expires)"
		}
		switch e.Kind() {
		case rdb.BloomTypeName:
			b, err := rdb.DecodeBloom(e.Value)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("db %d %s: Bloom chain of %d filters, %d items%s\n", e.DB, e.Key, len(b.Links), b.Size, ttl)
		case rdb.CuckooTypeName:
			cf, err := rdb.DecodeCuckoo(e.Value)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("db %d %s: cuckoo filter of %d filters, %d items%s\n", e.DB, e.Key, len(cf.Filters), cf.NumItems, ttl)
		}
	}
	fmt.Println("skipped:", r.Stats().Skipped)
	// Output:
	// db 0 bf:nonscaling: Bloom chain of 1 filters, 2894 items (expires)
	// db 0 bf:plain: Bloom chain of 1 filters, 7999 items
	// db 0 cf:add-default: cuckoo filter of 2 filters, 700 items
	// db 0 cf:b4: cuckoo filter of 2 filters, 5000 items
	// db 0 bf:exp3: Bloom chain of 3 filters, 5919 items
	// db 0 cf:plain: cuckoo filter of 2 filters, 5500 items
	// db 0 bf:madd-default: Bloom chain of 3 filters, 398 items
	// db 0 bf:grown: Bloom chain of 3 filters, 6995 items
	// db 3 cf:db3: cuckoo filter of 2 filters, 1400 items
	// db 3 bf:db3: Bloom chain of 2 filters, 2479 items
	// skipped: map[hash:1 list:1 set:1 stream:1 string:2 zset:1]
}

// RESTORE of a RedisBloom DUMP payload, and DUMP back: the payload's
// footer is checked, its module type picks the decoder, and the filter
// encodes to the same bytes.
func ExampleParsePayload() {
	// A payload as RedisBloom's DUMP gives it, here of a small filter.
	payload := (&rdb.Cuckoo{NumBuckets: 4, NumItems: 1, BucketSize: 2, MaxIterations: 20, Expansion: 1,
		Filters: []rdb.CuckooFilter{{NumBuckets: 4, Data: []byte{0, 0, 0x5a, 0, 0, 0, 0, 0}}}}).DumpPayload()

	typ, value, err := rdb.ParsePayload(payload)
	if err != nil {
		log.Fatal(err) // "DUMP payload version or checksum are wrong" in Redis's words
	}
	if typ != rdb.TypeModule2 {
		log.Fatalf("a %s value, not a module's", typ.Kind())
	}
	id, err := rdb.ModuleOf(value)
	if err != nil {
		log.Fatal(err)
	}
	switch id.Name() {
	case rdb.CuckooTypeName:
		cf, err := rdb.DecodeCuckoo(value)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(id, "buckets:", cf.NumBuckets, "items:", cf.NumItems)
		fmt.Println("DUMP gives the same bytes:", string(cf.DumpPayload()) == string(payload))
	case rdb.BloomTypeName:
		// rdb.DecodeBloom(value)
	}
	// Output:
	// MBbloomCF/4 buckets: 4 items: 1
	// DUMP gives the same bytes: true
}

// A Bloom chain as the SCANDUMP chunks BF.LOADCHUNK takes, and back.
func ExampleBloom_ScanDump() {
	b := &rdb.Bloom{Size: 1, Options: rdb.BloomForce64 | rdb.BloomNoRound, Growth: 2, Links: []rdb.BloomLink{
		{Entries: 10, Error: 0.01, Hashes: 7, BPE: 9.585, Bits: 96, Size: 1, Data: make([]byte, 12)},
	}}
	chunks, err := b.ScanDump()
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range chunks {
		fmt.Printf("BF.LOADCHUNK key %d <%d bytes>\n", c.Iter, len(c.Data))
	}
	back, err := rdb.BloomFromScanDump(chunks)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("items:", back.Size, "bits:", back.Links[0].Bits)
	// Output:
	// BF.LOADCHUNK key 1 <73 bytes>
	// BF.LOADCHUNK key 13 <12 bytes>
	// items: 1 bits: 96
}

// A module type whose value is one opaque string, as ohbloom serve dumps
// its own keys: Redis parses the payload and, without the module, refuses
// it; DecodeBlobValue gives the string back.
func ExampleAppendBlobValue() {
	id, err := rdb.NewModuleID("ohbloom--", 1)
	if err != nil {
		log.Fatal(err)
	}
	payload := rdb.AppendPayload(nil, rdb.TypeModule2, rdb.AppendBlobValue(nil, id, []byte("a key's record")))
	typ, value, err := rdb.ParsePayload(payload)
	if err != nil {
		log.Fatal(err)
	}
	m, _ := rdb.ModuleOf(value)
	blob, err := rdb.DecodeBlobValue(value, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s of %s: %q\n", typ, m, blob)
	// Output:
	// module2 of ohbloom--/1: "a key's record"
}

// A module value is its type's ID, then the items the module saved: what
// its own decoder (here redisbloom.CuckooFilter.UnmarshalRDB) reads.
func ExampleSplitModuleValue() {
	id := rdb.CuckooModuleID
	items := []byte{2, 1, 0} // one unsigned item, 1, then the end
	value := rdb.AppendModuleValue(nil, id, items)
	got, rest, err := rdb.SplitModuleValue(value)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s, version %d: % x\n", got.Name(), got.EncVer(), rest)
	// Output:
	// MBbloomCF, version 4: 02 01 00
}
