package rdb

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"
)

// benchFile is an RDB file of many small keys, a few large values, and
// RedisBloom filters: what an import reads.
func benchFile(b *testing.B) []byte {
	f := newRDB(12).aux("redis-ver", "7.4.1").op(opSelectDB).n(0)
	for i := range 100000 {
		f.key(TypeString, fmt.Sprintf("key:%08d", i)).enc(fmt.Sprintf("value-%d-%s", i, "abcdefghijklmnopqrstuvwxyz"))
	}
	for i := range 20 {
		f.key(TypeSet, fmt.Sprintf("set:%d", i)).n(1000)
		for j := range 1000 {
			f.enc(fmt.Sprintf("member-%d", j))
		}
	}
	bl := &Bloom{Size: 0, Options: BloomForce64 | BloomNoRound, Growth: 2, Links: []BloomLink{
		{Entries: 1 << 20, Error: 0.01, Hashes: 7, BPE: 9.585, Bits: 8 << 20, Data: noise(1 << 20)},
	}}
	for i := range 4 {
		f.key(TypeModule2, fmt.Sprintf("bf:%d", i)).op(bl.AppendValue(nil)...)
	}
	return f.done(true)
}

// BenchmarkReader reads the file, keeping the filters and decoding them.
func BenchmarkReader(b *testing.B) {
	data := benchFile(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		readAndDecode(b, bytes.NewReader(data))
	}
}

// BenchmarkReaderFile reads the RDB file named by OHBLOOM_RDB_BENCH_FILE,
// to compare with redis-check-rdb on the same file.
func BenchmarkReaderFile(b *testing.B) {
	path := os.Getenv("OHBLOOM_RDB_BENCH_FILE")
	if path == "" {
		b.Skip("OHBLOOM_RDB_BENCH_FILE not set")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		readAndDecode(b, f)
		f.Close()
	}
}

func readAndDecode(b *testing.B, in io.Reader) {
	r, err := NewReader(in, nil)
	if err != nil {
		b.Fatal(err)
	}
	for {
		e, err := r.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			b.Fatal(err)
		}
		if e.Value == nil {
			continue
		}
		if e.Module.Name() == BloomTypeName {
			_, err = DecodeBloom(e.Value)
		} else {
			_, err = DecodeCuckoo(e.Value)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
