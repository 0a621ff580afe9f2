package ohbloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"

	"github.com/ohbloom/ohbloom/internal/stream"
	"github.com/zeebo/xxh3"
)

// Format versions. A decoder accepts exactly the versions listed here.
const (
	// FormatV1 is the first format: header, 64-byte-aligned blocks,
	// trailing checksum, as described on Filter.WriteTo.
	FormatV1 = 1
	// FormatV2 is the version of scalable filters (kind 3) only: it adds
	// a record of their growth schedule and per-stage key counts (see
	// ScalableFilter.WriteTo). Every other kind is written and read as
	// FormatV1 alone, and a version-2 header of another kind is refused
	// with ErrVersion. Version 1 scalable files are still read.
	FormatV2 = 2
)

// Filter kinds, recorded in the header so that one framing serves every
// filter of the family and a file is never read as the wrong kind.
const (
	kindBlocked  = 1 // Filter and AtomicFilter: 1 bit per partition
	kindCounting = 2 // CountingFilter and AtomicCountingFilter: 4-bit counters
	kindScalable = 3 // ScalableFilter: a chain of kind-1 filters, see ScalableFilter.WriteTo
)

// noTable is the partition table of a container kind, which has no blocks
// of its own: k is 0 and every partition size field is zero.
var noTable = &partitionTable{sizes: &[maxK + 1][]uint16{}}

// tableOf returns the partition table of a filter kind, nil for an unknown
// kind.
func tableOf(kind uint8) *partitionTable {
	switch kind {
	case kindBlocked:
		return bitTable
	case kindCounting:
		return counterTable
	case kindScalable:
		return noTable
	}
	return nil
}

// kindName names a filter kind in errors.
func kindName(kind uint8) string {
	switch kind {
	case kindBlocked:
		return "a blocked Bloom filter"
	case kindCounting:
		return "a counting filter"
	case kindScalable:
		return "a scalable filter"
	}
	return fmt.Sprintf("kind %d", kind)
}

// Hash algorithms, recorded in the header.
const (
	hashXXH3 = 1 // XXH3_64bits with the header's seed (github.com/zeebo/xxh3.HashSeed)
)

const (
	magic       = "OHBLOOM\x00"
	headerSize  = 128 // a multiple of 64, so the blocks start cache-aligned in a mapped file
	trailerSize = 8
)

// Errors returned when decoding. Each decoding error wraps one of them, and
// says what exactly was wrong.
var (
	ErrNotFilter        = errors.New("ohbloom: not an ohbloom filter (bad magic)")
	ErrVersion          = errors.New("ohbloom: unsupported format version")
	ErrUnknownKind      = errors.New("ohbloom: unknown filter kind")
	ErrUnknownHash      = errors.New("ohbloom: unknown hash algorithm")
	ErrUnknownPartition = errors.New("ohbloom: unknown partition table")
	ErrChecksum         = errors.New("ohbloom: checksum mismatch")
	ErrTruncated        = errors.New("ohbloom: truncated input")
	ErrCorrupt          = errors.New("ohbloom: corrupt input")
)

// header is the decoded fixed-size start of an encoded filter.
type header struct {
	version   uint16 // 0 is written as FormatV1
	kind      uint8
	hash      uint8
	k         int
	seed      uint64
	nblocks   uint64
	capacity  uint64
	targetFPR float64
}

func (l *core) header() header {
	return header{kind: kindBlocked, hash: hashXXH3, k: l.k, seed: l.seed,
		nblocks: l.nblocks, capacity: l.capacity, targetFPR: l.targetFPR}
}

func encodedSize(nblocks uint64) uint64 { return headerSize + nblocks*blockBytes + trailerSize }

func (h header) encode() (b [headerSize]byte) {
	le := binary.LittleEndian
	copy(b[0:8], magic)
	le.PutUint16(b[8:], max(h.version, FormatV1))
	b[10] = h.kind
	b[11] = h.hash
	b[12] = uint8(h.k)
	le.PutUint64(b[16:], h.seed)
	le.PutUint64(b[24:], h.nblocks)
	le.PutUint64(b[32:], h.capacity)
	le.PutUint64(b[40:], math.Float64bits(h.targetFPR))
	for i, s := range tableOf(h.kind).sizes[h.k] {
		le.PutUint16(b[48+2*i:], s)
	}
	le.PutUint64(b[120:], xxh3.Hash(b[:120]))
	return b
}

