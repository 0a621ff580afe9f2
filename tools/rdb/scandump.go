package rdb

import (
	"encoding/binary"
	"math"
)

// ScanDumpMaxChunk is the most bytes of filter data one SCANDUMP chunk
// carries (rebloom.c's MAX_SCANDUMP_SIZE, 16 MiB).
const ScanDumpMaxChunk = 16 << 20

// Chunk is one reply of BF.SCANDUMP or CF.SCANDUMP: the iterator to send
// with the data to BF.LOADCHUNK or CF.LOADCHUNK, and the data.
type Chunk struct {
	Iter int64
	Data []byte
}

// Sizes of RedisBloom's packed SCANDUMP headers (little-endian, as
// RedisBloom on x86-64 and arm64 writes its structs).
const (
	bloomHeaderSize     = 20 // dumpedChainHeader: size u64, nfilters u32, options u32, growth u32
	bloomLinkHeaderSize = 53 // dumpedChainLink: bytes, bits, size u64; error, bpe f64; hashes u32; entries u64; n2 u8
	cuckooHeaderSize    = 38 // CFHeader: numItems, numBuckets, numDeletes, numFilters u64; bucketSize, maxIterations, expansion u16
)

// ScanDump returns the chunks BF.SCANDUMP gives for b, in order: the header
// (iterator 1), then each link's bits in chunks of at most
// ScanDumpMaxChunk, iterator 1 plus the bytes dumped so far. The final
// reply, iterator 0 and no data, is not included. The data chunks alias
// the links' Data.
func (b *Bloom) ScanDump() ([]Chunk, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	if uint64(len(b.Links)) > (math.MaxUint32-bloomHeaderSize)/bloomLinkHeaderSize {
		return nil, errAt(0, ErrCorrupt, "%d links do not fit a SCANDUMP header", len(b.Links))
	}
	hdr := make([]byte, 0, bloomHeaderSize+bloomLinkHeaderSize*len(b.Links))
	hdr = binary.LittleEndian.AppendUint64(hdr, b.Size)
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(b.Links)))
	hdr = binary.LittleEndian.AppendUint32(hdr, b.Options)
	hdr = binary.LittleEndian.AppendUint32(hdr, b.Growth)
	chunks := []Chunk{{Iter: 1, Data: hdr}}
	iter := int64(1)
	for i := range b.Links {
		l := &b.Links[i]
		hdr = binary.LittleEndian.AppendUint64(hdr, uint64(len(l.Data)))
		hdr = binary.LittleEndian.AppendUint64(hdr, l.Bits)
		hdr = binary.LittleEndian.AppendUint64(hdr, l.Size)
		hdr = binary.LittleEndian.AppendUint64(hdr, math.Float64bits(l.Error))
		hdr = binary.LittleEndian.AppendUint64(hdr, math.Float64bits(l.BPE))
		hdr = binary.LittleEndian.AppendUint32(hdr, l.Hashes)
		hdr = binary.LittleEndian.AppendUint64(hdr, l.Entries)
		hdr = append(hdr, l.N2)
		for data := l.Data; len(data) > 0; {
			n := min(len(data), ScanDumpMaxChunk)
			iter += int64(n)
			chunks = append(chunks, Chunk{Iter: iter, Data: data[:n:n]})
			data = data[n:]
		}
	}
	chunks[0].Data = hdr
	return chunks, nil
}

