package ohbloom

import (
	"errors"
	"fmt"
	"io"

	"github.com/zeebo/xxh3"
)

// maxStages bounds the stages a decoder accepts: 64 doublings is far past
// MaxBlocks.
const maxStages = 64

// hashingWriter passes writes through and hashes them.
type hashingWriter struct {
	w   io.Writer
	sum *xxh3.Hasher
}

func (h hashingWriter) Write(p []byte) (int, error) {
	n, err := h.w.Write(p)
	h.sum.Write(p[:n])
	return n, err
}

// hashingReader passes reads through and hashes them.
type hashingReader struct {
	r   io.Reader
	sum *xxh3.Hasher
}

func (h hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.sum.Write(p[:n])
	return n, err
}

// writeStages writes a scalable filter: a header of kind 3, whose block
// count field holds the number of stages, its capacity the first stage's
// and its rate the overall target; then every stage as Filter.WriteTo
// writes it, oldest first; then XXH3_64bits of everything before.
func writeStages(w io.Writer, c Config, stages []*layout) (int64, error) {
	sum := xxh3.New()
	hw := hashingWriter{w, sum}
	hdr := header{kind: kindScalable, hash: hashXXH3, seed: c.Seed,
		nblocks: uint64(len(stages)), capacity: c.Capacity, targetFPR: c.FPR}.encode()
	n, err := hw.Write(hdr[:])
	written := int64(n)
	if err != nil {
		return written, err
	}
	for _, l := range stages {
		n, err := writeBlocks(hw, l.header(), l.blocks)
		written += n
		if err != nil {
			return written, err
		}
	}
	var tail [trailerSize]byte
	putUint64(tail[:], sum.Sum64())
	n, err = w.Write(tail[:])
	return written + int64(n), err
}

// readStages reads what writeStages wrote: the Config and the stages,
// each checked against the Config's own stage i.
func readStages(r io.Reader) (Config, []layout, int64, error) {
	sum := xxh3.New()
	hr := hashingReader{r, sum}
	var read int64
	var hdr [headerSize]byte
	n, err := io.ReadFull(hr, hdr[:])
	read += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return Config{}, nil, read, err
	}
	h, err := decodeHeader(hdr[:n])
	if err == nil {
		err = h.wantKind(kindScalable)
	}
	if err != nil {
		return Config{}, nil, read, err
	}
	if h.nblocks > maxStages {
		return Config{}, nil, read, fmt.Errorf("%w: %d stages", ErrCorrupt, h.nblocks)
	}
	c := Config{Capacity: h.capacity, FPR: h.targetFPR, Seed: h.seed}
	if _, _, _, err := c.geometry(bitTable); err != nil {
		return c, nil, read, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	stages := make([]layout, 0, h.nblocks)
	for i := range int(h.nblocks) {
		sh, blocks, n, err := readBlocks(hr, kindBlocked)
		read += n
		if err != nil {
			return c, nil, read, fmt.Errorf("stage %d: %w", i, err)
		}
		want := stageConfig(c, c.Seed, i)
		if sh.seed != c.Seed || sh.capacity != want.Capacity || sh.targetFPR != want.FPR {
			return c, nil, read, fmt.Errorf("%w: stage %d is sized for %d keys at %v with seed %#x, want %d at %v with %#x",
				ErrCorrupt, i, sh.capacity, sh.targetFPR, sh.seed, want.Capacity, want.FPR, c.Seed)
		}
		l := sh.layout()
		l.blocks = blocks
		stages = append(stages, l)
	}
	got := sum.Sum64()
	var tail [trailerSize]byte
	n, err = io.ReadFull(r, tail[:])
	read += int64(n)
	if err != nil {
		return c, nil, read, fmt.Errorf("%w: stream ended after %d bytes", ErrTruncated, read)
	}
	if rec := getUint64(tail[:]); rec != got {
		return c, nil, read, fmt.Errorf("%w: data hashes to %#x, recorded %#x", ErrChecksum, got, rec)
	}
	return c, stages, read, nil
}

// WriteTo writes the filter: a header like Filter.WriteTo's with filter
// kind 3, k 0 and no partition sizes, whose block count field holds the
// number of stages, capacity the first stage's capacity and target rate the
// overall one; then each stage as Filter.WriteTo writes it, oldest first;
// then XXH3_64bits (seed 0) of every byte before, little-endian.
func (s *ScalableFilter) WriteTo(w io.Writer) (int64, error) {
	ls := make([]*layout, len(s.stages))
	for i, f := range s.stages {
		ls[i] = &f.layout
	}
	return writeStages(w, s.config, ls)
}

// ReadFrom replaces s with a scalable filter read from r. The count of new
// keys in the newest stage, which decides when it grows, is not stored: it
// restarts from the stage's estimated count. On error s is unchanged.
func (s *ScalableFilter) ReadFrom(r io.Reader) (int64, error) {
	c, stages, n, err := readStages(r)
	if err != nil {
		return n, err
	}
	fs := make([]*Filter, len(stages))
	for i := range stages {
		fs[i] = &Filter{stages[i]}
	}
	*s = ScalableFilter{config: c, stages: fs, added: fs[len(fs)-1].EstimatedCount()}
	return n, nil
}

// WriteTo writes the filter as ScalableFilter.WriteTo does. A stage added
// during the write may or may not be in it.
func (s *AtomicScalableFilter) WriteTo(w io.Writer) (int64, error) {
	stages := *s.stages.Load()
	ls := make([]*layout, len(stages))
	for i, st := range stages {
		ls[i] = &st.f.layout
	}
	return writeStages(w, s.config, ls)
}

// ReadFrom replaces s as ScalableFilter.ReadFrom does; it must not run
// concurrently with any other method.
func (s *AtomicScalableFilter) ReadFrom(r io.Reader) (int64, error) {
	c, stages, n, err := readStages(r)
	if err != nil {
		return n, err
	}
	list := make([]*atomicStage, len(stages))
	for i := range stages {
		list[i] = &atomicStage{f: &AtomicFilter{stages[i]}}
	}
	list[len(list)-1].added.Store(list[len(list)-1].f.EstimatedCount())
	s.config = c
	s.stages.Store(&list)
	s.err.Store(nil)
	return n, nil
}
