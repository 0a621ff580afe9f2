package ohbloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/ohbloom/ohbloom/internal/stream"
	"github.com/zeebo/xxh3"
)

// A RedisBloom chain is persisted in its own bytes, not as a kind of the
// ohbloom file format: what must survive is RedisBloom's header chunk,
// byte for byte (error rates, bits per entry and counts as RedisBloom
// wrote them), so that the chain dumps back as it came; the ohbloom
// header's fields (seed, partitions, block count) would all be unused; and
// nobody maps such a chain from a file to probe it in place. The format is
// on RedisBloomFilter.MarshalBinary.
const (
	rbMagic       = "OHRBCHN\x01"
	rbFrameHeader = 12
)

// marshalRB encodes a chain in the format above.
func marshalRB(c *rbChain, n int, link func(int) (*rbParams, uint64), words func(int) []uint64) []byte {
	out := append([]byte(rbMagic), 0, 0, 0, 0)
	out = encodeRBHeader(out, c, n, link)
	binary.LittleEndian.PutUint32(out[8:], uint32(len(out)-rbFrameHeader))
	for i := range n {
		p, _ := link(i)
		out = appendWordBytes(out, words(i), 0, p.bytes)
	}
	return binary.LittleEndian.AppendUint64(out, xxh3.Hash(out))
}

// writeRB streams a chain in the format above, one 64 KiB piece at a time.
func writeRB(w io.Writer, c *rbChain, n int, link func(int) (*rbParams, uint64), words func(int) []uint64) (int64, error) {
	sum := xxh3.New()
	var written int64
	put := func(b []byte) error {
		sum.Write(b)
		k, err := w.Write(b)
		written += int64(k)
		return err
	}
	head := append([]byte(rbMagic), 0, 0, 0, 0)
	head = encodeRBHeader(head, c, n, link)
	binary.LittleEndian.PutUint32(head[8:], uint32(len(head)-rbFrameHeader))
	if err := put(head); err != nil {
		return written, err
	}
	buf := make([]byte, 0, stream.Chunk)
	for i := range n {
		p, _ := link(i)
		for off := uint64(0); off < p.bytes; {
			k := min(stream.Chunk, p.bytes-off)
			if err := put(appendWordBytes(buf[:0], words(i), off, k)); err != nil {
				return written, err
			}
			off += k
		}
	}
	var tail [trailerSize]byte
	binary.LittleEndian.PutUint64(tail[:], sum.Sum64())
	k, err := w.Write(tail[:])
	return written + int64(k), err
}

// checkRBFrame checks the magic and version.
func checkRBFrame(b []byte) error {
	if n := min(len(b), len(rbMagic)-1); string(b[:n]) != rbMagic[:n] {
		return fmt.Errorf("%w: not a RedisBloom chain, starts with %q", ErrNotFilter, b[:n])
	}
	if len(b) < len(rbMagic) {
		return fmt.Errorf("%w: %d bytes", ErrTruncated, len(b))
	}
	if v := b[len(rbMagic)-1]; v != rbMagic[len(rbMagic)-1] {
		return fmt.Errorf("%w: RedisBloom chain version %d, this build reads 1", ErrVersion, v)
	}
	return nil
}