// BloomFromScanDump rebuilds a Bloom from the chunks of BF.SCANDUMP, as
// BF.LOADCHUNK would: the header chunk (iterator 1) is checked as
// RedisBloom checks it and as Validate does, then the data chunks must
// follow in order, each starting where the last ended and within one link,
// until every link is full. A last chunk of iterator 0 and no data, the
// final SCANDUMP reply, is allowed. Link data that fits in one chunk
// aliases it.
func BloomFromScanDump(chunks []Chunk) (*Bloom, error) {
	if len(chunks) == 0 {
		return nil, errAt(0, ErrCorrupt, "no header chunk")
	}
	h := chunks[0].Data
	if chunks[0].Iter != 1 {
		return nil, errAt(0, ErrCorrupt, "header chunk has iterator %d, not 1", chunks[0].Iter)
	}
	if len(h) < bloomHeaderSize {
		return nil, errAt(0, ErrCorrupt, "Bloom header chunk of %d bytes", len(h))
	}
	b := &Bloom{
		Size:    binary.LittleEndian.Uint64(h),
		Options: binary.LittleEndian.Uint32(h[12:]),
		Growth:  binary.LittleEndian.Uint32(h[16:]),
	}
	n := uint64(binary.LittleEndian.Uint32(h[8:]))
	if n == 0 || uint64(len(h)) != bloomHeaderSize+bloomLinkHeaderSize*n {
		return nil, errAt(0, ErrCorrupt, "Bloom header chunk of %d bytes for %d links", len(h), n)
	}
	b.Links = make([]BloomLink, n)
	sizes := make([]uint64, n)
	for i := range b.Links {
		p := h[bloomHeaderSize+bloomLinkHeaderSize*i:]
		l := &b.Links[i]
		sizes[i] = binary.LittleEndian.Uint64(p)
		l.Bits = binary.LittleEndian.Uint64(p[8:])
		l.Size = binary.LittleEndian.Uint64(p[16:])
		l.Error = math.Float64frombits(binary.LittleEndian.Uint64(p[24:]))
		l.BPE = math.Float64frombits(binary.LittleEndian.Uint64(p[32:]))
		l.Hashes = binary.LittleEndian.Uint32(p[40:])
		l.Entries = binary.LittleEndian.Uint64(p[44:])
		l.N2 = p[52]
	}
	if err := b.validate(sizes); err != nil {
		return nil, err
	}
	err := fillFromChunks(chunks[1:], sizes, func(i int) *[]byte { return &b.Links[i].Data })
	if err != nil {
		return nil, err
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return b, nil
}

// fillFromChunks fills the parts of sizes[i] bytes from data chunks that
// follow each other: chunk k covers the bytes from Iter-1-len(Data) to
// Iter-1 of all the parts end to end (the LOADCHUNK rule of both filters).
// A part's bytes grow as chunks arrive, never to a size the header merely
// claims.
func fillFromChunks(chunks []Chunk, sizes []uint64, part func(int) *[]byte) error {
	if k := len(chunks); k > 0 && chunks[k-1].Iter == 0 && len(chunks[k-1].Data) == 0 {
		chunks = chunks[:k-1]
	}
	i, done := 0, uint64(0) // the part being filled; bytes before it
	for k, c := range chunks {
		for i < len(sizes) && uint64(len(*part(i))) == sizes[i] {
			done += sizes[i]
			i++
		}
		if i == len(sizes) {
			return errAt(0, ErrCorrupt, "chunk %d (iterator %d) after the filter's last byte", k+1, c.Iter)
		}
		p := part(i)
		at := done + uint64(len(*p))
		if len(c.Data) == 0 || c.Iter < 1 || uint64(c.Iter-1) != at+uint64(len(c.Data)) {
			return errAt(0, ErrCorrupt, "chunk %d: iterator %d with %d bytes does not continue at byte %d", k+1, c.Iter, len(c.Data), at)
		}
		if uint64(len(c.Data)) > sizes[i]-uint64(len(*p)) {
			return errAt(0, ErrCorrupt, "chunk %d: %d bytes run past the end of filter %d", k+1, len(c.Data), i)
		}
		if len(*p) == 0 && uint64(len(c.Data)) == sizes[i] {
			*p = c.Data[:len(c.Data):len(c.Data)]
		} else {
			*p = append(*p, c.Data...)
		}
	}
	for ; i < len(sizes); i++ {
		if uint64(len(*part(i))) != sizes[i] {
			return errAt(0, ErrCorrupt, "the chunks end with filter %d at %d of its %d bytes", i, len(*part(i)), sizes[i])
		}
	}
	return nil
}

// ScanDump returns the chunks CF.SCANDUMP gives for cf, in order: the
// header (iterator 1), then each filter's buckets, whole if they fit
// ScanDumpMaxChunk, else in chunks of that size, each at iterator 1 plus
// the bytes dumped so far. As in RedisBloom, a filter without items
// (NumItems 0) dumps nothing at all: CF.SCANDUMP answers iterator 0 at
// once. The final reply, iterator 0 and no data, is not included. The
// data chunks alias the filters' Data.
func (cf *Cuckoo) ScanDump() ([]Chunk, error) {
	if err := cf.Validate(); err != nil {
		return nil, err
	}
	if cf.NumItems == 0 {
		return nil, nil
	}
	hdr := make([]byte, 0, cuckooHeaderSize)
	hdr = binary.LittleEndian.AppendUint64(hdr, cf.NumItems)
	hdr = binary.LittleEndian.AppendUint64(hdr, cf.NumBuckets)
	hdr = binary.LittleEndian.AppendUint64(hdr, cf.NumDeletes)
	hdr = binary.LittleEndian.AppendUint64(hdr, uint64(len(cf.Filters)))
	hdr = binary.LittleEndian.AppendUint16(hdr, cf.BucketSize)
	hdr = binary.LittleEndian.AppendUint16(hdr, cf.MaxIterations)
	hdr = binary.LittleEndian.AppendUint16(hdr, cf.Expansion)
	chunks := []Chunk{{Iter: 1, Data: hdr}}
	iter := int64(1)
	for i := range cf.Filters {
		for data := cf.Filters[i].Data; len(data) > 0; {
			n := min(len(data), ScanDumpMaxChunk)
			iter += int64(n)
			chunks = append(chunks, Chunk{Iter: iter, Data: data[:n:n]})
			data = data[n:]
		}
	}
	return chunks, nil
}

// CuckooFromScanDump rebuilds a Cuckoo from the chunks of CF.SCANDUMP, as
// CF.LOADCHUNK would: the header chunk (iterator 1, 38 bytes) is checked as
// RedisBloom checks it and as Validate does, filter i gets
// NumBuckets·Expansion^i buckets, and the data chunks must follow in
// order, each starting where the last ended and within one filter, until
// every filter is full. A last chunk of iterator 0 and no data is allowed.
// Filter data that fits in one chunk aliases it.
func CuckooFromScanDump(chunks []Chunk) (*Cuckoo, error) {
	if len(chunks) == 0 {
		return nil, errAt(0, ErrCorrupt, "no header chunk (CF.SCANDUMP gives none for a filter without items)")
	}
	h := chunks[0].Data
	if chunks[0].Iter != 1 {
		return nil, errAt(0, ErrCorrupt, "header chunk has iterator %d, not 1", chunks[0].Iter)
	}
	if len(h) != cuckooHeaderSize {
		return nil, errAt(0, ErrCorrupt, "cuckoo header chunk of %d bytes, not %d", len(h), cuckooHeaderSize)
	}
	cf := &Cuckoo{
		NumItems:      binary.LittleEndian.Uint64(h),
		NumBuckets:    binary.LittleEndian.Uint64(h[8:]),
		NumDeletes:    binary.LittleEndian.Uint64(h[16:]),
		BucketSize:    binary.LittleEndian.Uint16(h[32:]),
		MaxIterations: binary.LittleEndian.Uint16(h[34:]),
		Expansion:     binary.LittleEndian.Uint16(h[36:]),
	}
	n := binary.LittleEndian.Uint64(h[24:])
	if err := cf.validateHeader(int(min(n, cuckooMaxFilters+1))); err != nil {
		return nil, err
	}
	// Every filter holds a byte at least: more filters than the chunks
	// bring bytes are a claim, refused before anything is allocated for
	// them.
	var data uint64
	for _, c := range chunks[1:] {
		data += uint64(len(c.Data))
	}
	if n > data {
		return nil, errAt(0, ErrCorrupt, "cuckoo header of %d filters, but the chunks hold %d bytes", n, data)
	}
	cf.Filters = make([]CuckooFilter, n)
	sizes := make([]uint64, n)
	nb := cf.NumBuckets
	for i := range cf.Filters {
		if i > 0 {
			nb = nextCuckooBuckets(nb, cf.Expansion)
		}
		if nb == 0 {
			return nil, errAt(0, ErrCorrupt, "cuckoo filter %d: %d·%d^%d buckets", i, cf.NumBuckets, cf.Expansion, i)
		}
		cf.Filters[i].NumBuckets = nb
		sizes[i] = nb * uint64(cf.BucketSize) // below 2^64: nb < 2^56, BucketSize < 2^16
	}
	err := fillFromChunks(chunks[1:], sizes, func(i int) *[]byte { return &cf.Filters[i].Data })
	if err != nil {
		return nil, err
	}
	if err := cf.Validate(); err != nil {
		return nil, err
	}
	return cf, nil
}
