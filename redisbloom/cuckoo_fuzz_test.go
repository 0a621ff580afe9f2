package redisbloom

import (
	"errors"
	"fmt"
	"testing"
)

// cfFuzzMaxBytes bounds what a fuzzed header or RDB value may make.
const cfFuzzMaxBytes = 1 << 16

// cfFuzzSeeds returns the golden files' header chunks, data chunks and
// DUMP bodies, when they are there.
func cfFuzzSeeds(t testing.TB) (headers, data, bodies [][]byte) {
	if len(cfGoldenPaths()) == 0 {
		return nil, nil, nil
	}
	for _, g := range loadCFGolden(t) {
		for _, run := range []*cfGoldenRun{&g.cfGoldenRun, &g.AfterMore} {
			if len(run.Chunks) > 1 {
				headers = append(headers, run.Chunks[0].Data)
				data = append(data, run.Chunks[1].Data)
			}
			body, _ := cfDumpBody(t, run.DumpPayload)
			bodies = append(bodies, body)
		}
	}
	return headers, data, bodies
}

// FuzzCuckooHeader feeds a header chunk, a data chunk and operations to
// both filter types: a bad header or chunk is an error, never a panic;
// both types agree on everything; and the result dumps and loads back to
// itself.
func FuzzCuckooHeader(f *testing.F) {
	headers, data, _ := cfFuzzSeeds(f)
	for i := range headers {
		f.Add(headers[i], data[i], int64(len(data[i])+1), []byte("add me, test me"))
	}
	f.Add(cfHeader(1, 4, 0, 3, 3, 5, 2), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, int64(30), []byte{0, 1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, header, chunk []byte, iter int64, ops []byte) {
		p, err := NewCuckooFromHeader(header, cfFuzzMaxBytes)
		a, errA := NewAtomicCuckooFromHeader(header, cfFuzzMaxBytes)
		if (err == nil) != (errA == nil) {
			t.Fatalf("plain %v, atomic %v", err, errA)
		}
		if err != nil {
			if !errors.Is(err, ErrCuckooHeaderSize) && !errors.Is(err, ErrCuckooBadHeader) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if p.Info().Size > cfFuzzMaxBytes {
			t.Fatalf("size %d past the limit", p.Info().Size)
		}
		err, errA = p.LoadChunk(iter, chunk), a.LoadChunk(iter, chunk)
		if (err == nil) != (errA == nil) || (err != nil && !errors.Is(err, ErrCuckooBadChunk)) {
			t.Fatalf("chunk: plain %v, atomic %v", err, errA)
		}
		cfFuzzOps(t, p, a, ops)
		cfFuzzRoundTrip(t, p)
	})
}

// cfFuzzOps runs one operation per byte on both filters, which must agree.
func cfFuzzOps(t *testing.T, p *CuckooFilter, a *AtomicCuckooFilter, ops []byte) {
	for i, op := range ops {
		item := []byte{op & 0x1f, byte(i & 3)}
		var x, y any
		switch op >> 5 {
		case 0, 1, 2:
			e1, e2 := p.Add(item), a.Add(item)
			x, y = fmt.Sprint(e1), fmt.Sprint(e2)
		case 3:
			ok1, e1 := p.AddUnique(item)
			ok2, e2 := a.AddUnique(item)
			x, y = fmt.Sprint(ok1, e1), fmt.Sprint(ok2, e2)
		case 4:
			x, y = p.Delete(item), a.Delete(item)
		case 5:
			x, y = p.Count(item), a.Count(item)
		case 6:
			x, y = p.Test(item), a.Test(item)
		default:
			p.Compact()
			a.Compact()
		}
		if x != y {
			t.Fatalf("op %d (%#x): plain %v, atomic %v", i, op, x, y)
		}
	}
	if !cfStateEqual(p, a) {
		t.Fatal("plain and atomic filters differ")
	}
}

// cfFuzzRoundTrip dumps a filter in chunks and as an RDB value and loads
// both back.
func cfFuzzRoundTrip(t *testing.T, p *CuckooFilter) {
	var q CuckooFilter
	v := p.MarshalRDB()
	if n, err := q.UnmarshalRDB(v, CuckooRDBEncVer, cfFuzzMaxBytes); err != nil || n != len(v) || !q.Equal(p) {
		t.Fatalf("RDB round trip: %d of %d bytes, %v", n, len(v), err)
	}
	if p.Info().Items == 0 {
		return
	}
	var r *CuckooFilter
	for it := int64(0); ; {
		next, chunk := p.ScanDump(it, nil)
		if next == 0 {
			break
		}
		var err error
		if it == 0 {
			r, err = NewCuckooFromHeader(chunk, cfFuzzMaxBytes)
		} else {
			err = r.LoadChunk(next, chunk)
		}
		if err != nil {
			t.Fatal(err)
		}
		it = next
	}
	if !r.Equal(p) {
		t.Fatal("chunk round trip: the filter differs")
	}
}

// FuzzCuckooUnmarshalRDB decodes any bytes as an MBbloomCF value: an
// error, never a panic; and what loads marshals and loads back to itself.
func FuzzCuckooUnmarshalRDB(f *testing.F) {
	_, _, bodies := cfFuzzSeeds(f)
	for _, b := range bodies {
		f.Add(b, uint8(CuckooRDBEncVer))
	}
	small, _ := NewCuckoo(CuckooConfig{Capacity: 8, BucketSize: 3, MaxIterations: 3, Expansion: 2})
	for i := range 12 {
		small.Add([]byte{byte(i)})
	}
	f.Add(small.MarshalRDB(), uint8(CuckooRDBEncVer))
	f.Add([]byte{2, 2, 2, 4, 2, 9, 5, 8, 1, 2, 3, 4, 5, 6, 7, 8, 5, 0xc1, 0xd2, 0x04, 0}, uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, encver uint8) {
		var p CuckooFilter
		n, err := p.UnmarshalRDB(data, int(encver%6), cfFuzzMaxBytes)
		if err != nil {
			if !errors.Is(err, ErrCuckooBadRDB) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if n > len(data) || p.Info().Size > cfFuzzMaxBytes {
			t.Fatalf("took %d of %d bytes, size %d", n, len(data), p.Info().Size)
		}
		cfFuzzRoundTrip(t, &p)
		a := new(AtomicCuckooFilter)
		if _, err := a.UnmarshalRDB(data, int(encver%6), cfFuzzMaxBytes); err != nil {
			t.Fatal(err)
		}
		cfFuzzOps(t, &p, a, data[:min(len(data), 64)])
	})
}

// FuzzCuckooReference runs fuzzed operations on a small filter of fuzzed
// shape and on refCF, the C code transliterated: same replies, same bytes.
func FuzzCuckooReference(f *testing.F) {
	f.Add(uint8(2), uint8(20), uint8(1), uint8(8), []byte("a mix of operations, some repeated, repeated"))
	f.Add(uint8(5), uint8(1), uint8(2), uint8(12), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0x80, 0x81, 0xc0, 0xe0})
	f.Fuzz(func(t *testing.T, bs, iters, exp, capacity uint8, ops []byte) {
		c := CuckooConfig{Capacity: uint64(capacity), BucketSize: uint16(bs), MaxIterations: uint16(iters),
			Expansion: uint16(exp % 5), MaxBytes: 1 << 16}
		p, err := NewCuckoo(c)
		if err != nil {
			return
		}
		ref := refLimited{newRefCF(c.Capacity, c.BucketSize, c.MaxIterations, c.Expansion), c.MaxBytes}
		for i, op := range ops {
			h := CuckooHash([]byte{op & 0x3f})
			var got, want any
			switch op >> 6 {
			case 0, 1:
				if ref.nextGrowthPastLimit() {
					return
				}
				if op&1 == 0 {
					got, want = cfAddReply(true, p.AddHash(h)), ref.insert(h)
				} else {
					ok, err := p.AddUniqueHash(h)
					got, want = cfAddReply(ok, err), ref.insertUnique(h)
				}
			case 2:
				got, want = p.DeleteHash(h), ref.delete(h)
			default:
				if op&0x3f == 0x3f {
					p.Compact()
					ref.compact(true)
				}
				got, want = p.CountHash(h), ref.count(h)
			}
			if got != want {
				t.Fatalf("op %d (%#x): %v, reference %v", i, op, got, want)
			}
		}
		cfCheckAgainstRef(t, ref.refCF, p)
	})
}