// unmarshalRB decodes a chain from exactly its encoding. Everything it
// allocates is paid for by data's length, which is checked against the
// header before any filter's words are made.
func unmarshalRB(data []byte) (rbHeader, [][]uint64, error) {
	if err := checkRBFrame(data); err != nil {
		return rbHeader{}, nil, err
	}
	if len(data) < rbFrameHeader+trailerSize {
		return rbHeader{}, nil, fmt.Errorf("%w: %d bytes", ErrTruncated, len(data))
	}
	body := data[:len(data)-trailerSize]
	if got, rec := xxh3.Hash(body), binary.LittleEndian.Uint64(data[len(body):]); got != rec {
		return rbHeader{}, nil, fmt.Errorf("%w: data hashes to %#x, recorded %#x", ErrChecksum, got, rec)
	}
	hlen := uint64(binary.LittleEndian.Uint32(data[8:]))
	if hlen > uint64(len(body)-rbFrameHeader) {
		return rbHeader{}, nil, fmt.Errorf("%w: a header of %d bytes in %d", ErrCorrupt, hlen, len(data))
	}
	h, err := decodeRBHeader(body[rbFrameHeader:rbFrameHeader+hlen], 0)
	if err != nil {
		return rbHeader{}, nil, err
	}
	bits := body[rbFrameHeader+hlen:]
	if h.total != uint64(len(bits)) {
		return rbHeader{}, nil, fmt.Errorf("%w: %d bytes of filters, the header announces %d", ErrCorrupt, len(bits), h.total)
	}
	words := make([][]uint64, len(h.params))
	for i := range h.params {
		p := &h.params[i]
		words[i] = make([]uint64, p.words())
		decodeLE(words[i], bits[:p.bytes])
		bits = bits[p.bytes:]
	}
	return h, words, nil
}

// decodeLE fills words from the little-endian bytes src, whose last word
// may be partial.
func decodeLE(words []uint64, src []byte) {
	for i := range words {
		if len(src) >= 8 {
			words[i] = binary.LittleEndian.Uint64(src)
			src = src[8:]
			continue
		}
		var v uint64
		for j := len(src) - 1; j >= 0; j-- {
			v = v<<8 | uint64(src[j])
		}
		words[i] = v
	}
}

// readRB reads exactly one encoded chain from r. Its memory grows with the
// bytes that arrive (see stream.NextAlloc), never with what the header
// claims.
func readRB(r io.Reader) (rbHeader, [][]uint64, int64, error) {
	in := &stream.Reader{R: r, Short: ErrTruncated}
	sum := xxh3.New()
	fill := func(b []byte) error {
		err := in.Fill(b)
		sum.Write(b)
		return err
	}
	var frame [rbFrameHeader]byte
	if err := fill(frame[:]); err != nil {
		if errors.Is(err, ErrTruncated) {
			if ferr := checkRBFrame(frame[:in.N]); ferr != nil {
				return rbHeader{}, nil, in.N, ferr
			}
		}
		return rbHeader{}, nil, in.N, err
	}
	if err := checkRBFrame(frame[:]); err != nil {
		return rbHeader{}, nil, in.N, err
	}
	hlen := uint64(binary.LittleEndian.Uint32(frame[8:]))
	if hlen < rbChainHeaderSize {
		return rbHeader{}, nil, in.N, fmt.Errorf("%w: %w: a header of %d bytes", ErrCorrupt, ErrRedisBloomBadData, hlen)
	}
	var header []byte
	for done := uint64(0); done < hlen; {
		k := min(stream.Chunk, hlen-done)
		header = append(header, make([]byte, k)...)
		if err := fill(header[done:]); err != nil {
			return rbHeader{}, nil, in.N, err
		}
		done += k
	}
	h, err := decodeRBHeader(header, 0)
	if err != nil {
		return rbHeader{}, nil, in.N, err
	}
	words := make([][]uint64, len(h.params))
	buf := make([]byte, stream.Chunk)
	for i := range h.params {
		p := &h.params[i]
		total := p.words()
		for off := uint64(0); off < p.bytes; {
			if w := off / 8; w == uint64(len(words[i])) {
				grown := make([]uint64, stream.NextAlloc(w, total, stream.FirstAlloc/8))
				copy(grown, words[i])
				words[i] = grown
			}
			k := min(stream.Chunk, p.bytes-off, uint64(len(words[i]))*8-off)
			if err := fill(buf[:k]); err != nil {
				return rbHeader{}, nil, in.N, err
			}
			decodeLE(words[i][off/8:(off+k+7)/8], buf[:k])
			off += k
		}
	}
	var tail [trailerSize]byte
	if err := in.Fill(tail[:]); err != nil {
		return rbHeader{}, nil, in.N, err
	}
	if got, rec := sum.Sum64(), binary.LittleEndian.Uint64(tail[:]); got != rec {
		return rbHeader{}, nil, in.N, fmt.Errorf("%w: data hashes to %#x, recorded %#x", ErrChecksum, got, rec)
	}
	return h, words, in.N, nil
}

