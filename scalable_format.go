package ohbloom

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ohbloom/ohbloom/internal/stream"
	"github.com/zeebo/xxh3"
)

// maxStages bounds the stages a decoder accepts. Growth 2 reaches MaxBlocks
// in well under 64 stages; growth 1 adds a stage per Capacity keys, and
// its tightening rates outgrow MaxBlocks or the machine's memory within a
// few hundred.
const maxStages = 1024

// scheduleSize is the size of the schedule record of format version 2.
const scheduleSize = 64

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

// encode returns the schedule record, see ScalableFilter.WriteTo.
func (s schedule) encode() (b [scheduleSize]byte) {
	b[0] = s.kind
	putUint64(b[8:], s.growth)
	putUint64(b[16:], math.Float64bits(s.first))
	putUint64(b[24:], s.ramp)
	putUint64(b[32:], math.Float64bits(s.rampShare))
	putUint64(b[40:], math.Float64bits(s.rampRatio))
	putUint64(b[48:], math.Float64bits(s.decay))
	putUint64(b[56:], xxh3.Hash(b[:56]))
	return b
}

func decodeSchedule(b []byte) (schedule, error) {
	if got, rec := xxh3.Hash(b[:56]), getUint64(b[56:]); got != rec {
		return schedule{}, fmt.Errorf("%w: schedule hashes to %#x, recorded %#x", ErrChecksum, got, rec)
	}
	for i, c := range b[1:8] {
		if c != 0 {
			return schedule{}, fmt.Errorf("%w: schedule byte %d is %#x", ErrCorrupt, 1+i, c)
		}
	}
	s := schedule{kind: b[0], growth: getUint64(b[8:]), first: math.Float64frombits(getUint64(b[16:])),
		ramp: getUint64(b[24:]), rampShare: math.Float64frombits(getUint64(b[32:])),
		rampRatio: math.Float64frombits(getUint64(b[40:])), decay: math.Float64frombits(getUint64(b[48:]))}
	return s, s.valid()
}

