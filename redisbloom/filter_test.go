package redisbloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/internal/race"
	"github.com/ohbloom/ohbloom/internal/redisbloomtest"
	"github.com/zeebo/xxh3"
)

// smhasherVerification is SMHasher's VerificationTest: hash the keys
// {}, {0}, {0,1}, ... {0..254} with seeds 256, 255, ... 1, then the
// concatenated hashes with seed 0, and keep the first 4 bytes.
func smhasherVerification(size int, hash func(key []byte, seed uint32) []byte) uint32 {
	key := make([]byte, 256)
	var hashes []byte
	for i := range 256 {
		key[i] = byte(i)
		hashes = append(hashes, hash(key[:i], uint32(256-i))...)
	}
	if len(hashes) != 256*size {
		panic("hash size")
	}
	return binary.LittleEndian.Uint32(hash(hashes, 0))
}

// TestRedisBloomHashes checks MurmurHash64A and MurmurHash2 against the
// verification values SMHasher publishes for the reference code.
func TestRedisBloomHashes(t *testing.T) {
	if got := smhasherVerification(8, func(k []byte, s uint32) []byte {
		return binary.LittleEndian.AppendUint64(nil, murmur64A(k, uint64(s)))
	}); got != 0x1F0D3804 {
		t.Errorf("MurmurHash64A verification %#x, want 0x1F0D3804", got)
	}
	if got := smhasherVerification(4, func(k []byte, s uint32) []byte {
		return binary.LittleEndian.AppendUint32(nil, murmur2(k, s))
	}); got != 0x27864C1E {
		t.Errorf("MurmurHash2 verification %#x, want 0x27864C1E", got)
	}
}