func (f *RedisBloomFilter) words(i int) []uint64 { return f.links[i].words }

// MarshalBinary encodes the chain for storage: its header chunk and its
// filters' bytes, framed with a magic, a length and a checksum, so that a
// server can keep a RedisBloom key in its own records. Version 1, integers
// little-endian:
//
//	offset  size  field
//	     0     8  magic "OHRBCHN" and version byte 1
//	     8     4  H, the length of the header chunk (uint32)
//	    12     H  the header chunk, as BF.SCANDUMP iterator 0 returns it
//	  12+H     Σ  every filter's bytes, oldest first: the data chunks'
//	              bytes concatenated (Σ = the sum of the header's bytes fields)
//	12+H+Σ     8  XXH3_64bits (seed 0) of every byte before it
func (f *RedisBloomFilter) MarshalBinary() ([]byte, error) {
	return marshalRB(&f.rbChain, len(f.links), f.link, f.words), nil
}

// WriteTo writes MarshalBinary's bytes to w, streaming.
func (f *RedisBloomFilter) WriteTo(w io.Writer) (int64, error) {
	return writeRB(w, &f.rbChain, len(f.links), f.link, f.words)
}

// UnmarshalBinary replaces f with the chain encoded in data, which must be
// exactly one MarshalBinary encoding. On error f is unchanged. Its byte
// limit becomes the machine's memory (see SetMaxBytes).
func (f *RedisBloomFilter) UnmarshalBinary(data []byte) error {
	h, words, err := unmarshalRB(data)
	if err == nil {
		*f = *newRBFrom(h, words)
	}
	return err
}

// ReadFrom replaces f with a chain read from r, reading exactly one
// encoding, and returns how many bytes it read. Its memory grows with the
// bytes that arrive, never with what the header claims. On error f is
// unchanged.
func (f *RedisBloomFilter) ReadFrom(r io.Reader) (int64, error) {
	h, words, n, err := readRB(r)
	if err == nil {
		*f = *newRBFrom(h, words)
	}
	return n, err
}

func newRBFrom(h rbHeader, words [][]uint64) *RedisBloomFilter {
	f := &RedisBloomFilter{rbChain: h.rbChain, links: make([]rbLink, len(h.params))}
	for i := range f.links {
		f.links[i] = rbLink{rbParams: h.params[i], items: h.items[i], words: words[i]}
	}
	return f
}

// MarshalBinary is RedisBloomFilter.MarshalBinary. During concurrent adds
// it holds some of them and not others, and is consistent either way.
func (f *AtomicRedisBloomFilter) MarshalBinary() ([]byte, error) {
	links := *f.links.Load()
	link, _ := linksOf(links)
	return marshalRB(&f.rbChain, len(links), link, func(i int) []uint64 { return links[i].loadWords() }), nil
}

// WriteTo is RedisBloomFilter.WriteTo.
func (f *AtomicRedisBloomFilter) WriteTo(w io.Writer) (int64, error) {
	links := *f.links.Load()
	link, _ := linksOf(links)
	return writeRB(w, &f.rbChain, len(links), link, func(i int) []uint64 { return links[i].loadWords() })
}

// UnmarshalBinary is RedisBloomFilter.UnmarshalBinary. It must not run
// concurrently with any other method.
func (f *AtomicRedisBloomFilter) UnmarshalBinary(data []byte) error {
	h, words, err := unmarshalRB(data)
	if err == nil {
		f.replace(h, words)
	}
	return err
}

// ReadFrom is RedisBloomFilter.ReadFrom. It must not run concurrently with
// any other method.
func (f *AtomicRedisBloomFilter) ReadFrom(r io.Reader) (int64, error) {
	h, words, n, err := readRB(r)
	if err == nil {
		f.replace(h, words)
	}
	return n, err
}

func (f *AtomicRedisBloomFilter) replace(h rbHeader, words [][]uint64) {
	g := newAtomicRBFrom(h, words)
	f.rbChain = g.rbChain
	f.links.Store(g.links.Load())
}
