package redisbloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// cfFull returns a filter's header chunk and all its bytes end to end,
// from its own ScanDump, whatever its item count.
func cfFull(f cfUnderTest) ([]byte, []byte) {
	var header, data []byte
	for it := int64(0); ; {
		next, chunk := f.ScanDump(it, nil)
		if next == 0 {
			return header, data
		}
		if it == 0 {
			header = chunk
		} else {
			data = append(data, chunk...)
		}
		it = next
	}
}

// refLimited is the reference with this package's byte limit on growth
// (RedisBloom's TryCalloc failing instead).
type refLimited struct {
	*refCF
	maxBytes uint64
}

// nextGrowthPastLimit reports whether the next sub-filter would take the
// filter past its byte limit.
func (r refLimited) nextGrowthPastLimit() bool {
	if r.expansion == 0 {
		return false
	}
	g := uint64(1)
	for range len(r.filters) {
		g *= uint64(r.expansion)
	}
	return r.size()+cfSubStructSize+r.numBuckets*g*uint64(r.bucketSize) > r.maxBytes
}

func (r refLimited) size() uint64 {
	n := uint64(cfStructSize)
	for _, s := range r.filters {
		n += cfSubStructSize + uint64(len(s.data))
	}
	return n
}

// TestCuckooMatchesReference runs random adds, unique adds, deletes,
// compactions, tests and counts on both filter types and on refCF, the C
// code transliterated, for every kind of bucket size (the word-at-a-time
// ones and the byte loops), expansion and kick-out limit, and holds them
// to the same replies and the same bytes.
func TestCuckooMatchesReference(t *testing.T) {
	ops := 3000
	if testing.Short() {
		ops = 600
	}
	for _, bs := range []uint16{1, 2, 3, 4, 5, 7, 8, 9, 16, 255} {
		for _, exp := range []uint16{0, 1, 2, 3} {
			for _, iters := range []uint16{1, 4, 20} {
				name := fmt.Sprintf("bs=%d/exp=%d/iters=%d", bs, exp, iters)
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(bs)<<32|uint64(exp)<<16|uint64(iters), 1))
					capacity := uint64(2*bs) + rng.Uint64N(uint64(8*bs)+64)
					const maxBytes = 1 << 20
					c := CuckooConfig{Capacity: capacity, BucketSize: bs, MaxIterations: iters, Expansion: exp, MaxBytes: maxBytes}
					plain, err := NewCuckoo(c)
					if err != nil {
						t.Fatal(err)
					}
					shared, err := NewAtomicCuckoo(c)
					if err != nil {
						t.Fatal(err)
					}
					ref := refLimited{newRefCF(capacity, bs, iters, exp), maxBytes}
					pool := int(capacity)*3 + 10
					for i := range ops {
						h := CuckooHash([]byte(fmt.Sprintf("%s:%d", name, rng.IntN(pool))))
						op := rng.IntN(100)
						var want, got, gotShared any
						switch {
						case op < 60:
							unique := op >= 45
							if ref.nextGrowthPastLimit() {
								// Both would refuse to grow; stop adding.
								continue
							}
							var r int
							var e1, e2 error
							var ok1, ok2 bool
							if unique {
								r = ref.insertUnique(h)
								ok1, e1 = plain.AddUniqueHash(h)
								ok2, e2 = shared.AddUniqueHash(h)
							} else {
								r = ref.insert(h)
								e1, e2 = plain.AddHash(h), shared.AddHash(h)
								ok1, ok2 = e1 == nil, e2 == nil
							}
							want = r
							got, gotShared = cfAddReply(ok1, e1), cfAddReply(ok2, e2)
						case op < 80:
							want, got, gotShared = ref.delete(h), plain.DeleteHash(h), shared.DeleteHash(h)
						case op < 82:
							ref.compact(true)
							plain.Compact()
							shared.Compact()
						case op < 91:
							want, got, gotShared = ref.check(h), plain.TestHash(h), shared.TestHash(h)
						default:
							want, got, gotShared = ref.count(h), plain.CountHash(h), shared.CountHash(h)
						}
						if got != want || gotShared != want {
							t.Fatalf("op %d (%d): plain %v, atomic %v, reference %v", i, op, got, gotShared, want)
						}
						if i%97 == 0 || i == ops-1 {
							cfCheckAgainstRef(t, ref.refCF, plain, shared)
						}
					}
				})
			}
		}
	}
}