// TestLnCorrectlyRounded checks the ln that sizes new filters: against
// glibc's log where Go's math.Log is one unit off (values from glibc 2.36),
// and within one unit of math.Log everywhere.
func TestLnCorrectlyRounded(t *testing.T) {
	for _, c := range []struct{ x, ln uint64 }{
		{0x3f778db9be378134, 0xc014a24a5f7778ad}, // ln(0.005750394400337467)
		{0x3fd5de70371ec3a0, 0xbff12e5b51c13eed}, // ln(0.34170155890302034)
		{0x3f948f5745aba39e, 0xc00f43d89be5bb51}, // ln(0.020078052165363063)
		{0x3f5e5128cef4ab5c, 0xc0192b5e0cf42561}, // ln(0.0018504045982108063)
		{0x3f841037a3081b90, 0xc01280bddcfe965f}, // ln(0.00979655710490393)
		{0x3fe1ce7887ada5e6, 0xbfe2c1e95d740099}, // ln(0.5564539575545353)
		{0x3fba849dbd7d5564, 0xc0022389b42c88d9}, // ln(0.1035860622044616)
		{0x3fd39a0bc41de89a, 0xbff2eea6e7a84387}, // ln(0.3062772193149016)
	} {
		x := math.Float64frombits(c.x)
		if got := math.Float64bits(lnCorrectlyRounded(x)); got != c.ln {
			t.Errorf("ln(%v) = %#x, glibc %#x", x, got, c.ln)
		}
	}
	for _, c := range []struct{ x, want float64 }{{1, 0}, {0.5, -math.Ln2}, {0.25, -2 * math.Ln2}, {math.E, 1}} {
		if got := lnCorrectlyRounded(c.x); got != c.want {
			t.Errorf("ln(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		x := math.Ldexp(r.Float64()+0.5, -r.IntN(1000))
		got, approx := lnCorrectlyRounded(x), math.Log(x)
		if got != approx && math.Nextafter(approx, got) != got {
			t.Fatalf("ln(%v) = %v, math.Log says %v: more than one unit apart", x, got, approx)
		}
	}
}

// TestRedisBloomSizing checks bfInit against the filters of RedisBloom's
// dumps: every filter of every chain, from its capacity and error rate.
func TestRedisBloomSizing(t *testing.T) {
	for _, g := range redisbloomtest.Load(t, "..") {
		for _, state := range []*redisbloomtest.State{&g.State, &g.AfterMore.State} {
			h, err := decodeBFHeader(state.Chunks[0].Data, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range h.params {
				capacity := want.entries
				if i > 0 {
					// A grown filter's capacity comes from the last one's.
					capacity = h.params[i-1].entries * uint64(h.growth)
				}
				got, err := bfInit(capacity, want.errRate, h.options)
				if err != nil || got != want {
					t.Errorf("%s filter %d: bfInit(%d, %v) = %+v, %v; RedisBloom %+v", g.Name, i, capacity, want.errRate, got, err, want)
				}
			}
		}
	}
	// The power-of-two rounding RedisBloom no longer uses: 1000 items at
	// 1% need 9585 bits, rounded to 2^14, which hold 1709 items.
	p, err := bfInit(1000, 0.01, Force64)
	if err != nil || p.n2 != 14 || p.bits != 1<<14 || p.entries != 1000+uint64((16384-9585.058377367446)/p.bpe) || p.mod != 1<<14 {
		t.Errorf("rounded sizing: %+v %v", p, err)
	}
	if p, err := bfInit(10, 0.01, EntriesAreBits); err != nil || p.n2 != 10 || p.bits != 1024 || p.entries != uint64(1024/p.bpe) {
		t.Errorf("entries as bits: %+v %v", p, err)
	}
	for _, c := range []struct {
		entries uint64
		e       float64
		options uint32
	}{{0, 0.01, NoRound}, {10, 0, NoRound}, {10, 1, NoRound}, {10, math.NaN(), NoRound},
		{64, 0.01, EntriesAreBits}, {1 << 62, 0.01, 0}, {1 << 62, 0.001, NoRound}} {
		if _, err := bfInit(c.entries, c.e, c.options); !errors.Is(err, errBFSize) {
			t.Errorf("bfInit(%d, %v, %d) = %v, want a sizing error", c.entries, c.e, c.options, err)
		}
	}
}

// bfChainFromDump loads a golden state into a plain chain.
func bfChainFromDump(t testing.TB, s *redisbloomtest.State) *Filter {
	t.Helper()
	f, err := NewFromHeader(s.Chunks[0].Data, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Chunks[1:] {
		if err := f.LoadChunk(c.Iterator, c.Data); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// goldenByName returns the golden file of that name.
func goldenByName(t testing.TB, name string) *redisbloomtest.Dump {
	for _, g := range redisbloomtest.Load(t, "..") {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no golden file %s", name)
	return nil
}

// TestRedisBloomHeaderChecks makes each field of a valid header wrong in
// turn: each must be refused as bad data, and nothing allocated for bits.
func TestRedisBloomHeaderChecks(t *testing.T) {
	g := goldenByName(t, "cap1000-e0.01-grown")
	good := g.Chunks[0].Data
	if _, err := NewFromHeader(good, 0); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	link := func(i, field int) int { return bfChainHeaderSize + bfLinkHeaderSize*i + field }
	for _, c := range []struct {
		name   string
		change func(b []byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:19] }},
		{"no filters", func(b []byte) []byte { le.PutUint32(b[8:], 0); return b }},
		{"more filters than bytes", func(b []byte) []byte { le.PutUint32(b[8:], 4); return b }},
		{"a byte too many", func(b []byte) []byte { return append(b, 0) }},
		{"unknown option", func(b []byte) []byte { le.PutUint32(b[12:], 16|5); return b }},
		{"chain count", func(b []byte) []byte { le.PutUint64(b, le.Uint64(b)+1); return b }},
		{"link count overflow", func(b []byte) []byte { le.PutUint64(b[link(1, 16):], math.MaxUint64); return b }},
		{"error rate 0", func(b []byte) []byte { le.PutUint64(b[link(1, 24):], 0); return b }},
		{"error rate 1", func(b []byte) []byte { le.PutUint64(b[link(1, 24):], math.Float64bits(1)); return b }},
		{"error rate NaN", func(b []byte) []byte { le.PutUint64(b[link(1, 24):], math.Float64bits(math.NaN())); return b }},
		{"bits not 8 bytes", func(b []byte) []byte { le.PutUint64(b[link(0, 8):], le.Uint64(b[link(0, 8):])+1); return b }},
		{"bits wrap", func(b []byte) []byte {
			le.PutUint64(b[link(0, 0):], 1<<61)
			le.PutUint64(b[link(0, 8):], 0)
			return b
		}},
		{"zero bits", func(b []byte) []byte { le.PutUint64(b[link(0, 0):], 0); le.PutUint64(b[link(0, 8):], 0); return b }},
		{"hashes", func(b []byte) []byte { le.PutUint32(b[link(2, 40):], 11); return b }},
		{"bpe NaN", func(b []byte) []byte { le.PutUint64(b[link(2, 32):], math.Float64bits(math.NaN())); return b }},
		{"bpe huge", func(b []byte) []byte { le.PutUint64(b[link(2, 32):], math.Float64bits(1e300)); return b }},
		{"n2 64", func(b []byte) []byte { b[link(0, 52)] = 64; return b }},
		{"n2 past the bits", func(b []byte) []byte { b[link(0, 52)] = 20; return b }},
		{"hash config version 2", func(b []byte) []byte { return le.AppendUint64(le.AppendUint64(b, 2), 7) }},
		{"hash config version 0 with a seed", func(b []byte) []byte { return le.AppendUint64(le.AppendUint64(b, 0), 7) }},
	} {
		b := c.change(bytes.Clone(good))
		for _, v := range bfVariants {
			if _, err := v.fromHeader(b); !errors.Is(err, ErrBadData) {
				t.Errorf("%s, %s: %v, want ErrBadData", c.name, v.name, err)
			}
		}
	}
	// A header whose filters take more than the limit is refused before
	// anything is allocated.
	if _, err := NewFromHeader(good, 11687-32-3*64); !errors.Is(err, ohbloom.ErrTooLarge) {
		t.Errorf("over the byte limit: %v", err)
	}
	if _, err := NewFromHeader(good, 11688-32-3*64); err != nil {
		t.Errorf("at the byte limit: %v", err)
	}
	// Version 0 with seed 0 is the legacy mapping, written out without the
	// configuration, as RedisBloom does.
	f, err := NewFromHeader(le.AppendUint64(le.AppendUint64(bytes.Clone(good), 0), 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, h := f.ScanDump(0, nil); !bytes.Equal(h, good) {
		t.Error("a legacy hash configuration is dumped")
	}
}

// TestRedisBloomHashConfig: a header with bf-hash-seed's configuration
// loads, hashes with seeded XXH3, and dumps back with it.
func TestRedisBloomHashConfig(t *testing.T) {
	plain, _ := New(Config{Capacity: 100, ErrorRate: 0.01, Expansion: 2})
	_, header := plain.ScanDump(0, nil)
	le := binary.LittleEndian
	seeded := le.AppendUint64(le.AppendUint64(header, 1), 0x1234)
	f, err := NewFromHeader(seeded, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, h := f.ScanDump(0, nil); !bytes.Equal(h, seeded) {
		t.Error("the hash configuration is not dumped back")
	}
	for i := range 100 {
		f.AddString(fmt.Sprint("k", i))
		plain.AddString(fmt.Sprint("k", i))
	}
	for i := range 100 {
		if !f.TestString(fmt.Sprint("k", i)) {
			t.Fatal("false negative")
		}
	}
	// XXH3 and MurmurHash64A put the same items on other bits.
	_, a := f.ScanDump(1, nil)
	_, b := plain.ScanDump(1, nil)
	if bytes.Equal(a, b) {
		t.Error("the seeded chain set the same bits as MurmurHash64A")
	}
	if a, b := f.hasher.hash([]byte("x")); a != bfXXH3(t, "x", 0x1234) || b != bfXXH3(t, "x", 0x1234+bfXXH3DomainMul) {
		t.Error("seeded hashes")
	}
}

func bfXXH3(t *testing.T, s string, seed uint64) uint64 {
	return xxh3.HashStringSeed(s, seed)
}

// TestRedisBloomLoadChunkErrors checks every refusal of BF.LOADCHUNK, and
// that a refused chunk changes nothing.
func TestRedisBloomLoadChunkErrors(t *testing.T) {
	g := goldenByName(t, "cap1000-e0.01-grown") // filters of 1384, 3120 and 6960 bytes
	for _, v := range bfVariants {
		f, err := v.fromHeader(g.Chunks[0].Data)
		if err != nil {
			t.Fatal(err)
		}
		_, before := f.ScanDump(1, nil)
		for _, c := range []struct {
			iter int64
			n    int
			want error
		}{
			{0, 0, ErrBadData},
			{-5, 0, ErrBadData},
			{10, 11, ErrBadData},
			{10, 10, ErrNoLink},   // would start at position −1
			{11466, 1, ErrNoLink}, // past the last byte
			{1386, 2, ErrChunkTooBig},
			{1, 0, nil}, // an empty chunk at iterator 1
			{1385, 1384, nil},
			{1386, 1, nil}, // first byte of the second filter
			{11465, 6960, nil},
		} {
			err := f.LoadChunk(c.iter, bytes.Repeat([]byte{0xff}, int(c.n)))
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("%s: LOADCHUNK iterator %d, %d bytes: %v, want %v", v.name, c.iter, c.n, err, c.want)
			}
		}
		if next, after := f.ScanDump(1, nil); next != 1385 || bytes.Equal(after, before) || !bytes.Equal(after, bytes.Repeat([]byte{0xff}, 1384)) {
			t.Errorf("%s: the first filter was not replaced", v.name)
		}
		if _, second := f.ScanDump(1385, nil); second[0] != 0xff || second[1] != 0 {
			t.Errorf("%s: a one-byte chunk wrote %x", v.name, second[:2])
		}
	}
}

// TestRedisBloomUnalignedChunks loads a dump in chunks of odd sizes at odd
// offsets, which RedisBloom accepts, and dumps back the same bytes.
func TestRedisBloomUnalignedChunks(t *testing.T) {
	g := goldenByName(t, "cap500-e0.01-exp4-grown")
	var bits []byte
	for _, c := range g.Chunks[1:] {
		bits = append(bits, c.Data...)
	}
	h, _ := decodeBFHeader(g.Chunks[0].Data, 0)
	for _, v := range bfVariants {
		f, _ := v.fromHeader(g.Chunks[0].Data)
		r := rand.New(rand.NewPCG(3, 4))
		pos := 0
		for _, p := range h.params {
			end := pos + int(p.bytes)
			for pos < end {
				n := min(end-pos, 1+r.IntN(23))
				if err := f.LoadChunk(int64(pos+n+1), bits[pos:pos+n]); err != nil {
					t.Fatalf("%s: chunk %d+%d: %v", v.name, pos, n, err)
				}
				pos += n
			}
		}
		checkBFState(t, f, &g.State, g.Added(t), redisbloomtest.Range(t, g.AbsentProbes))
	}
}

// TestRedisBloomScanDumpLarge: a filter over MaxChunk is dumped
// in 16 MiB chunks that never cross into the next filter, and loads back.
func TestRedisBloomScanDumpLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates two 18 MB filters")
	}
	f, err := New(Config{Capacity: 15_000_000, ErrorRate: 0.01, Expansion: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		f.AddString(fmt.Sprint(i))
	}
	size := f.Link(0).Bytes
	if size <= MaxChunk {
		t.Fatalf("filter of %d bytes", size)
	}
	iter, header := f.ScanDump(0, nil)
	g, err := NewAtomicFromHeader(header, 0)
	if err != nil {
		t.Fatal(err)
	}
	var lens []int
	for {
		next, chunk := f.ScanDump(iter, nil)
		if next == 0 {
			break
		}
		lens = append(lens, len(chunk))
		if err := g.LoadChunk(next, chunk); err != nil {
			t.Fatal(err)
		}
		iter = next
	}
	if len(lens) != 2 || lens[0] != MaxChunk || uint64(lens[1]) != size-MaxChunk {
		t.Fatalf("chunks of %v bytes for a filter of %d", lens, size)
	}
	a, _ := f.MarshalBinary()
	b, _ := g.MarshalBinary()
	if !bytes.Equal(a, b) {
		t.Fatal("the loaded chain differs")
	}
}

// TestRedisBloomGrowthRules: NONSCALING refuses a new item when full but
// answers 0 for a present one; expansion 0 is NONSCALING; a byte limit
// stops growth without changing the chain.
func TestRedisBloomGrowthRules(t *testing.T) {
	if _, err := New(Config{Capacity: 10, ErrorRate: 0.01}); !errors.Is(err, ohbloom.ErrInvalidConfig) {
		t.Errorf("expansion 0 without NonScaling: %v", err)
	}
	for _, c := range []Config{{Capacity: 0, ErrorRate: 0.01, Expansion: 2}, {Capacity: 1, ErrorRate: 1, Expansion: 2},
		{Capacity: 1, ErrorRate: math.NaN(), Expansion: 2}, {Capacity: 1, ErrorRate: -0.1, Expansion: 2}} {
		if _, err := New(c); !errors.Is(err, ohbloom.ErrInvalidConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, v := range bfVariants {
		f, err := v.fromConfig(Config{Capacity: 3, ErrorRate: 0.01, NonScaling: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"a", "b", "c"} {
			if added, err := f.Add([]byte(k)); !added || err != nil {
				t.Fatalf("%s: add %s: %v %v", v.name, k, added, err)
			}
		}
		if added, err := f.Add([]byte("a")); added || err != nil {
			t.Errorf("%s: a present item in a full filter: %v %v", v.name, added, err)
		}
		if _, err := f.Add([]byte("d")); !errors.Is(err, ErrFull) {
			t.Errorf("%s: a new item in a full filter: %v", v.name, err)
		}
		if in := f.Info(); in.Items != 3 || in.Filters != 1 || !in.NonScaling || in.Expansion != 0 || in.Size != 32+64+8 {
			t.Errorf("%s: info %+v", v.name, in)
		}

		// 100 items at 1% take 144 bytes, the next 200 at 0.5% 312: a
		// limit of 400 bytes stops the second filter.
		f, _ = v.fromConfig(Config{Capacity: 100, ErrorRate: 0.01, Expansion: 2, MaxBytes: 400})
		i := 0
		var growErr error
		for ; i < 1000 && growErr == nil; i++ {
			_, growErr = f.Add([]byte(fmt.Sprint(i)))
		}
		if !errors.Is(growErr, ErrCannotGrow) || !errors.Is(growErr, ohbloom.ErrTooLarge) {
			t.Fatalf("%s: past the limit: %v", v.name, growErr)
		}
		_, before := f.ScanDump(0, nil)
		if _, err := f.Add([]byte("one more")); !errors.Is(err, ErrCannotGrow) {
			t.Errorf("%s: %v", v.name, err)
		}
		if _, after := f.ScanDump(0, nil); !bytes.Equal(before, after) || f.Info().Items != 100 {
			t.Errorf("%s: a refused add changed the chain", v.name)
		}
	}
	// Growth with expansion 0 in a loaded scaling chain fails as
	// RedisBloom's does (−1).
	f, _ := New(Config{Capacity: 1, ErrorRate: 0.01, Expansion: 2})
	_, header := f.ScanDump(0, nil)
	binary.LittleEndian.PutUint32(header[16:], 0)
	g, err := NewFromHeader(header, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.AddString("x")
	if _, err := g.AddString("y"); !errors.Is(err, ErrCannotGrow) {
		t.Errorf("growth 0: %v", err)
	}
}

// TestRedisBloomMarshal: both encodings round-trip every golden chain,
// the two variants read each other's bytes, and damage is detected.
func TestRedisBloomMarshal(t *testing.T) {
	for _, g := range redisbloomtest.Load(t, "..") {
		f := bfChainFromDump(t, &g.AfterMore.State)
		data, _ := f.MarshalBinary()
		var buf bytes.Buffer
		if n, err := f.WriteTo(&buf); err != nil || n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("%s: WriteTo differs from MarshalBinary: %v", g.Name, err)
		}
		var u Filter
		if err := u.UnmarshalBinary(data); err != nil || !u.Equal(f) {
			t.Fatalf("%s: UnmarshalBinary: %v", g.Name, err)
		}
		var a AtomicFilter
		if n, err := a.ReadFrom(bytes.NewReader(append(bytes.Clone(data), 1, 2, 3))); err != nil || n != int64(len(data)) {
			t.Fatalf("%s: ReadFrom: %v, %d of %d bytes", g.Name, err, n, len(data))
		}
		checkBFState(t, &a, &g.AfterMore.State, g.Added(t), redisbloomtest.Range(t, g.AbsentProbes))
		again, _ := a.MarshalBinary()
		if !bytes.Equal(again, data) {
			t.Fatalf("%s: the atomic chain encodes differently", g.Name)
		}
		for _, cut := range []int{0, 5, 8, 12, 40, len(data) - 9, len(data) - 1} {
			var r Filter
			if _, err := r.ReadFrom(bytes.NewReader(data[:cut])); !errors.Is(err, ohbloom.ErrTruncated) {
				t.Errorf("%s: ReadFrom of %d bytes: %v", g.Name, cut, err)
			}
			if err := r.UnmarshalBinary(data[:cut]); err == nil {
				t.Errorf("%s: UnmarshalBinary of %d bytes succeeded", g.Name, cut)
			}
		}
		for _, at := range []int{9, 20, 40, len(data) / 2, len(data) - 3} {
			bad := bytes.Clone(data)
			bad[at] ^= 0x10
			var r Filter
			if err := r.UnmarshalBinary(bad); !errors.Is(err, ohbloom.ErrChecksum) {
				t.Errorf("%s: flip at %d: %v", g.Name, at, err)
			}
			if _, err := r.ReadFrom(bytes.NewReader(bad)); err == nil {
				t.Errorf("%s: ReadFrom of a flip at %d succeeded", g.Name, at)
			}
		}
	}
	var r Filter
	if err := r.UnmarshalBinary([]byte("OHBLOOM\x00 and more bytes")); !errors.Is(err, ohbloom.ErrNotFilter) {
		t.Errorf("foreign bytes: %v", err)
	}
	if err := r.UnmarshalBinary([]byte("OHRBCHN\x02 and more bytes")); !errors.Is(err, ohbloom.ErrVersion) {
		t.Errorf("version 2: %v", err)
	}
}

// TestRedisBloomReadFromAllocation: a stream whose header claims a 1 GiB
// filter and then ends allocates a bounded multiple of what it sent.
func TestRedisBloomReadFromAllocation(t *testing.T) {
	const options = Force64 | NoRound | NoScaling
	p, err := bfInit(800_000_000, 0.01, options)
	if err != nil {
		t.Fatal(err)
	}
	header := encodeBFHeader(nil, &bfChain{options: options, growth: 2}, 1, func(int) (*bfParams, uint64) { return &p, 0 })
	stream := append([]byte(bfMagic), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(stream[8:], uint32(len(header)))
	stream = append(stream, header...)
	stream = append(stream, make([]byte, 3<<20)...) // 3 MiB of the ~958 MB
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var r Filter
	_, err = r.ReadFrom(bytes.NewReader(stream))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ohbloom.ErrTruncated) {
		t.Fatalf("ReadFrom: %v", err)
	}
	// 1 MiB first, then 16 times the 1 MiB received: 17 MiB, and the I/O
	// buffer.
	if got := after.TotalAlloc - before.TotalAlloc; got > 20<<20 {
		t.Errorf("allocated %d bytes for a stream of %d", got, len(stream))
	}
}

// TestRedisBloomAtomicConcurrent: goroutines add distinct items to one
// chain that grows under them while others test: no item is ever lost,
// the dump is one RedisBloom accepts, and it reloads with the same answers.
func TestRedisBloomAtomicConcurrent(t *testing.T) {
	const workers, perWorker = 4, 3000
	f, err := NewAtomic(Config{Capacity: 500, ErrorRate: 0.01, Expansion: 2})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				key := fmt.Appendf(nil, "w%d-%d", w, i)
				if _, err := f.Add(key); err != nil {
					t.Error(err)
					return
				}
				if !f.Test(key) {
					t.Errorf("%s absent right after its Add", key)
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			f.TestString("w0-0")
			if _, h := f.ScanDump(0, nil); len(h) == 0 {
				t.Error("empty header")
			}
		}
	})
	wg.Wait()
	close(stop)
	readers.Wait()
	for w := range workers {
		for i := range perWorker {
			if !f.Test(fmt.Appendf(nil, "w%d-%d", w, i)) {
				t.Fatalf("w%d-%d lost", w, i)
			}
		}
	}
	in := f.Info()
	if in.Items > workers*perWorker || in.Items < workers*perWorker*9/10 || in.Filters < 5 {
		t.Errorf("info %+v after %d distinct items", in, workers*perWorker)
	}
	var dump [][]byte
	iter, h := f.ScanDump(0, nil)
	g, err := NewFromHeader(h, 0)
	if err != nil {
		t.Fatalf("the header after concurrent adds: %v", err)
	}
	for {
		next, chunk := f.ScanDump(iter, nil)
		if next == 0 {
			break
		}
		dump = append(dump, chunk)
		if err := g.LoadChunk(next, chunk); err != nil {
			t.Fatal(err)
		}
		iter = next
	}
	for w := range workers {
		for i := range perWorker {
			if !g.Test(fmt.Appendf(nil, "w%d-%d", w, i)) {
				t.Fatal("the reloaded chain lost an item")
			}
		}
	}
}

// TestRedisBloomAtomicMatchesPlain: sequential adds to both variants give
// the same replies, errors and bytes, through growth.
func TestRedisBloomAtomicMatchesPlain(t *testing.T) {
	c := Config{Capacity: 50, ErrorRate: 0.02, Expansion: 3}
	p, _ := New(c)
	a, _ := NewAtomic(c)
	for i := range 5000 {
		k := fmt.Sprint("item-", i%4000)
		ap, ep := p.AddString(k)
		aa, ea := a.AddString(k)
		if ap != aa || ep != ea {
			t.Fatalf("%s: plain %v %v, atomic %v %v", k, ap, ep, aa, ea)
		}
	}
	x, _ := p.MarshalBinary()
	y, _ := a.MarshalBinary()
	if !bytes.Equal(x, y) || p.Info() != a.Info() || p.Link(3) != a.Link(3) {
		t.Fatal("the variants differ")
	}
	if !strings.Contains(p.String(), "5 filters") || a.String() != p.String() || p.Options() != a.Options() {
		t.Errorf("%s / %s", p, a)
	}
}

// TestRedisBloomZeroAllocs: adds and tests allocate nothing.
func TestRedisBloomZeroAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	p, _ := New(Config{Capacity: 100_000, ErrorRate: 0.01, Expansion: 2})
	a, _ := NewAtomic(Config{Capacity: 100_000, ErrorRate: 0.01, Expansion: 2})
	key := []byte("some key of a few bytes")
	i := 0
	for name, fn := range map[string]func(){
		"plain add":         func() { key[0] = byte(i); i++; p.Add(key) },
		"plain test":        func() { p.Test(key) },
		"plain test string": func() { p.TestString("a string key") },
		"plain add string":  func() { p.AddString("a string key") },
		"atomic add":        func() { key[1] = byte(i); i++; a.Add(key) },
		"atomic test":       func() { a.Test(key) },
		"atomic add string": func() { a.AddString("a string key") },
		"atomic test str":   func() { a.TestString("a string key") },
		"atomic hash pair":  func() { key[2] = byte(i); i++; a.AddHash(a.Hash(key)) },
		"atomic test hash":  func() { a.TestHash(a.Hash(key)) },
	} {
		if n := testing.AllocsPerRun(200, fn); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

var _ io.ReaderFrom = (*Filter)(nil)

// TestRedisBloomAddHashReplays: the pairs of the adds that were new,
// replayed with AddHash into a fresh chain in the same order, give the
// same chain byte for byte, growth and counts included; and replaying them
// all again over that chain changes nothing (a replay over a snapshot that
// already holds some of them is exact).
func TestRedisBloomAddHashReplays(t *testing.T) {
	c := Config{Capacity: 40, ErrorRate: 0.03, Expansion: 3}
	live, _ := NewAtomic(c)
	plain, _ := New(c)
	var log [][2]uint64
	for i := range 3000 {
		item := []byte(fmt.Sprint("item-", i%2500))
		a, b := live.Hash(item)
		if pa, pb := plain.Hash(item); pa != a || pb != b {
			t.Fatalf("%s: the variants hash differently", item)
		}
		isNew, err := live.AddHash(a, b)
		if err != nil {
			t.Fatal(err)
		}
		if isNew {
			log = append(log, [2]uint64{a, b})
		}
		if live.TestHash(a, b) != live.Test(item) || !live.TestHash(a, b) {
			t.Fatalf("%s: TestHash and Test disagree after the add", item)
		}
	}
	if live.Info().Filters < 4 {
		t.Fatalf("the chain did not grow: %+v", live.Info())
	}
	replayed, _ := NewAtomic(c)
	for _, h := range log {
		if isNew, err := replayed.AddHash(h[0], h[1]); !isNew || err != nil {
			t.Fatalf("a logged add replayed as %v, %v", isNew, err)
		}
		plain.AddHash(h[0], h[1])
	}
	want, _ := live.MarshalBinary()
	got, _ := replayed.MarshalBinary()
	fromPlain, _ := plain.MarshalBinary()
	if !bytes.Equal(want, got) || !bytes.Equal(want, fromPlain) {
		t.Fatal("the replayed chain differs from the live one")
	}
	for _, h := range log {
		if isNew, _ := replayed.AddHash(h[0], h[1]); isNew {
			t.Fatal("a second replay of an add changed the chain")
		}
	}
	if got, _ = replayed.MarshalBinary(); !bytes.Equal(want, got) {
		t.Fatal("a second replay changed the bytes")
	}
}
