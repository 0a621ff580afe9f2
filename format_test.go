package ohbloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ohbloom/ohbloom/internal/sysmem"
	"github.com/zeebo/xxh3"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenFilters are the filters whose bytes testdata/v1 pins.
func goldenFilters() map[string]*Filter {
	small := New(100, 0.01)
	for i := range 100 {
		small.AddString(fmt.Sprintf("key-%d", i))
	}
	seeded, _ := NewWithConfig(Config{Blocks: 2, K: 16, Seed: 0xdeadbeef})
	for i := range 10 {
		seeded.AddString(fmt.Sprintf("key-%d", i))
	}
	return map[string]*Filter{"small.bin": small, "k16-seeded.bin": seeded}
}

func TestGoldenFiles(t *testing.T) {
	for name, f := range goldenFilters() {
		path := filepath.Join("testdata", "v1", name)
		got, _ := f.MarshalBinary()
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: encoding changed (%d bytes, golden %d); a format change needs a new version", name, len(got), len(want))
		}
		var stream bytes.Buffer
		if n, err := f.WriteTo(&stream); err != nil || n != int64(len(want)) || !bytes.Equal(stream.Bytes(), want) {
			t.Errorf("%s: WriteTo wrote %d bytes (err %v), not the golden bytes", name, n, err)
		}
		var d Filter
		if err := d.UnmarshalBinary(want); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !d.Equal(f) || d.Capacity() != f.Capacity() || d.TargetFPR() != f.TargetFPR() {
			t.Errorf("%s: decodes to a different filter", name)
		}
		for i := range 10 {
			if !d.TestString(fmt.Sprintf("key-%d", i)) {
				t.Errorf("%s: key-%d not found", name, i)
			}
		}
	}
}

// TestFormatLayout checks the bytes against the format's description,
// independently of the encoder.
func TestFormatLayout(t *testing.T) {
	f, _ := NewWithConfig(Config{Blocks: 3, K: 6, Seed: 42})
	f.AddString("x")
	data, _ := f.MarshalBinary()
	le := binary.LittleEndian
	if len(data) != 128+3*64+8 {
		t.Fatalf("%d bytes", len(data))
	}
	if string(data[:8]) != "OHBLOOM\x00" || le.Uint16(data[8:]) != 1 || data[10] != 1 || data[11] != 1 || data[12] != 6 {
		t.Errorf("header start % x", data[:16])
	}
	if le.Uint64(data[16:]) != 42 || le.Uint64(data[24:]) != 3 {
		t.Error("seed or block count misplaced")
	}
	for i, s := range []uint16{77, 81, 83, 85, 89, 97} {
		if le.Uint16(data[48+2*i:]) != s {
			t.Errorf("partition %d size %d", i, le.Uint16(data[48+2*i:]))
		}
	}
	if le.Uint64(data[120:]) != xxh3.Hash(data[:120]) || le.Uint64(data[len(data)-8:]) != xxh3.Hash(data[:len(data)-8]) {
		t.Error("checksums")
	}
	h := xxh3.HashStringSeed("x", 42)
	b, _ := mul64(h, 3)
	word := 128 + int(b)*64
	set := 0
	for w := range 8 {
		set += popcount(le.Uint64(data[word+8*w:]))
	}
	if set != 6 {
		t.Errorf("block %d of the encoding holds %d set bits, want 6", b, set)
	}
}

