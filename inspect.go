package ohbloom

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"

	"github.com/ohbloom/ohbloom/internal/stream"
	"github.com/zeebo/xxh3"
)

// Kind is the kind of filter a file holds, as its header records it.
type Kind uint8

// The kinds of filter a file may hold, and the calls that read them.
const (
	KindFilter   Kind = kindBlocked  // a Filter or AtomicFilter: Load, LoadAtomic, Open
	KindCounting Kind = kindCounting // a CountingFilter or AtomicCountingFilter: LoadCounting, LoadAtomicCounting
	KindScalable Kind = kindScalable // a ScalableFilter or AtomicScalableFilter: LoadScalable, LoadAtomicScalable
)

// String returns the name of the filter type that a file of kind k holds:
// "Filter", "CountingFilter" or "ScalableFilter", and "Kind(N)" for a kind
// this build does not know.
func (k Kind) String() string {
	switch k {
	case KindFilter:
		return "Filter"
	case KindCounting:
		return "CountingFilter"
	case KindScalable:
		return "ScalableFilter"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// FileInfo describes the filter a file holds: what Inspect reads.
type FileInfo struct {
	Kind    Kind
	Version int   // the format version: FormatV1, or FormatV2 for a scalable filter
	Size    int64 // bytes

	Seed uint64 // the hash seed
	// Capacity and TargetFPR are what the filter was sized for (0 for one
	// built from an explicit geometry): for a scalable filter, its first
	// stage's capacity and its overall rate.
	Capacity  uint64
	TargetFPR float64

	// Blocks is the number of 64-byte blocks, of every stage together in
	// a scalable filter. K is the number of partitions of a block, the
	// bits or counters a key sets; 0 for a scalable filter, whose stages
	// each have their own (Stage(i).K()).
	Blocks uint64
	K      int
	// Stages is the number of stages of a scalable filter, 1 for the
	// others; Growth its growth (Config.Growth), 0 for the others.
	Stages int
	Growth uint64

	// Count is the number of keys in the filter: for a scalable filter the
	// keys added as new, as the file records them (ScalableFilter.Count);
	// for the others, which record no count, an estimate from the bits or
	// counters (EstimatedCount).
	Count uint64
}

// Inspect says what the file at path holds, without loading the filter:
// its kind, format version, seed, geometry and key count. It reads the
// whole file once, 64 KiB at a time, and checks it as the Load function of
// its kind would (header, checksums, exact length), so that it describes
// only a file that loads; on error the FileInfo holds what the headers
// said before the fault, and its Kind is 0 if the first header did not
// decode. Open and the Load functions, given a file of a kind they do not
// read, name its kind in the same terms.
func Inspect(path string) (FileInfo, error) {
	file, err := os.Open(path)
	if err != nil {
		return FileInfo{}, fmt.Errorf("ohbloom: %w", err) // "open PATH: why"
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return FileInfo{}, &fileError{"inspect", path, err}
	}
	info, err := inspect(bufio.NewReaderSize(file, 1<<20), st.Size())
	if err != nil {
		return info, &fileError{"inspect", path, err}
	}
	return info, nil
}

// inspect reads one encoded filter of any kind from r, which holds size
// bytes, keeping none of it.
func inspect(r io.Reader, size int64) (FileInfo, error) {
	info := FileInfo{Size: size}
	in := &stream.Reader{R: r, Short: ErrTruncated}
	var hdr [headerSize]byte
	if err := in.Fill(hdr[:]); err != nil && !errors.Is(err, ErrTruncated) {
		return info, err
	}
	h, err := decodeHeader(hdr[:in.N])
	if err != nil {
		return info, err
	}
	info.Kind, info.Version, info.Seed = Kind(h.kind), int(h.version), h.seed
	info.Capacity, info.TargetFPR = h.capacity, h.targetFPR
	var n int64
	if h.kind == kindScalable {
		var d decodedStages
		d, n, err = scanStages(io.MultiReader(bytes.NewReader(hdr[:in.N]), r), false)
		for _, l := range d.stages {
			info.Blocks += l.nblocks
		}
		info.Stages, info.Growth, info.Count = len(d.stages), d.schedule.growth, sum(d.counts)
	} else {
		var set uint64
		h, set, n, err = skimBlocks(io.MultiReader(bytes.NewReader(hdr[:in.N]), r), h.kind)
		info.Blocks, info.K, info.Stages = h.nblocks, h.k, 1
		if err == nil {
			info.Count = tableOf(h.kind).estimateCount(set, h.nblocks, h.k)
		}
	}
	if err == nil && n != size {
		err = fmt.Errorf("%w: %d bytes after the filter", ErrCorrupt, size-n)
	}
	return info, err
}

// skimBlocks reads exactly one encoded filter of the given kind from r and
// checks it as readBlocks does, but keeps no blocks: it returns the number
// of set bits (kind 1) or of counters that are not zero (kind 2), for an
// estimate of the keys.
func skimBlocks(r io.Reader, kind uint8) (header, uint64, int64, error) {
	in := &stream.Reader{R: r, Short: ErrTruncated}
	var hdr [headerSize]byte
	if err := in.Fill(hdr[:]); err != nil && !errors.Is(err, ErrTruncated) {
		return header{}, 0, in.N, err
	}
	h, err := decodeHeader(hdr[:in.N])
	if err == nil {
		err = h.wantKind(kind)
	}
	if err != nil {
		return h, 0, in.N, err
	}
	sum := xxh3.New()
	sum.Write(hdr[:])
	buf := make([]byte, stream.Chunk)
	var set uint64
	for left := h.nblocks * blockBytes; left > 0; {
		chunk := buf[:min(left, uint64(len(buf)))]
		if err := in.Fill(chunk); err != nil {
			return h, 0, in.N, err
		}
		sum.Write(chunk)
		for i := 0; i < len(chunk); i += 8 {
			w := binary.LittleEndian.Uint64(chunk[i:])
			if kind == kindCounting {
				const low = 0x1111111111111111
				w = (w | w>>1 | w>>2 | w>>3) & low
			}
			set += uint64(bits.OnesCount64(w))
		}
		left -= uint64(len(chunk))
	}
	var tail [trailerSize]byte
	if err := in.Fill(tail[:]); err != nil {
		return h, 0, in.N, err
	}
	if got, rec := sum.Sum64(), binary.LittleEndian.Uint64(tail[:]); got != rec {
		return h, 0, in.N, fmt.Errorf("%w: data hashes to %#x, recorded %#x", ErrChecksum, got, rec)
	}
	return h, set, in.N, nil
}
