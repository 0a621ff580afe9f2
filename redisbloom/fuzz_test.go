package redisbloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/internal/redisbloomtest"
)

// fuzzBFLimit keeps the chains the fuzzer makes small.
const fuzzBFLimit = 1 << 20

// FuzzHeader feeds BF.LOADCHUNK's two paths hostile bytes: a
// header chunk, then one data chunk at any iterator, then an add and a
// test. Never a panic; every refusal is RedisBloom's (bad data, no link,
// too big); an accepted header dumps back as it came (less a legacy hash
// configuration); an accepted chunk is where its iterator says; an added
// item tests present.
func FuzzHeader(f *testing.F) {
	for _, g := range redisbloomtest.Load(f, "..") {
		for _, s := range []*redisbloomtest.State{&g.State, &g.AfterMore.State} {
			c := s.Chunks[min(1, len(s.Chunks)-1)]
			f.Add(s.Chunks[0].Data, c.Iterator, c.Data[:min(len(c.Data), 64)])
		}
	}
	small, _ := New(Config{Capacity: 10, ErrorRate: 0.1, Expansion: 1})
	_, h := small.ScanDump(0, nil)
	f.Add(h, int64(5), []byte{1, 2, 3, 4})
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(bytes.Clone(h), 1), 99), int64(1), []byte{})
	f.Add(h[:19], int64(0), []byte(nil))
	f.Fuzz(func(t *testing.T, header []byte, iter int64, chunk []byte) {
		c, err := NewFromHeader(header, fuzzBFLimit)
		if err != nil {
			if !errors.Is(err, ErrBadData) {
				t.Fatalf("header refused with %v", err)
			}
			return
		}
		if next, again := c.ScanDump(0, nil); next != 1 || !bytes.Equal(again, header) &&
			!bytes.Equal(again, header[:max(0, len(header)-bfHashConfigSize)]) {
			t.Fatal("the header dumps back differently")
		}
		err = c.LoadChunk(iter, chunk)
		if err != nil {
			if !slices.ContainsFunc([]error{ErrBadData, ErrNoLink, ErrChunkTooBig},
				func(e error) bool { return errors.Is(err, e) }) {
				t.Fatalf("chunk refused with %v", err)
			}
		} else if len(chunk) > 0 {
			var all []byte
			for it := int64(1); it != 0; {
				it, all = c.ScanDump(it, all)
			}
			end := iter - 1
			if !bytes.Equal(all[end-int64(len(chunk)):end], chunk) {
				t.Fatal("the chunk is not where its iterator says")
			}
		}
		if _, err := c.Add([]byte("fuzz")); err == nil && !c.Test([]byte("fuzz")) {
			t.Fatal("an added item tests absent")
		} else if err != nil && !errors.Is(err, ErrFull) && !errors.Is(err, ErrCannotGrow) {
			t.Fatalf("add refused with %v", err)
		}
	})
}

// FuzzUnmarshal: UnmarshalBinary and ReadFrom never panic,
// refuse with a sentinel, agree with each other, and a decoded chain
// encodes back to the same bytes.
func FuzzUnmarshal(f *testing.F) {
	for _, g := range redisbloomtest.Load(f, "..") {
		c := bfChainFromDump(f, &g.State)
		data, _ := c.MarshalBinary()
		if len(data) < 4096 {
			f.Add(data)
			f.Add(data[:len(data)-1])
		}
	}
	f.Add([]byte(bfMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var u Filter
		errU := u.UnmarshalBinary(data)
		var r AtomicFilter
		n, errR := r.ReadFrom(bytes.NewReader(data))
		if errU != nil {
			if !slices.ContainsFunc([]error{ohbloom.ErrNotFilter, ohbloom.ErrVersion, ohbloom.ErrChecksum, ohbloom.ErrTruncated, ohbloom.ErrCorrupt, ErrBadData},
				func(e error) bool { return errors.Is(errU, e) }) {
				t.Fatalf("refused with %v", errU)
			}
			if errR == nil && n == int64(len(data)) {
				t.Fatal("ReadFrom accepts what UnmarshalBinary refuses")
			}
			return
		}
		if errR != nil || n != int64(len(data)) {
			t.Fatalf("ReadFrom: %v after %d of %d bytes", errR, n, len(data))
		}
		again, _ := u.MarshalBinary()
		other, _ := r.MarshalBinary()
		if !bytes.Equal(again, data) || !bytes.Equal(other, data) {
			t.Fatal("a decoded chain encodes differently")
		}
	})
}