func decodeHeader(b []byte) (header, error) {
	var h header
	le := binary.LittleEndian
	if n := min(len(b), len(magic)); string(b[:n]) != magic[:n] {
		return h, fmt.Errorf("%w: starts with %q", ErrNotFilter, b[:n])
	}
	if len(b) < headerSize {
		return h, fmt.Errorf("%w: %d bytes, a header takes %d", ErrTruncated, len(b), headerSize)
	}
	h.version = le.Uint16(b[8:])
	if h.version != FormatV1 && h.version != FormatV2 {
		return h, fmt.Errorf("%w: version %d, this build reads %d and %d", ErrVersion, h.version, FormatV1, FormatV2)
	}
	// Checked before any field is trusted: a corrupt header must not make
	// the decoder allocate or loop on what it claims.
	if got, want := xxh3.Hash(b[:120]), le.Uint64(b[120:]); got != want {
		return h, fmt.Errorf("%w: header hashes to %#x, recorded %#x", ErrChecksum, got, want)
	}
	h.kind, h.hash, h.k = b[10], b[11], int(b[12])
	table := tableOf(h.kind)
	if table == nil {
		return h, fmt.Errorf("%w: %d", ErrUnknownKind, h.kind)
	}
	if h.version == FormatV2 && h.kind != kindScalable {
		return h, fmt.Errorf("%w: version %d of %s", ErrVersion, h.version, kindName(h.kind))
	}
	if h.hash != hashXXH3 {
		return h, fmt.Errorf("%w: %d", ErrUnknownHash, h.hash)
	}
	h.seed = le.Uint64(b[16:])
	h.nblocks = le.Uint64(b[24:])
	h.capacity = le.Uint64(b[32:])
	h.targetFPR = math.Float64frombits(le.Uint64(b[40:]))
	if (h.k < minK || h.k > table.kmax) && !(table == noTable && h.k == 0) {
		return h, fmt.Errorf("%w: k = %d", ErrUnknownPartition, h.k)
	}
	for i := range maxK {
		var want uint16
		if i < h.k {
			want = table.sizes[h.k][i]
		}
		if got := le.Uint16(b[48+2*i:]); got != want {
			return h, fmt.Errorf("%w: k = %d, partition %d has size %d, want %d", ErrUnknownPartition, h.k, i, got, want)
		}
	}
	for i, c := range b[13:16] {
		if c != 0 {
			return h, fmt.Errorf("%w: reserved byte %d is %#x", ErrCorrupt, 13+i, c)
		}
	}
	for i, c := range b[80:120] {
		if c != 0 {
			return h, fmt.Errorf("%w: reserved byte %d is %#x", ErrCorrupt, 80+i, c)
		}
	}
	if h.nblocks == 0 {
		return h, fmt.Errorf("%w: 0 blocks", ErrCorrupt)
	}
	if err := checkBlocks(h.nblocks); err != nil {
		return h, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return h, nil
}

func (h header) core() core {
	l := core{capacity: h.capacity, targetFPR: h.targetFPR}
	l.setGeometry(h.seed, h.nblocks, h.k)
	return l
}

// wantKind checks that a decoded header is of the kind the receiver holds.
func (h header) wantKind(kind uint8) error {
	if h.kind != kind {
		return fmt.Errorf("%w: the input holds %s, not %s", ErrUnknownKind, kindName(h.kind), kindName(kind))
	}
	return nil
}

// WriteTo writes the filter to w in the format below and returns the number
// of bytes written. It streams: the only buffer is a 64 KiB chunk.
//
// Format version 1 (FormatV1). All integers are little-endian.
//
//	offset  size  field
//	     0     8  magic "OHBLOOM\x00"
//	     8     2  format version, 1
//	    10     1  filter kind: 1 = blocked one-hash Bloom filter
//	    11     1  hash: 1 = XXH3_64bits, seeded
//	    12     1  k, the number of partitions per block (2..16)
//	    13     3  reserved, zero
//	    16     8  hash seed
//	    24     8  block count B (1..2^32)
//	    32     8  capacity the filter was sized for (0: explicit geometry)
//	    40     8  target false positive rate, IEEE 754 binary64 (0: explicit)
//	    48    32  the k partition sizes, uint16 each, then zeros up to 16
//	    80    40  reserved, zero
//	   120     8  XXH3_64bits (seed 0) of bytes 0..119
//	   128  64·B  the blocks: block b holds bits 512b..512b+511 as 8 uint64
//	              words, bit j of the block being bit j%64 of word j/64
//	128+64·B   8  XXH3_64bits (seed 0) of every byte before it
//
// The header is 128 bytes so that the blocks start 64-byte aligned, and a
// later reader can map a file and probe it in place. A key with hash h =
// XXH3_64bits(key, seed) lives in block hi64(h·B) and sets, for each
// partition i, bit offset_i + (h mod 2^32) mod size_i, where offset_i is the
// sum of the sizes before it.
func (f *Filter) WriteTo(w io.Writer) (int64, error) { return f.writeTo(w) }

// WriteTo writes the filter as Filter.WriteTo does. Keys added during the
// write may or may not be in the output, which is consistent with its
// checksum either way.
func (f *AtomicFilter) WriteTo(w io.Writer) (int64, error) { return f.writeTo(w) }

func (l *core) writeTo(w io.Writer) (int64, error) { return writeBlocks(w, l.header(), l.blocks) }

// writeBlocks streams an encoded filter: header, blocks, checksum.
func writeBlocks(w io.Writer, h header, blocks []block) (int64, error) {
	var written int64
	put := func(b []byte) error {
		n, err := w.Write(b)
		written += int64(n)
		return err
	}
	sum := xxh3.New()
	hdr := h.encode()
	sum.Write(hdr[:])
	if err := put(hdr[:]); err != nil {
		return written, err
	}
	buf := make([]byte, stream.Chunk)
	for i := 0; i < len(blocks); {
		chunk := blocks[i:min(len(blocks), i+stream.Chunk/blockBytes)]
		out := encodeBlocks(buf, chunk)
		sum.Write(out)
		if err := put(out); err != nil {
			return written, err
		}
		i += len(chunk)
	}
	var tail [trailerSize]byte
	binary.LittleEndian.PutUint64(tail[:], sum.Sum64())
	return written, put(tail[:])
}

// encodeBlocks writes blocks to dst in the file's byte order and returns the
// bytes written. Words are loaded atomically so that it may run during Adds.
func encodeBlocks(dst []byte, blocks []block) []byte {
	dst = dst[:len(blocks)*blockBytes]
	for i := range blocks {
		for w := range blockWords {
			binary.LittleEndian.PutUint64(dst[i*blockBytes+w*8:], atomic.LoadUint64(&blocks[i][w]))
		}
	}
	return dst
}

func decodeBlocks(dst []block, src []byte) {
	for i := range dst {
		for w := range blockWords {
			dst[i][w] = binary.LittleEndian.Uint64(src[i*blockBytes+w*8:])
		}
	}
}

// MarshalBinary returns the filter in the format of Filter.WriteTo.
func (f *Filter) MarshalBinary() ([]byte, error) { return f.marshal(), nil }

func (l *core) marshal() []byte { return marshalBlocks(l.header(), l.blocks) }

// marshalBlocks returns an encoded filter.
func marshalBlocks(h header, blocks []block) []byte {
	out := make([]byte, 0, encodedSize(h.nblocks))
	hdr := h.encode()
	out = append(out, hdr[:]...)
	out = out[:headerSize+len(blocks)*blockBytes]
	encodeBlocks(out[headerSize:], blocks)
	return binary.LittleEndian.AppendUint64(out, xxh3.Hash(out))
}

// UnmarshalBinary replaces f with the filter encoded in data, which must be
// exactly one encoded filter. On error f is unchanged.
func (f *Filter) UnmarshalBinary(data []byte) error { return f.unmarshal(data) }

func (l *core) unmarshal(data []byte) error {
	h, blocks, err := unmarshalBlocks(data, kindBlocked)
	if err != nil {
		return err
	}
	nl := h.core()
	nl.blocks = blocks
	*l = nl
	return nil
}

// unmarshalBlocks decodes exactly one encoded filter of the given kind.
func unmarshalBlocks(data []byte, kind uint8) (header, []block, error) {
	h, err := decodeHeader(data)
	if err == nil {
		err = h.wantKind(kind)
	}
	if err != nil {
		return h, nil, err
	}
	// The length is checked against the header before anything is
	// allocated, so a short input cannot make us allocate what it claims.
	want := encodedSize(h.nblocks)
	if uint64(len(data)) < want {
		return h, nil, fmt.Errorf("%w: %d bytes, the header announces %d", ErrTruncated, len(data), want)
	}
	if uint64(len(data)) > want {
		return h, nil, fmt.Errorf("%w: %d bytes, the header announces %d", ErrCorrupt, len(data), want)
	}
	body := data[:want-trailerSize]
	if got, rec := xxh3.Hash(body), binary.LittleEndian.Uint64(data[want-trailerSize:]); got != rec {
		return h, nil, fmt.Errorf("%w: data hashes to %#x, recorded %#x", ErrChecksum, got, rec)
	}
	blocks := alignedBlocks(h.nblocks)
	decodeBlocks(blocks, body[headerSize:])
	return h, blocks, nil
}

// ReadFrom replaces f with a filter read from r in the format of
// Filter.WriteTo, reading exactly the bytes of one filter, and returns how
// many it read. Its memory grows with the data that actually arrives, so a
// header that claims a huge filter costs nothing until the stream backs the
// claim. A reader that can tell how many bytes it holds, with a Len() int
// method as *bytes.Reader has, is taken at its word: when it holds the whole
// filter, the filter is allocated once, at its size, instead of grown.
// Pages that the input leaves all zero are not written, so an empty filter
// read back takes little memory until keys are added, as a new one does.
// On error f is unchanged.
//
// A reader whose bytes are in memory already (a mapped file) may lend
// that memory to the filter instead of having the blocks copied: with a
// method InPlace(n int) []byte, it is asked, before the blocks are read,
// for the memory that holds the n bytes it is about to deliver. The
// blocks are then read and checked as usual, through a small buffer, but
// not stored: the lent memory becomes the filter's, which reads and writes
// it for as long as the filter is reachable. It must stay valid and
// writable, hold exactly what the reader delivers, and be used by nothing
// else: a private, copy-on-write mapping of a file that nothing writes in
// place, say, as ohbloom serve maps its data files. Memory that is not
// exactly n bytes, 64-byte aligned, is not used (nor on a big-endian
// CPU); nil declines. Every kind of filter's ReadFrom asks, the scalable
// filter once for each stage.
func (f *Filter) ReadFrom(r io.Reader) (int64, error) { return f.readFrom(r) }

// ReadFrom is Filter.ReadFrom. It must not run concurrently with any other
// method.
func (f *AtomicFilter) ReadFrom(r io.Reader) (int64, error) { return f.readFrom(r) }

func (l *core) readFrom(r io.Reader) (int64, error) {
	h, blocks, n, err := readBlocks(r, kindBlocked)
	if err != nil {
		return n, err
	}
	nl := h.core()
	nl.blocks = blocks
	*l = nl
	return n, nil
}

// readBlocks reads exactly one encoded filter of the given kind from r.
func readBlocks(r io.Reader, kind uint8) (header, []block, int64, error) {
	in := &stream.Reader{R: r, Short: ErrTruncated}
	fill := in.Fill
	var hdr [headerSize]byte
	if err := fill(hdr[:]); err != nil && !errors.Is(err, ErrTruncated) {
		return header{}, nil, in.N, err
	}
	// A short header is reported as decodeHeader sees it: foreign bytes as
	// ErrNotFilter, a cut-off filter as ErrTruncated.
	h, err := decodeHeader(hdr[:in.N])
	if err == nil {
		err = h.wantKind(kind)
	}
	if err != nil {
		return h, nil, in.N, err
	}
	sum := xxh3.New()
	sum.Write(hdr[:])
	// A reader that lends the blocks' memory (see Filter.ReadFrom) has
	// them read and checked all the same, through a buffer that stays in
	// the cache, and nothing stored.
	lent := inPlace(r, h.nblocks)

	// Memory grows with the bytes that arrive, unless r says it holds the
	// whole filter: growing by doubling copies every block once more and
	// leaves the smaller copies to the garbage collector, about twice the
	// filter's memory until they are returned to the system.
	first := min(h.nblocks, stream.FirstAlloc/blockBytes)
	if left, ok := remaining(r); ok && left >= 0 && uint64(left) >= h.nblocks*blockBytes+trailerSize {
		first = h.nblocks
	}
	var blocks []block
	if lent == nil {
		blocks = alignedBlocks(first)
	}
	buf := make([]byte, stream.Chunk)
	for done := uint64(0); done < h.nblocks; {
		if lent != nil {
			n := min(h.nblocks-done, stream.Chunk/blockBytes)
			chunk := buf[:n*blockBytes]
			if err := fill(chunk); err != nil {
				return h, nil, in.N, err
			}
			sum.Write(chunk)
			done += n
			continue
		}
		if done == uint64(len(blocks)) {
			// The stream has delivered everything allocated so far: double.
			grown := alignedBlocks(min(h.nblocks, 2*done))
			copy(grown, blocks)
			blocks = grown
		}
		n := min(uint64(len(blocks))-done, stream.Chunk/blockBytes)
		chunk := buf[:n*blockBytes]
		if err := fill(chunk); err != nil {
			return h, nil, in.N, err
		}
		sum.Write(chunk)
		storeBlocks(blocks[done:done+n], chunk)
		done += n
	}
	var tail [trailerSize]byte
	if err := fill(tail[:]); err != nil {
		return h, nil, in.N, err
	}
	if got, rec := sum.Sum64(), binary.LittleEndian.Uint64(tail[:]); got != rec {
		return h, nil, in.N, fmt.Errorf("%w: data hashes to %#x, recorded %#x", ErrChecksum, got, rec)
	}
	if lent != nil {
		blocks = blocksOf(lent)
	}
	return h, blocks, in.N, nil
}

// inPlace asks r for the memory of the next nblocks blocks (see
// Filter.ReadFrom), through the hashing reader of a scalable filter's
// stages, and returns it if it can serve as blocks: nblocks·64 bytes,
// 64-byte aligned, and in the CPU's byte order. Otherwise nil, and the
// blocks are read into memory of the filter's own.
func inPlace(r io.Reader, nblocks uint64) []byte {
	if hr, ok := r.(hashingReader); ok {
		r = hr.r
	}
	lender, ok := r.(interface{ InPlace(int) []byte })
	if !ok || !littleEndian || nblocks*blockBytes > math.MaxInt {
		return nil
	}
	mem := lender.InPlace(int(nblocks * blockBytes))
	if uint64(len(mem)) != nblocks*blockBytes || addressOf(mem)%blockBytes != 0 {
		return nil
	}
	return mem
}

// remaining reports how many bytes r holds, where it can tell: a reader
// with a Len method, as *bytes.Reader, *bytes.Buffer and *strings.Reader
// have, or the hashing reader of a scalable filter's stages over one.
func remaining(r io.Reader) (int, bool) {
	switch r := r.(type) {
	case interface{ Len() int }:
		return r.Len(), true
	case hashingReader:
		return remaining(r.r)
	}
	return 0, false
}

// zeroPage is what storeBlocks compares the input with.
var zeroPage [4096]byte

// littleEndian is whether words in memory have the file's byte order, so
// that blocks can be copied to and from the file's bytes as they are (and
// a mapped file probed in place).
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// storeBlocks decodes src into dst, which must be zero (freshly
// allocated), skipping each 4 KiB of src that is all zero: the pages of a
// filter's empty regions are then never written, and a filter read back
// costs the memory its set bits touch, as the filter that was saved did,
// not all of its size. Where the byte order allows it copies, which is
// faster than decoding word by word.
func storeBlocks(dst []block, src []byte) {
	for off := 0; off < len(src); off += len(zeroPage) {
		piece := src[off:min(len(src), off+len(zeroPage))]
		if string(piece) == string(zeroPage[:len(piece)]) {
			continue
		}
		to := dst[off/blockBytes : (off+len(piece))/blockBytes]
		if littleEndian {
			copy(blockMemory(to), piece)
		} else {
			decodeBlocks(to, piece)
		}
	}
}

func putUint64(b []byte, v uint64) { binary.LittleEndian.PutUint64(b, v) }

func getUint64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
