// Package stream holds what the decoders of every filter format share:
// reading exactly the bytes a format announces, and growing what they
// allocate with the bytes that arrive, never with what a header claims.
package stream

import (
	"errors"
	"fmt"
	"io"
)

const (
	// Chunk is how many bytes the encoders and decoders move at a time:
	// large enough that per-call costs vanish, small enough to stay in
	// L2.
	Chunk = 64 << 10

	// FirstAlloc caps what a decoder allocates before data arrives: it
	// grows its storage as the stream proves it is that long.
	FirstAlloc = 1 << 20

	// Growth bounds how far ahead of the data a decoder's allocations run:
	// each is at most this many times what has arrived, so a stream that
	// claims more than it holds costs at most that factor, and the last
	// copy of a decoded array costs at most 1/Growth of its size on top.
	Growth = 16
)

// NextAlloc returns how many units to allocate for a stream that has
// delivered done of total: up to Growth times done, and at least first.
func NextAlloc(done, total, first uint64) uint64 {
	return min(total, max(first, Growth*done))
}

// Reader reads exactly the bytes asked for from R and counts them in N. A
// stream that ends early is an error wrapping Short (a decoder's
// "truncated" sentinel).
type Reader struct {
	R     io.Reader
	N     int64
	Short error
}

// Fill reads len(b) bytes into b.
func (e *Reader) Fill(b []byte) error {
	n, err := io.ReadFull(e.R, b)
	e.N += int64(n)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: stream ended after %d bytes", e.Short, e.N)
	}
	return err
}
