package stream

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

var errShort = errors.New("short")

func TestReaderFill(t *testing.T) {
	r := &Reader{R: iotest.OneByteReader(bytes.NewReader([]byte("abcdef"))), Short: errShort}
	b := make([]byte, 4)
	if err := r.Fill(b); err != nil || string(b) != "abcd" || r.N != 4 {
		t.Fatalf("Fill = %v, %q, N %d", err, b, r.N)
	}
	if err := r.Fill(b); !errors.Is(err, errShort) || r.N != 6 {
		t.Fatalf("Fill past the end = %v, N %d", err, r.N)
	}
	if err := r.Fill(b[:1]); !errors.Is(err, errShort) || r.N != 6 {
		t.Fatalf("Fill at the end = %v, N %d", err, r.N)
	}
	broken := &Reader{R: iotest.ErrReader(io.ErrClosedPipe), Short: errShort}
	if err := broken.Fill(b); !errors.Is(err, io.ErrClosedPipe) || errors.Is(err, errShort) {
		t.Fatalf("Fill of a failing reader = %v", err)
	}
}

func TestNextAlloc(t *testing.T) {
	for _, c := range []struct{ done, total, first, want uint64 }{
		{0, 1 << 30, 1 << 17, 1 << 17}, // nothing yet: the first allocation
		{1 << 17, 1 << 30, 1 << 17, Growth << 17},
		{1 << 26, 1 << 30, 1 << 17, 1 << 30}, // never past the total
		{0, 10, 1 << 17, 10},
	} {
		if got := NextAlloc(c.done, c.total, c.first); got != c.want {
			t.Errorf("NextAlloc(%d, %d, %d) = %d, want %d", c.done, c.total, c.first, got, c.want)
		}
	}
}