func TestDecodeErrors(t *testing.T) {
	f := New(1000, 0.01)
	f.AddString("a")
	good, _ := f.MarshalBinary()
	headerOnly := good[:headerSize]

	corrupt := func(edit func(b []byte)) []byte {
		b := bytes.Clone(good)
		edit(b)
		return b
	}
	// rehash fixes the header checksum after an edit, so the edit reaches
	// the check it is aimed at.
	rehash := func(b []byte) { binary.LittleEndian.PutUint64(b[120:], xxh3.Hash(b[:120])) }

	// ReadFrom reads exactly one filter, so the bytes after it are not its
	// business: where the two decoders differ, stream says what ReadFrom
	// returns (errNone: success).
	errNone := errors.New("no error")
	cases := []struct {
		name   string
		data   []byte
		want   error
		stream error
	}{
		{"empty", nil, ErrTruncated, nil},
		{"foreign", []byte("PK\x03\x04 this is a zip file, not a filter, really"), ErrNotFilter, nil},
		{"short foreign", []byte("GIF"), ErrNotFilter, nil},
		{"magic only", good[:8], ErrTruncated, nil},
		{"header cut", good[:100], ErrTruncated, nil},
		{"header only", headerOnly, ErrTruncated, nil},
		{"data cut", good[:len(good)-100], ErrTruncated, nil},
		{"trailer cut", good[:len(good)-1], ErrTruncated, nil},
		{"trailing garbage", append(bytes.Clone(good), 0), ErrCorrupt, errNone},
		{"version 2", corrupt(func(b []byte) { b[8] = 2; rehash(b) }), ErrVersion, nil},
		{"version 0", corrupt(func(b []byte) { b[8] = 0 }), ErrVersion, nil},
		{"header bit flip", corrupt(func(b []byte) { b[30] ^= 1 }), ErrChecksum, nil},
		{"data bit flip", corrupt(func(b []byte) { b[200] ^= 4 }), ErrChecksum, nil},
		{"trailer bit flip", corrupt(func(b []byte) { b[len(b)-1] ^= 0x80 }), ErrChecksum, nil},
		{"kind 9", corrupt(func(b []byte) { b[10] = 9; rehash(b) }), ErrUnknownKind, nil},
		{"hash 7", corrupt(func(b []byte) { b[11] = 7; rehash(b) }), ErrUnknownHash, nil},
		{"k 1", corrupt(func(b []byte) { b[12] = 1; rehash(b) }), ErrUnknownPartition, nil},
		{"k 17", corrupt(func(b []byte) { b[12] = 17; rehash(b) }), ErrUnknownPartition, nil},
		{"k 7 with k=6 sizes", corrupt(func(b []byte) { b[12] = 7; rehash(b) }), ErrUnknownPartition, nil},
		{"size changed", corrupt(func(b []byte) { b[48]++; rehash(b) }), ErrUnknownPartition, nil},
		{"reserved byte", corrupt(func(b []byte) { b[13] = 1; rehash(b) }), ErrCorrupt, nil},
		{"reserved tail", corrupt(func(b []byte) { b[100] = 1; rehash(b) }), ErrCorrupt, nil},
		{"zero blocks", corrupt(func(b []byte) { binary.LittleEndian.PutUint64(b[24:], 0); rehash(b) }), ErrCorrupt, nil},
		{"absurd blocks", corrupt(func(b []byte) { binary.LittleEndian.PutUint64(b[24:], 1<<60); rehash(b) }), ErrCorrupt, nil},
		{"more blocks than data", corrupt(func(b []byte) { b[24]++; rehash(b) }), ErrTruncated, nil},
		{"fewer blocks than data", corrupt(func(b []byte) { b[24]--; rehash(b) }), ErrCorrupt, ErrChecksum},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The receiver keeps its filter on every error.
			keep := New(10, 0.1)
			keep.AddString("kept")
			before := keep.Clone()
			err := keep.UnmarshalBinary(c.data)
			if !errors.Is(err, c.want) {
				t.Errorf("UnmarshalBinary: %v, want %v", err, c.want)
			}
			if !keep.Equal(before) {
				t.Error("UnmarshalBinary changed the filter on error")
			}
			want := c.want
			if c.stream != nil {
				want = c.stream
			}
			akeep := before.ToAtomic()
			_, err = akeep.ReadFrom(bytes.NewReader(c.data))
			if want == errNone && err != nil || want != errNone && !errors.Is(err, want) {
				t.Errorf("ReadFrom: %v, want %v", err, want)
			}
			if err != nil && !akeep.ToPlain().Equal(before) {
				t.Error("ReadFrom changed the filter on error")
			}
		})
	}
}

// TestReadFromStreams checks that ReadFrom reads exactly one filter from a
// stream holding several, and reports read errors that are not EOF as is.
func TestReadFromStreams(t *testing.T) {
	a, b := New(100, 0.01), New(5000, 0.001)
	a.AddString("a")
	b.AddString("b")
	var s bytes.Buffer
	na, _ := a.WriteTo(&s)
	nb, _ := b.ToAtomic().WriteTo(&s)
	var ra, rb Filter
	if n, err := ra.ReadFrom(&s); err != nil || n != na || !ra.Equal(a) {
		t.Fatalf("first: n=%d/%d err=%v", n, na, err)
	}
	if n, err := rb.ReadFrom(&s); err != nil || n != nb || !rb.Equal(b) {
		t.Fatalf("second: n=%d/%d err=%v", n, nb, err)
	}
	boom := errors.New("disk on fire")
	data, _ := b.MarshalBinary()
	_, err := rb.ReadFrom(io.MultiReader(bytes.NewReader(data[:3000]), errReader{boom}))
	if !errors.Is(err, boom) {
		t.Fatalf("ReadFrom over a failing reader: %v", err)
	}
	if _, err := b.WriteTo(errWriter{boom}); !errors.Is(err, boom) {
		t.Fatalf("WriteTo to a failing writer: %v", err)
	}
}

// TestReadFromGrowsWithData: a header that announces half the machine's
// memory followed by a few bytes must fail as truncated having allocated
// about what arrived, not what was announced.
func TestReadFromGrowsWithData(t *testing.T) {
	claim := min(MaxBlocks, sysmem.RAMPlusSwap()/blockBytes/2)
	hdr := header{kind: kindBlocked, hash: hashXXH3, k: 6, nblocks: claim}.encode()
	stream := append(hdr[:], make([]byte, 5000)...)
	var f Filter
	if _, err := f.ReadFrom(bytes.NewReader(stream)); !errors.Is(err, ErrTruncated) {
		t.Fatalf("ReadFrom: %v", err)
	}
	var m1, m2 runtimeMem
	m1.read()
	f.ReadFrom(bytes.NewReader(stream))
	m2.read()
	if grew := m2.totalAlloc - m1.totalAlloc; grew > 4<<20 {
		t.Errorf("ReadFrom allocated %d bytes for a 5 kB stream announcing %d blocks", grew, claim)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }
