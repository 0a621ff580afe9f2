package rdb

import (
	"bytes"
	"errors"
	"testing"
)

func TestBlobValue(t *testing.T) {
	id := mustModuleID("ohbloom--", 1)
	for _, n := range []int{0, 1, 63, 64, 16383, 16384, 1 << 20} {
		blob := bytes.Repeat([]byte{0xa5, 0x5a, 1}, n)[:n] // compressible: must stay raw
		value := AppendBlobValue(nil, id, blob)
		if len(value) > n+21 {
			t.Fatalf("%d bytes: value of %d bytes", n, len(value))
		}
		p := AppendPayload(nil, TypeModule2, value)
		typ, v, err := ParsePayload(p)
		if err != nil || typ != TypeModule2 || !bytes.Equal(v, value) {
			t.Fatalf("%d bytes: ParsePayload: %v %v", n, typ, err)
		}
		if m, err := ModuleOf(v); err != nil || m != id {
			t.Fatalf("%d bytes: ModuleOf %v %v", n, m, err)
		}
		got, err := DecodeBlobValue(v, id)
		if err != nil || !bytes.Equal(got, blob) {
			t.Fatalf("%d bytes: DecodeBlobValue: %d bytes, %v", n, len(got), err)
		}
		// Not a RedisBloom value: its decoders refuse it.
		if _, err := DecodeBloom(v); err == nil {
			t.Fatalf("%d bytes: DecodeBloom took a blob", n)
		}
		// Every truncation is refused, none panics.
		for cut := 0; cut < len(value) && cut < 40; cut++ {
			if _, err := DecodeBlobValue(value[:cut], id); err == nil {
				t.Fatalf("%d bytes: cut to %d taken", n, cut)
			}
		}
		if _, err := DecodeBlobValue(append(value[:len(value):len(value)], 0), id); err == nil {
			t.Fatalf("%d bytes: a byte after the end taken", n)
		}
	}
	value := AppendBlobValue(nil, id, []byte("x"))
	if _, err := DecodeBlobValue(value, mustModuleID("ohbloomXX", 1)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("another type's blob: %v", err)
	}
	newer := AppendBlobValue(nil, mustModuleID("ohbloom--", 2), []byte("x"))
	if _, err := DecodeBlobValue(newer, id); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("a newer encoding version: %v", err)
	}
	// A compressed string, as a Redis that rewrote it would save it, reads
	// back too.
	blob := bytes.Repeat([]byte("ohbloom "), 100)
	lzf := appendString(nil, blob)
	if lzf[0] != 0xc3 {
		t.Fatal("test string not compressed")
	}
	value = append(append(appendLen(nil, uint64(id)), moduleString), lzf...)
	value = append(value, moduleEOF)
	if got, err := DecodeBlobValue(value, id); err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("compressed blob: %v", err)
	}
}

func FuzzDecodeBlobValue(f *testing.F) {
	id := mustModuleID("ohbloom--", 1)
	f.Add(AppendBlobValue(nil, id, []byte("OHBSRV\x00\x02 a record")))
	f.Add(AppendBlobValue(nil, id, nil))
	f.Fuzz(func(t *testing.T, value []byte) {
		blob, err := DecodeBlobValue(value, id)
		if err != nil {
			return
		}
		if len(blob) > len(value)*lzfMaxRatio {
			t.Fatalf("%d bytes from %d", len(blob), len(value))
		}
	})
}

func TestSplitModuleValue(t *testing.T) {
	for _, id := range []ModuleID{BloomModuleID, CuckooModuleID, 5, 1 << 20} {
		items := []byte{moduleUint, 7, moduleEOF}
		value := AppendModuleValue(nil, id, items)
		got, rest, err := SplitModuleValue(value)
		if err != nil || got != id || !bytes.Equal(rest, items) {
			t.Fatalf("%v: %v %x %v", id, got, rest, err)
		}
		if _, _, err := SplitModuleValue(value[:1]); id > 63 && err == nil {
			t.Fatalf("%v: a cut ID taken", id)
		}
	}
	if _, _, err := SplitModuleValue(nil); !errors.Is(err, ErrTruncated) {
		t.Fatalf("empty value: %v", err)
	}
}