// writeStages writes a scalable filter in format version 2, see
// ScalableFilter.WriteTo.
func writeStages(w io.Writer, c Config, s schedule, stages []*core, counts []uint64) (int64, error) {
	sum := xxh3.New()
	hw := hashingWriter{w, sum}
	hdr := header{version: FormatV2, kind: kindScalable, hash: hashXXH3, seed: c.Seed,
		nblocks: uint64(len(stages)), capacity: c.Capacity, targetFPR: c.FPR}.encode()
	rec := s.encode()
	meta := make([]byte, 0, headerSize+scheduleSize+8*len(counts))
	meta = append(append(meta, hdr[:]...), rec[:]...)
	for _, n := range counts {
		meta = append(meta, 0, 0, 0, 0, 0, 0, 0, 0)
		putUint64(meta[len(meta)-8:], n)
	}
	n, err := hw.Write(meta)
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

// stageError is an error in stage i of a scalable filter's encoding. It
// says "ohbloom: " once, in front, as every decoder error does.
type stageError struct {
	i   int
	err error
}

func (e *stageError) Error() string {
	return fmt.Sprintf("ohbloom: stage %d: %s", e.i, strings.TrimPrefix(e.err.Error(), "ohbloom: "))
}

func (e *stageError) Unwrap() error { return e.err }

// decodedStages is what readStages returns.
type decodedStages struct {
	config   Config
	schedule schedule
	stages   []core
	counts   []uint64
}

// readStages reads what writeStages (or format version 1) wrote: the
// Config, the schedule, the stages, each checked against the schedule's
// stage i, and the count of new keys in each. Version 1 recorded no
// counts: every stage but the newest held its capacity when the next began,
// and the newest's count is estimated from its bits.
func readStages(r io.Reader) (decodedStages, int64, error) { return scanStages(r, true) }

// scanStages is readStages, and with keep false Inspect's reader: it
// checks everything readStages checks, but the stages it returns have no
// blocks.
func scanStages(r io.Reader, keep bool) (decodedStages, int64, error) {
	var d decodedStages
	sum := xxh3.New()
	in := &stream.Reader{R: hashingReader{r, sum}, Short: ErrTruncated}
	var hdr [headerSize]byte
	if err := in.Fill(hdr[:]); err != nil && !errors.Is(err, ErrTruncated) {
		return d, in.N, err
	}
	h, err := decodeHeader(hdr[:in.N])
	if err == nil {
		err = h.wantKind(kindScalable)
	}
	if err != nil {
		return d, in.N, err
	}
	if h.nblocks > maxStages {
		return d, in.N, fmt.Errorf("%w: %d stages, at most %d", ErrCorrupt, h.nblocks, maxStages)
	}
	if h.capacity == 0 || !(h.targetFPR > 0 && h.targetFPR < 1) {
		return d, in.N, fmt.Errorf("%w: capacity %d at rate %v", ErrCorrupt, h.capacity, h.targetFPR)
	}
	d.schedule = v1Schedule
	var counts []byte
	if h.version == FormatV2 {
		var rec [scheduleSize]byte
		if err := in.Fill(rec[:]); err != nil {
			return d, in.N, err
		}
		if d.schedule, err = decodeSchedule(rec[:]); err != nil {
			return d, in.N, err
		}
		counts = make([]byte, 8*h.nblocks) // at most 8 KiB: maxStages
		if err := in.Fill(counts); err != nil {
			return d, in.N, err
		}
	}
	c := Config{Capacity: h.capacity, FPR: h.targetFPR, Seed: h.seed, Growth: d.schedule.growth}
	d.config = c
	var newestSet uint64 // the set bits of the newest stage, when skimmed
	for i := range int(h.nblocks) {
		var sh header
		var blocks []block
		var n int64
		if keep {
			sh, blocks, n, err = readBlocks(in.R, kindBlocked)
		} else {
			sh, newestSet, n, err = skimBlocks(in.R, kindBlocked)
		}
		in.N += n
		if err != nil {
			return d, in.N, &stageError{i, err}
		}
		want, err := stageConfig(c, d.schedule, i)
		if err != nil || sh.seed != c.Seed || sh.capacity != want.Capacity || sh.targetFPR != want.FPR {
			return d, in.N, fmt.Errorf("%w: stage %d is sized for %d keys at %v with seed %#x, want %d at %v with %#x",
				ErrCorrupt, i, sh.capacity, sh.targetFPR, sh.seed, want.Capacity, want.FPR, c.Seed)
		}
		l := sh.core()
		l.blocks = blocks
		d.stages = append(d.stages, l)
	}
	got := sum.Sum64()
	var tail [trailerSize]byte
	n, err := io.ReadFull(r, tail[:])
	in.N += int64(n)
	if err != nil {
		return d, in.N, fmt.Errorf("%w: stream ended after %d bytes", ErrTruncated, in.N)
	}
	if rec := getUint64(tail[:]); rec != got {
		return d, in.N, fmt.Errorf("%w: data hashes to %#x, recorded %#x", ErrChecksum, got, rec)
	}
	d.counts = make([]uint64, len(d.stages))
	for i := range d.counts {
		switch {
		case counts != nil:
			d.counts[i] = getUint64(counts[8*i:])
		case i < len(d.stages)-1:
			d.counts[i] = d.stages[i].capacity
		default:
			set := newestSet
			if keep {
				set = d.stages[i].popcount()
			}
			d.counts[i] = bitTable.estimateCount(set, d.stages[i].nblocks, d.stages[i].k)
		}
	}
	return d, in.N, nil
}

// WriteTo writes the filter in format version 2 (FormatV2). All integers
// are little-endian.
//
//	offset        size  field
//	     0         128  header as Filter.WriteTo writes it, with version 2,
//	                    filter kind 3 (scalable), k 0 and no partition
//	                    sizes; its block count field holds the number of
//	                    stages S (1..1024), capacity the first stage's
//	                    capacity and target rate the overall rate p
//	   128           1  schedule: 2 = as below; 1 = version 1's
//	   129           7  reserved, zero
//	   136           8  growth g: stage i holds capacity·g^i keys
//	   144           8  share of p of stage 0, f0 (binary64)
//	   152           8  ramp stages R (0..64)
//	   160           8  ramp share s (binary64; 0 when R = 0)
//	   168           8  ramp ratio q (binary64)
//	   176           8  decay d (binary64)
//	   184           8  XXH3_64bits (seed 0) of bytes 128..183
//	   192         8·S  the number of keys added as new to each stage
//	 200+8·S            each stage as Filter.WriteTo writes it (kind 1,
//	                    version 1), oldest first
//	   end           8  XXH3_64bits (seed 0) of every byte before it
//
// With schedule 2, stage 0's false positive rate is f0·p, ramp stage i
// (1 ≤ i ≤ R) gets (1−f0)·p·s·q^(i−1)/Σ_{j<R} q^j, and stage R+j (j ≥ 1)
// (1−f0)·p·(1−s)·(1−d)·d^(j−1): the rates sum to p. Every stage records
// its rate, which the decoder recomputes and checks bit for bit, so the
// order of the binary64 operations is part of the format; it is not the
// left-to-right order of these formulas. With every operation rounded as
// it is made (no fused multiply-add): rest = (1−f0)·p, computed as
// (1−f0) then times p; the ramp weights w_j = q^j by repeated
// multiplication (w_0 = 1, w_{j+1} = w_j·q) and their sum Σ by repeated
// addition in increasing j; ramp stage i is rest·(s·(w_{i−1}/Σ)), the
// division first; stage R+1 is rest·((1−s)·(1−d)), and each later stage
// the one before times d. docs/format.md, section 4.3, gives the same
// computation as pseudocode. Schedule 1 is growth 2 with stage i at
// (p·0.2)·0.8, i times (f0 0.2, R 0, s 0, q 0, d 0.8 are recorded), the
// only schedule of version 1.
//
// Version 1 files have the header (version 1) and the stages, with no
// schedule record and no counts. They are read with schedule 1; every
// stage but the newest counts as full, and the newest's count is
// estimated from its bits.
func (s *ScalableFilter) WriteTo(w io.Writer) (int64, error) {
	ls := make([]*core, len(s.stages))
	for i, f := range s.stages {
		ls[i] = &f.core
	}
	return writeStages(w, s.config, s.schedule, ls, s.counts)
}

// ReadFrom replaces s with a scalable filter read from r, which grows as
// the one written would have. The bound of SetMaxBytes (or
// Config.MaxBytes) is not part of the file: s keeps its own. On error s is
// unchanged.
func (s *ScalableFilter) ReadFrom(r io.Reader) (int64, error) {
	d, n, err := readStages(r)
	if err != nil {
		return n, err
	}
	fs := make([]*Filter, len(d.stages))
	for i := range d.stages {
		fs[i] = &Filter{d.stages[i]}
	}
	d.config.MaxBytes = s.config.MaxBytes
	*s = ScalableFilter{config: d.config, schedule: d.schedule, stages: fs, counts: d.counts}
	return n, nil
}

// WriteTo writes the filter as ScalableFilter.WriteTo does. A stage added
// during the write may or may not be in it, and the counts of keys being
// added may or may not include them.
func (s *AtomicScalableFilter) WriteTo(w io.Writer) (int64, error) {
	stages := *s.stages.Load()
	ls := make([]*core, len(stages))
	for i, st := range stages {
		ls[i] = &st.f.core
	}
	return writeStages(w, s.config, s.schedule, ls, stageCounts(stages))
}

// ReadFrom replaces s as ScalableFilter.ReadFrom does; it must not run
// concurrently with any other method.
func (s *AtomicScalableFilter) ReadFrom(r io.Reader) (int64, error) {
	d, n, err := readStages(r)
	if err != nil {
		return n, err
	}
	list := make([]*atomicStage, len(d.stages))
	for i := range d.stages {
		list[i] = &atomicStage{f: &AtomicFilter{d.stages[i]}}
		list[i].added.Store(d.counts[i])
	}
	s.config, s.schedule = d.config, d.schedule
	s.stages.Store(&list)
	s.err.Store(nil)
	return n, nil
}
