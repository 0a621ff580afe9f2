package ohbloom

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/zeebo/xxh3"
)

// lender is a reader that lends the memory of the blocks a decoder is
// about to read (Filter.ReadFrom's InPlace): a copy of the next n bytes in
// memory of its own, 64-byte aligned, or misaligned by 8 bytes with skew,
// which the decoder must not use.
type lender struct {
	r    *bytes.Reader
	skew bool
	lent [][]byte // what InPlace returned, in order
}

func (l *lender) Read(p []byte) (int, error) { return l.r.Read(p) }

func (l *lender) InPlace(n int) []byte {
	if n > l.r.Len() {
		return nil // the decoder reads, and finds the input short
	}
	mem := blockMemory(alignedBlocks(uint64(n/blockBytes) + 1))
	if l.skew {
		mem = mem[8:]
	}
	mem = mem[:n]
	at, _ := l.r.Seek(0, io.SeekCurrent)
	l.r.ReadAt(mem, at)
	l.lent = append(l.lent, mem)
	return mem
}

// sameMemory reports whether a and b start at the same address.
func sameMemory(a []block, b []byte) bool {
	return len(a) > 0 && len(b) > 0 && blockAddress(&a[0]) == addressOf(b)
}

func TestReadFromInPlace(t *testing.T) {
	f := NewAtomic(10_000, 0.01)
	for i := range 3000 {
		f.AddString(fmt.Sprint(i))
	}
	var buf bytes.Buffer
	f.WriteTo(&buf)
	enc := buf.Bytes()
	for _, skew := range []bool{false, true} {
		l := &lender{r: bytes.NewReader(enc), skew: skew}
		var g AtomicFilter
		n, err := g.ReadFrom(l)
		if err != nil || n != int64(len(enc)) || len(l.lent) != 1 {
			t.Fatalf("skew %v: ReadFrom = %d, %v; lent %d times", skew, n, err, len(l.lent))
		}
		if !g.Equal(f) {
			t.Fatalf("skew %v: the filter read in place differs", skew)
		}
		// Aligned, the lent memory is the filter's: an Add shows in it.
		// Misaligned, it was copied.
		if got := sameMemory(g.blocks, l.lent[0]); got != !skew {
			t.Fatalf("skew %v: the filter uses the lent memory: %v", skew, got)
		}
		before := bytes.Clone(l.lent[0])
		g.AddString("a key not added before")
		if changed := !bytes.Equal(before, l.lent[0]); changed != !skew {
			t.Fatalf("skew %v: an Add changed the lent memory: %v", skew, changed)
		}
	}
	// A changed byte in the blocks is found before the memory is used.
	bad := bytes.Clone(enc)
	bad[headerSize+100] ^= 1
	var g AtomicFilter
	if _, err := g.ReadFrom(&lender{r: bytes.NewReader(bad)}); !errors.Is(err, ErrChecksum) || g.blocks != nil {
		t.Fatalf("a changed block: %v, filter changed %v", err, g.blocks != nil)
	}
	// Cut before the checksum.
	if _, err := g.ReadFrom(&lender{r: bytes.NewReader(enc[:len(enc)-3])}); !errors.Is(err, ErrTruncated) {
		t.Fatalf("cut in the checksum: %v", err)
	}
}

func TestReadFromInPlaceCounting(t *testing.T) {
	f, _ := NewAtomicCountingWithConfig(Config{Capacity: 5000, FPR: 0.01})
	for i := range 2000 {
		f.AddString(fmt.Sprint(i))
	}
	var enc bytes.Buffer
	f.WriteTo(&enc)
	l := &lender{r: bytes.NewReader(enc.Bytes())}
	var g AtomicCountingFilter
	if _, err := g.ReadFrom(l); err != nil || len(l.lent) != 1 || !sameMemory(g.blocks, l.lent[0]) {
		t.Fatalf("ReadFrom = %v; lent %d times", err, len(l.lent))
	}
	for i := range 2000 {
		if !g.TestString(fmt.Sprint(i)) {
			t.Fatalf("key %d lost", i)
		}
	}
	before := bytes.Clone(l.lent[0])
	if g.RemoveString("7") != nil || bytes.Equal(before, l.lent[0]) {
		t.Fatal("a Remove did not change the lent memory")
	}
}

func TestReadFromInPlaceScalable(t *testing.T) {
	s, _ := NewAtomicScalableWithConfig(Config{Capacity: 500, FPR: 0.01})
	for i := range 4000 {
		s.AddString(fmt.Sprint(i))
	}
	if s.Stages() < 3 {
		t.Fatalf("%d stages", s.Stages())
	}
	var enc bytes.Buffer
	s.WriteTo(&enc)
	l := &lender{r: bytes.NewReader(enc.Bytes())}
	var g AtomicScalableFilter
	if _, err := g.ReadFrom(l); err != nil || len(l.lent) != s.Stages() {
		t.Fatalf("ReadFrom = %v; lent %d times for %d stages", err, len(l.lent), s.Stages())
	}
	for i := range g.Stages() {
		if !sameMemory(g.Stage(i).blocks, l.lent[i]) || !g.Stage(i).Equal(s.Stage(i)) {
			t.Fatalf("stage %d is not the lent memory, or differs", i)
		}
	}
	for i := range 4000 {
		if !g.TestString(fmt.Sprint(i)) {
			t.Fatalf("key %d lost", i)
		}
	}
	// The whole encoding's checksum covers the lent stages too: change a
	// byte of a stage's blocks and its own checksum, and the outer one
	// still catches it.
	bad := bytes.Clone(enc.Bytes())
	var one bytes.Buffer
	s.Stage(0).WriteTo(&one)
	at := bytes.Index(bad, one.Bytes())
	if at < 0 {
		t.Fatal("stage 0 not found in the encoding")
	}
	stage := bad[at : at+one.Len()]
	stage[headerSize+64] ^= 1
	var h Filter
	if err := h.UnmarshalBinary(stage); err == nil {
		t.Fatal("the changed stage decodes")
	}
	sum := stage[:len(stage)-trailerSize]
	putUint64(stage[len(stage)-trailerSize:], xxh3.Hash(sum))
	if err := h.UnmarshalBinary(stage); err != nil {
		t.Fatalf("the changed stage with its checksum fixed: %v", err)
	}
	var g2 AtomicScalableFilter
	if _, err := g2.ReadFrom(&lender{r: bytes.NewReader(bad)}); !errors.Is(err, ErrChecksum) {
		t.Fatalf("a stage changed under its own checksum: %v", err)
	}
}