// cfAddReply maps an add's result to refCF's insert statuses.
func cfAddReply(ok bool, err error) int {
	switch {
	case errors.Is(err, ErrCuckooFull):
		return -1
	case errors.Is(err, ErrCuckooCannotGrow):
		return -2
	case err != nil:
		return -100
	case ok:
		return 1
	}
	return 0
}

func cfCheckAgainstRef(t *testing.T, ref *refCF, fs ...cfUnderTest) {
	t.Helper()
	wh, wd := ref.dump()
	for _, f := range fs {
		if ref.numItems == 0 {
			if next, b := f.ScanDump(0, nil); next != 0 || len(b) != 0 {
				t.Fatalf("a filter of no items dumps iterator %d and %d bytes", next, len(b))
			}
			// Compare through the RDB value, which is there for every
			// filter.
			var g CuckooFilter
			if _, err := g.UnmarshalRDB(f.MarshalRDB(), CuckooRDBEncVer, 0); err != nil {
				t.Fatal(err)
			}
			g.t.numItems = 1
			f = &g
		}
		h, d := cfFull(f)
		if ref.numItems == 0 {
			binary.LittleEndian.PutUint64(h, 0)
		}
		if !bytes.Equal(h, wh) || !bytes.Equal(d, wd) {
			t.Fatalf("state differs from the reference: header %x, want %x; data equal: %v", h, wh, bytes.Equal(d, wd))
		}
	}
}

func TestCuckooConfigChecks(t *testing.T) {
	for _, tc := range []struct {
		c    CuckooConfig
		want error
	}{
		{CuckooConfig{Capacity: 100, BucketSize: 0, MaxIterations: 20, Expansion: 1}, ErrCuckooConfig},
		{CuckooConfig{Capacity: 100, BucketSize: 256, MaxIterations: 20, Expansion: 1}, ErrCuckooConfig},
		{CuckooConfig{Capacity: 100, BucketSize: 2, MaxIterations: 0, Expansion: 1}, ErrCuckooConfig},
		{CuckooConfig{Capacity: 100, BucketSize: 2, MaxIterations: 20, Expansion: 32769}, ErrCuckooConfig},
		{CuckooConfig{Capacity: 3, BucketSize: 2, MaxIterations: 20, Expansion: 1}, ErrCuckooConfig},
		{CuckooConfig{Capacity: 1 << 62, BucketSize: 1, MaxIterations: 20, Expansion: 1}, ErrCuckooTooLarge},
		{CuckooConfig{Capacity: 1<<63 + 1, BucketSize: 1, MaxIterations: 20, Expansion: 1}, ErrCuckooTooLarge},
		{CuckooConfig{Capacity: 1 << 20, BucketSize: 2, MaxIterations: 20, Expansion: 1, MaxBytes: 1 << 19}, ErrCuckooTooLarge},
	} {
		if _, err := NewCuckoo(tc.c); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.c, err, tc.want)
		}
		if _, err := NewAtomicCuckoo(tc.c); !errors.Is(err, tc.want) {
			t.Errorf("atomic %+v: %v, want %v", tc.c, err, tc.want)
		}
	}
	for _, tc := range []struct {
		c                            CuckooConfig
		buckets, expansion, sizeWant uint64
	}{
		{DefaultCuckooConfig(1000), 512, 1, 40 + 16 + 1024},
		{DefaultCuckooConfig(4), 2, 1, 40 + 16 + 4},
		{CuckooConfig{Capacity: 1024, BucketSize: 255, MaxIterations: 1, Expansion: 3}, 4, 4, 40 + 16 + 1020},
		{CuckooConfig{Capacity: 5000, BucketSize: 1, MaxIterations: 1, Expansion: 0}, 8192, 0, 40 + 16 + 8192},
		{CuckooConfig{Capacity: 64, BucketSize: 2, MaxIterations: 1, Expansion: 32768}, 32, 32768, 40 + 16 + 64},
	} {
		f, err := NewCuckoo(tc.c)
		if err != nil {
			t.Fatal(err)
		}
		in := f.Info()
		if in.Buckets != tc.buckets || in.Expansion != tc.expansion || in.Size != tc.sizeWant || in.Filters != 1 {
			t.Errorf("%+v: %+v", tc.c, in)
		}
	}
}

func TestCuckooNextPow2(t *testing.T) {
	for _, n := range []uint64{0, 1, 2, 3, 4, 5, 1000, 1<<32 - 1, 1 << 32, 1<<63 - 1, 1 << 63, 1<<63 + 1, 1<<64 - 1} {
		if got, want := cfNextPow2(n), refGetNextN2(n); got != want {
			t.Errorf("cfNextPow2(%d) = %d, getNextN2 %d", n, got, want)
		}
	}
}

// TestCuckooIndexTruncation pins RedisBloom's 32-bit bucket positions in
// sub-filters of more than 4 GiB, too large to build in a test.
func TestCuckooIndexTruncation(t *testing.T) {
	const mask = 1<<33 - 1
	h := uint64(0xdead_beef_cafe_f00d)
	if got, want := cfLoc(h, mask, 2), (h&mask)*2%(1<<32); got != want {
		t.Errorf("cfLoc = %#x, want %#x", got, want)
	}
	if got, want := cfLoc(h, mask, 3), (h&mask)*3%(1<<32); got != want {
		t.Errorf("cfLoc = %#x, want %#x", got, want)
	}
}

// TestCuckooFullChangesNothing fills a filter that does not grow: the add
// that finds no room, after its kick-outs, leaves every byte as it was.
func TestCuckooFullChangesNothing(t *testing.T) {
	for _, bs := range []uint16{1, 2, 4, 6} {
		f, err := NewCuckoo(CuckooConfig{Capacity: 64, BucketSize: bs, MaxIterations: 50, Expansion: 0})
		if err != nil {
			t.Fatal(err)
		}
		full := 0
		for i := range 2000 {
			h0, d0 := cfFull(f)
			err := f.Add([]byte(fmt.Sprint(i)))
			if err == nil {
				continue
			}
			if !errors.Is(err, ErrCuckooFull) {
				t.Fatal(err)
			}
			full++
			if h1, d1 := cfFull(f); !bytes.Equal(h0, h1) || !bytes.Equal(d0, d1) {
				t.Fatalf("bucket size %d: a refused add changed the filter", bs)
			}
		}
		if full == 0 {
			t.Fatalf("bucket size %d: never full", bs)
		}
		if in := f.Info(); in.Filters != 1 || in.Items > in.Buckets*in.BucketSize {
			t.Fatalf("bucket size %d: %+v", bs, in)
		}
	}
}

// TestCuckooCannotGrowChangesNothing: growth past MaxBytes fails as
// RedisBloom's failed allocation does, with the filter unchanged.
func TestCuckooCannotGrowChangesNothing(t *testing.T) {
	f, err := NewCuckoo(CuckooConfig{Capacity: 64, BucketSize: 2, MaxIterations: 20, Expansion: 2, MaxBytes: 40 + 16*2 + 64 + 128})
	if err != nil {
		t.Fatal(err)
	}
	var refused int
	for i := range 1000 {
		h0, d0 := cfFull(f)
		err := f.Add([]byte(fmt.Sprint(i)))
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrCuckooCannotGrow) || !errors.Is(err, ErrCuckooTooLarge) {
			t.Fatal(err)
		}
		refused++
		if h1, d1 := cfFull(f); !bytes.Equal(h0, h1) || !bytes.Equal(d0, d1) {
			t.Fatal("a refused add changed the filter")
		}
	}
	if in := f.Info(); refused == 0 || in.Filters != 2 {
		t.Fatalf("%d refused, %+v", refused, in)
	}
	f.SetMaxBytes(1 << 20)
	if err := f.Add([]byte("more")); err != nil {
		t.Fatal(err)
	}
}

func cfHeader(items, buckets, deletes, filters uint64, bs, iters, exp uint16) []byte {
	var h []byte
	h = binary.LittleEndian.AppendUint64(h, items)
	h = binary.LittleEndian.AppendUint64(h, buckets)
	h = binary.LittleEndian.AppendUint64(h, deletes)
	h = binary.LittleEndian.AppendUint64(h, filters)
	h = binary.LittleEndian.AppendUint16(h, bs)
	h = binary.LittleEndian.AppendUint16(h, iters)
	return binary.LittleEndian.AppendUint16(h, exp)
}

func TestCuckooHeaderChecks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header []byte
		want   error
	}{
		{"short", cfHeader(1, 4, 0, 1, 2, 20, 1)[:37], ErrCuckooHeaderSize},
		{"long", append(cfHeader(1, 4, 0, 1, 2, 20, 1), 0), ErrCuckooHeaderSize},
		{"bucket size 0", cfHeader(1, 4, 0, 1, 0, 20, 1), ErrCuckooBadHeader},
		{"bucket size 256", cfHeader(1, 4, 0, 1, 256, 20, 1), ErrCuckooBadHeader},
		{"no buckets", cfHeader(1, 0, 0, 1, 2, 20, 1), ErrCuckooBadHeader},
		{"buckets not a power of two", cfHeader(1, 6, 0, 1, 2, 20, 1), ErrCuckooBadHeader},
		{"2^56 buckets", cfHeader(1, 1<<56, 0, 1, 2, 20, 1), ErrCuckooBadHeader},
		{"no sub-filters", cfHeader(1, 4, 0, 0, 2, 20, 1), ErrCuckooBadHeader},
		{"65536 sub-filters", cfHeader(1, 4, 0, 65536, 2, 20, 1), ErrCuckooBadHeader},
		{"no iterations", cfHeader(1, 4, 0, 1, 2, 0, 1), ErrCuckooBadHeader},
		{"expansion 3", cfHeader(1, 4, 0, 2, 2, 20, 3), ErrCuckooBadHeader},
		{"expansion 65535", cfHeader(1, 4, 0, 1, 2, 20, 65535), ErrCuckooBadHeader},
		{"expansion 0, 2 sub-filters", cfHeader(1, 4, 0, 2, 2, 20, 0), ErrCuckooBadHeader},
		{"too many buckets by growth", cfHeader(1, 1<<40, 0, 3, 1, 20, 1<<15), ErrCuckooTooLarge},
		{"too large", cfHeader(1, 1<<40, 0, 1, 255, 20, 1), ErrCuckooTooLarge},
	} {
		if _, err := NewCuckooFromHeader(tc.header, 0); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if _, err := NewAtomicCuckooFromHeader(tc.header, 0); !errors.Is(err, tc.want) {
			t.Errorf("atomic %s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Exactly at the limit, and one byte past it.
	h := cfHeader(1, 1024, 0, 3, 2, 20, 2)
	size := uint64(40 + 3*16 + 2*(1024+2048+4096))
	if _, err := NewCuckooFromHeader(h, size); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	if _, err := NewCuckooFromHeader(h, size-1); !errors.Is(err, ErrCuckooTooLarge) || !errors.Is(err, ErrCuckooBadHeader) {
		t.Errorf("past the limit: %v", err)
	}
}

// TestCuckooHeaderAllocatesNothing: a header that claims a gigabyte costs
// no more than its own bytes until data arrives, and tests as empty.
func TestCuckooHeaderAllocatesNothing(t *testing.T) {
	h := cfHeader(5, 1<<29, 0, 1, 2, 20, 1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := NewCuckooFromHeader(h, 2<<30)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAtomicCuckooFromHeader(h, 2<<30)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("a header allocated %d bytes", grew)
	}
	if f.Test([]byte("x")) || a.Test([]byte("x")) || f.Count([]byte("x")) != 0 || a.Count([]byte("x")) != 0 {
		t.Error("an unwritten filter has items")
	}
	if in := f.Info(); in.Size != 40+16+1<<30 || in.Items != 5 {
		t.Errorf("info %+v", in)
	}
}

// TestCuckooChunks dumps filters with several sub-filters in chunks of a
// small limit, loads them back, and checks RedisBloom's rules: a
// sub-filter no larger than the limit goes whole, wherever the iterator
// points in it; a larger one goes in pieces that never cross into the
// next.
func TestCuckooChunks(t *testing.T) {
	f, err := NewCuckoo(CuckooConfig{Capacity: 64, BucketSize: 4, MaxIterations: 20, Expansion: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; f.Info().Filters < 3; i++ {
		if err := f.Add([]byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	// Sub-filters of 64, 128 and 256 bytes; a limit of 100.
	_, all := cfFull(f)
	var iters []int64
	var loaded *CuckooFilter
	for it := int64(0); ; {
		next, chunk := f.t.scanDump(it, nil, 100)
		if next == 0 {
			break
		}
		if it == 0 {
			if loaded, err = NewCuckooFromHeader(chunk, 0); err != nil {
				t.Fatal(err)
			}
		} else {
			if want := all[it-1 : next-1]; !bytes.Equal(chunk, want) {
				t.Fatalf("chunk at %d: not the bytes at its place", it)
			}
			if err := loaded.LoadChunk(next, chunk); err != nil {
				t.Fatal(err)
			}
		}
		iters = append(iters, next)
		it = next
	}
	if want := []int64{1, 65, 165, 193, 293, 393, 449}; fmt.Sprint(iters) != fmt.Sprint(want) {
		t.Errorf("iterators %v, want %v", iters, want)
	}
	if !loaded.Equal(f) {
		t.Error("loaded from its chunks, the filter differs")
	}
	// An iterator in the middle of a small sub-filter gets all of it.
	if next, chunk := f.t.scanDump(11, nil, 100); next != 11+64 || !bytes.Equal(chunk, all[:64]) {
		t.Errorf("iterator 11: %d and %d bytes", next, len(chunk))
	}
	// Past the end, and negative.
	for _, it := range []int64{449, 1000, -1} {
		if next, chunk := f.ScanDump(it, nil); next != 0 || len(chunk) != 0 {
			t.Errorf("iterator %d: %d and %d bytes", it, next, len(chunk))
		}
	}
}

// TestCuckooScanDumpLarge dumps a 32 MiB sub-filter at RedisBloom's own
// chunk size.
func TestCuckooScanDumpLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 64 MiB")
	}
	f, err := NewCuckoo(CuckooConfig{Capacity: 32 << 20, BucketSize: 1, MaxIterations: 20, Expansion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add([]byte("x")); err != nil {
		t.Fatal(err)
	}
	var iters []int64
	var loaded *CuckooFilter
	for it := int64(0); ; {
		next, chunk := f.ScanDump(it, nil)
		if next == 0 {
			break
		}
		if it == 0 {
			loaded, err = NewCuckooFromHeader(chunk, 0)
		} else {
			err = loaded.LoadChunk(next, chunk)
		}
		if err != nil {
			t.Fatal(err)
		}
		iters = append(iters, next)
		it = next
	}
	if want := []int64{1, 1 + 16<<20, 1 + 32<<20}; fmt.Sprint(iters) != fmt.Sprint(want) {
		t.Errorf("iterators %v, want %v", iters, want)
	}
	if !loaded.Equal(f) || !loaded.Test([]byte("x")) {
		t.Error("loaded from its chunks, the filter differs")
	}
}

func TestCuckooLoadChunkErrors(t *testing.T) {
	// Sub-filters of 8 and 8 bytes.
	f, err := NewCuckooFromHeader(cfHeader(1, 4, 0, 2, 2, 20, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		iter int64
		n    int
	}{
		{5, 0},   // empty
		{0, 1},   // iterator 0
		{-3, 1},  // negative
		{4, 4},   // iterator − 1 < length
		{12, 6},  // from byte 5 of the first sub-filter past its end
		{18, 8},  // from byte 9: 1 into the second, 1 past its end
		{30, 4},  // from byte 25: 9 past both, and 9 + 4 > 8
		{1, 38},  // a header for an existing filter
		{99, 50}, // past everything
	} {
		if err := f.LoadChunk(tc.iter, make([]byte, tc.n)); !errors.Is(err, ErrCuckooBadChunk) {
			t.Errorf("%d bytes at %d: %v", tc.n, tc.iter, err)
		}
	}
	// RedisBloom's wrap: a chunk starting past the last sub-filter lands
	// in the last one, at its distance past the end, when it fits there.
	if err := f.LoadChunk(16+2+3+1, []byte{7, 7, 7}); err != nil {
		t.Fatal(err)
	}
	_, data := cfFull(f)
	if want := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 7, 7, 0, 0, 0}; !bytes.Equal(data, want) {
		t.Errorf("bytes %v, want %v", data, want)
	}
}

func TestCuckooModuleID(t *testing.T) {
	const charset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var id uint64
	for _, c := range CuckooRDBTypeName {
		id = id<<6 | uint64(strings.IndexRune(charset, c))
	}
	if id = id<<10 | CuckooRDBEncVer; id != CuckooRDBModuleID {
		t.Errorf("module id %#x, constant %#x", id, uint64(CuckooRDBModuleID))
	}
}

// TestCuckooRDBEncodings: tiny sub-filters whose bytes spell integers are
// written as Redis writes them, and every encoding loads.
func TestCuckooRDBEncodings(t *testing.T) {
	for _, tc := range []struct {
		buckets uint64
		bs      uint16
		data    string
		enc     []byte // the string's encoding in the value
	}{
		{1, 3, "-12", []byte{0xc0, 0xf4}},
		{2, 2, "1234", []byte{0xc1, 0xd2, 0x04}},
		{4, 2, "-7654321", []byte{0xc2, 0x4f, 0x34, 0x8b, 0xff}},
		{2, 2, "0123", []byte{4, '0', '1', '2', '3'}},
		{1, 2, "-0", []byte{2, '-', '0'}},
		{8, 2, "2147483648000000", append([]byte{16}, "2147483648000000"...)},
	} {
		f, err := NewCuckooFromHeader(cfHeader(1, tc.buckets, 0, 1, tc.bs, 20, 1), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.LoadChunk(int64(len(tc.data))+1, []byte(tc.data)); err != nil {
			t.Fatal(err)
		}
		v := f.MarshalRDB()
		if !bytes.Contains(v, append([]byte{rdbOpcodeString}, tc.enc...)) {
			t.Errorf("%q: value %x lacks %x", tc.data, v, tc.enc)
		}
		var g CuckooFilter
		n, err := g.UnmarshalRDB(append(v, "trailing"...), CuckooRDBEncVer, 0)
		if err != nil || n != len(v) || !g.Equal(f) {
			t.Errorf("%q: loaded back: %d of %d bytes, %v, equal %v", tc.data, n, len(v), err, g.Equal(f))
		}
	}
}

// TestCuckooRDBOldLayout loads the layout of encoding versions below 4:
// sub-filters, buckets, items, then the bytes of each.
func TestCuckooRDBOldLayout(t *testing.T) {
	v := []byte{2, 2, 2, 4, 2, 9}
	for range 2 {
		v = append(v, 5, 8, 1, 2, 3, 4, 5, 6, 7, 8)
	}
	v = append(v, 0)
	var f CuckooFilter
	n, err := f.UnmarshalRDB(v, 3, 0)
	if err != nil || n != len(v) {
		t.Fatal(n, err)
	}
	want := CuckooInfo{Size: 40 + 32 + 16, Buckets: 4, Filters: 2, Items: 9, BucketSize: 2, Expansion: 1, MaxIterations: 20}
	if in := f.Info(); in != want {
		t.Errorf("info %+v, want %+v", in, want)
	}
	if _, err := f.UnmarshalRDB(v, 5, 0); !errors.Is(err, ErrCuckooBadRDB) {
		t.Errorf("encoding version 5: %v", err)
	}
}

func TestCuckooRDBCorrupt(t *testing.T) {
	f, err := NewCuckoo(CuckooConfig{Capacity: 64, BucketSize: 2, MaxIterations: 20, Expansion: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; f.Info().Filters < 2; i++ {
		if err := f.Add([]byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	v := f.MarshalRDB()
	for i := range v {
		var g CuckooFilter
		if _, err := g.UnmarshalRDB(v[:i], CuckooRDBEncVer, 0); !errors.Is(err, ErrCuckooBadRDB) {
			t.Fatalf("truncated to %d of %d bytes: %v", i, len(v), err)
		}
	}
	var g CuckooFilter
	if _, err := g.UnmarshalRDB(v, CuckooRDBEncVer, uint64(f.Info().Size-1)); !errors.Is(err, ErrCuckooTooLarge) {
		t.Errorf("past the limit: %v", err)
	}
	// A second sub-filter of the wrong bucket count.
	bad := bytes.Clone(v)
	r := &rdbReader{b: bad}
	for range 8 {
		if _, err := r.unsigned(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.bucketBytes(64); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(bad[r.off:], []byte{rdbOpcodeUint, 0x40, 64}) {
		t.Fatalf("no 64-bucket sub-filter at %d of %x", r.off, bad)
	}
	bad[r.off+2] = 65
	if _, err := g.UnmarshalRDB(bad, CuckooRDBEncVer, 0); !errors.Is(err, ErrCuckooBadRDB) {
		t.Errorf("wrong bucket count: %v", err)
	}
	// A string that claims more than LZF can decode from its bytes.
	lzf := []byte{2, 1, 2, 0x80, 0, 1, 0, 0, 2, 0, 2, 0, 2, 2, 2, 20, 2, 1, // 1 sub-filter of 65,536 buckets of 2
		2, 0x80, 0, 1, 0, 0, 5, 0xc3, 1, 0x80, 0, 2, 0, 0, 0} // its 128 KiB in 1 LZF byte
	if _, err := g.UnmarshalRDB(lzf, CuckooRDBEncVer, 0); !errors.Is(err, ErrCuckooBadRDB) || !strings.Contains(err.Error(), "cannot hold") {
		t.Errorf("an LZF string of 1 byte for 128 KiB: %v", err)
	}
}

func TestLZFDecompress(t *testing.T) {
	out := make([]byte, 12)
	// A literal "ab", then a reference 2 back of 10 bytes: ababababab...
	if err := lzfDecompress([]byte{1, 'a', 'b'}, out[:1]); err == nil {
		t.Error("2 bytes into 1 accepted")
	}
	in := []byte{1, 'a', 'b', 7<<5 | 0, 1, 1}
	if err := lzfDecompress(in, out); err != nil || string(out) != "abababababab" {
		t.Errorf("%q, %v", out, err)
	}
	for _, bad := range [][]byte{
		{5, 'a'},          // literal past the input
		{1, 'a', 'b', 32}, // reference without its offset byte
		{0, 'a', 32, 5},   // reference before the start
		{0xe0},            // long reference without its length byte
		{1, 'a', 'b'},     // too short
	} {
		if err := lzfDecompress(bad, make([]byte, 12)); err == nil {
			t.Errorf("%x accepted", bad)
		}
	}
}

func TestCuckooZeroAllocs(t *testing.T) {
	f, _ := NewCuckoo(DefaultCuckooConfig(1 << 16))
	a, _ := NewAtomicCuckoo(DefaultCuckooConfig(1 << 16))
	item := []byte("some item")
	for name, fn := range map[string]func(){
		"Add":        func() { f.Add(item); f.Delete(item) },
		"Test":       func() { f.Test(item) },
		"Count":      func() { f.Count(item) },
		"AddUnique":  func() { f.AddUnique(item) },
		"atomic Add": func() { a.Add(item); a.Delete(item) },
		"atomic Test": func() {
			a.Test(item)
		},
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

// TestAtomicCuckooConcurrent runs adds with kick-outs and growth, deletes
// and compactions beside lock-free tests: an item present
// throughout is never missed, and the adds all count.
func TestAtomicCuckooConcurrent(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 4000
	}
	f, err := NewAtomicCuckoo(CuckooConfig{Capacity: 1024, BucketSize: 2, MaxIterations: 50, Expansion: 1})
	if err != nil {
		t.Fatal(err)
	}
	key := func(kind string, i int) []byte { return []byte(fmt.Sprintf("%s:%d", kind, i)) }
	// Kept items: added once, never deleted. Twins: added twice, and the
	// churner deletes one copy and adds it back, so one is always there.
	for i := range 500 {
		f.Add(key("kept", i))
		f.Add(key("twin", i))
		f.Add(key("twin", i))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var misses atomic.Int64
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				if !f.Test(key("kept", (i+r)%500)) || !f.Test(key("twin", (i*7+r)%500)) {
					misses.Add(1)
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range n {
				if err := f.Add(key(fmt.Sprint("new", w), i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	writers.Add(1)
	go func() {
		defer writers.Done()
		for i := range n {
			k := key("twin", i%500)
			if !f.Delete(k) {
				t.Error("a twin's copy was not there to delete")
			}
			if err := f.Add(k); err != nil {
				t.Error(err)
			}
			if i%1000 == 999 {
				f.Compact()
			}
		}
	}()
	writers.Wait()
	stop.Store(true)
	wg.Wait()
	if m := misses.Load(); m != 0 {
		t.Errorf("%d tests missed an item present throughout", m)
	}
	if in := f.Info(); in.Items != uint64(1500+2*n) || in.Filters < 2 {
		t.Errorf("info %+v, want %d items over several sub-filters", in, 1500+2*n)
	}
	for w := range 2 {
		for i := range n {
			if !f.Test(key(fmt.Sprint("new", w), i)) {
				t.Fatalf("writer %d's item %d missing", w, i)
			}
		}
	}
}

// TestAtomicCuckooKickOutsNeverHide keeps a full filter that cannot grow
// under refused adds, each of which carries fingerprints around and back
// for thousands of kick-outs, while readers test every stored item: none
// may ever be missed, though each spends time in the kicker's hand.
func TestAtomicCuckooKickOutsNeverHide(t *testing.T) {
	attempts := 400
	if testing.Short() {
		attempts = 100
	}
	f, err := NewAtomicCuckoo(CuckooConfig{Capacity: 64, BucketSize: 2, MaxIterations: 5000, Expansion: 0})
	if err != nil {
		t.Fatal(err)
	}
	var stored [][]byte
	for i := 0; len(stored) < 40; i++ {
		k := []byte(fmt.Sprint("stored", i))
		if err := f.Add(k); err == nil {
			stored = append(stored, k)
		}
	}
	full := 0
	for i := 0; full < 20; i++ {
		if err := f.Add([]byte(fmt.Sprint("filler", i))); errors.Is(err, ErrCuckooFull) {
			full++
		}
	}
	var stop atomic.Bool
	var misses, reads atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				for _, k := range stored {
					if !f.Test(k) {
						misses.Add(1)
					}
				}
				reads.Add(int64(len(stored)))
			}
		}()
	}
	for i := range attempts {
		if err := f.Add([]byte(fmt.Sprint("refused", i))); err == nil {
			t.Fatal("a full filter took an item")
		}
	}
	stop.Store(true)
	wg.Wait()
	if m := misses.Load(); m != 0 {
		t.Errorf("%d of %d tests missed a stored item", m, reads.Load())
	}
}

// TestAtomicCuckooUnmarshalRDB: a zero AtomicCuckooFilter filled by
// UnmarshalRDB tests without the lock, its sequence counter even.
func TestAtomicCuckooUnmarshalRDB(t *testing.T) {
	p, _ := NewCuckoo(DefaultCuckooConfig(64))
	p.Add([]byte("x"))
	var a AtomicCuckooFilter
	if _, err := a.UnmarshalRDB(p.MarshalRDB(), CuckooRDBEncVer, 0); err != nil {
		t.Fatal(err)
	}
	if !a.Test([]byte("x")) || a.sh.seq.Load()%2 != 0 {
		t.Errorf("test %v, sequence %d", a.Test([]byte("x")), a.sh.seq.Load())
	}
	if _, err := a.UnmarshalRDB(p.MarshalRDB(), CuckooRDBEncVer, 0); err != nil || a.sh.seq.Load()%2 != 0 {
		t.Errorf("again: %v, sequence %d", err, a.sh.seq.Load())
	}
}
