package redisbloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/internal/stream"
	"github.com/zeebo/xxh3"
)

// A RedisBloom chain is persisted in its own bytes, not as a kind of the
// ohbloom file format: what must survive is RedisBloom's header chunk,
// byte for byte (error rates, bits per entry and counts as RedisBloom
// wrote them), so that the chain dumps back as it came; the ohbloom
// header's fields (seed, partitions, block count) would all be unused; and
// nobody maps such a chain from a file to probe it in place. The format is
// on Filter.MarshalBinary.
const (
	bfMagic       = "OHRBCHN\x01"
	bfFrameHeader = 12 // the magic and the header chunk's length
	trailerSize   = 8  // the checksum
)

// marshalBF encodes a chain in the format above.
func marshalBF(c *bfChain, n int, link func(int) (*bfParams, uint64), words func(int) []uint64) []byte {
	out := append([]byte(bfMagic), 0, 0, 0, 0)
	out = encodeBFHeader(out, c, n, link)
	binary.LittleEndian.PutUint32(out[8:], uint32(len(out)-bfFrameHeader))
	for i := range n {
		p, _ := link(i)
		out = appendWordBytes(out, words(i), 0, p.bytes)
	}
	return binary.LittleEndian.AppendUint64(out, xxh3.Hash(out))
}

// writeBF streams a chain in the format above, one 64 KiB piece at a time.
func writeBF(w io.Writer, c *bfChain, n int, link func(int) (*bfParams, uint64), words func(int) []uint64) (int64, error) {
	sum := xxh3.New()
	var written int64
	put := func(b []byte) error {
		sum.Write(b)
		k, err := w.Write(b)
		written += int64(k)
		return err
	}
	head := append([]byte(bfMagic), 0, 0, 0, 0)
	head = encodeBFHeader(head, c, n, link)
	binary.LittleEndian.PutUint32(head[8:], uint32(len(head)-bfFrameHeader))
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

// checkBFFrame checks the magic and version.
func checkBFFrame(b []byte) error {
	if n := min(len(b), len(bfMagic)-1); string(b[:n]) != bfMagic[:n] {
		return fmt.Errorf("%w: not a RedisBloom chain, starts with %q", ohbloom.ErrNotFilter, b[:n])
	}
	if len(b) < len(bfMagic) {
		return fmt.Errorf("%w: %d bytes", ohbloom.ErrTruncated, len(b))
	}
	if v := b[len(bfMagic)-1]; v != bfMagic[len(bfMagic)-1] {
		return fmt.Errorf("%w: RedisBloom chain version %d, this build reads 1", ohbloom.ErrVersion, v)
	}
	return nil
}

// unmarshalBF decodes a chain from exactly its encoding. Everything it
// allocates is paid for by data's length, which is checked against the
// header before any filter's words are made.
func unmarshalBF(data []byte) (bfHeader, [][]uint64, error) {
	if err := checkBFFrame(data); err != nil {
		return bfHeader{}, nil, err
	}
	if len(data) < bfFrameHeader+trailerSize {
		return bfHeader{}, nil, fmt.Errorf("%w: %d bytes", ohbloom.ErrTruncated, len(data))
	}
	body := data[:len(data)-trailerSize]
	if got, rec := xxh3.Hash(body), binary.LittleEndian.Uint64(data[len(body):]); got != rec {
		return bfHeader{}, nil, fmt.Errorf("%w: data hashes to %#x, recorded %#x", ohbloom.ErrChecksum, got, rec)
	}
	hlen := uint64(binary.LittleEndian.Uint32(data[8:]))
	if hlen > uint64(len(body)-bfFrameHeader) {
		return bfHeader{}, nil, fmt.Errorf("%w: a header of %d bytes in %d", ohbloom.ErrCorrupt, hlen, len(data))
	}
	h, err := decodeBFHeader(body[bfFrameHeader:bfFrameHeader+hlen], 0)
	if err != nil {
		return bfHeader{}, nil, err
	}
	bits := body[bfFrameHeader+hlen:]
	if h.total != uint64(len(bits)) {
		return bfHeader{}, nil, fmt.Errorf("%w: %d bytes of filters, the header announces %d", ohbloom.ErrCorrupt, len(bits), h.total)
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

// readBF reads exactly one encoded chain from r. Its memory grows with the
// bytes that arrive (see stream.NextAlloc), never with what the header
// claims.
func readBF(r io.Reader) (bfHeader, [][]uint64, int64, error) {
	in := &stream.Reader{R: r, Short: ohbloom.ErrTruncated}
	sum := xxh3.New()
	fill := func(b []byte) error {
		err := in.Fill(b)
		sum.Write(b)
		return err
	}
	var frame [bfFrameHeader]byte
	if err := fill(frame[:]); err != nil {
		if errors.Is(err, ohbloom.ErrTruncated) {
			if ferr := checkBFFrame(frame[:in.N]); ferr != nil {
				return bfHeader{}, nil, in.N, ferr
			}
		}
		return bfHeader{}, nil, in.N, err
	}
	if err := checkBFFrame(frame[:]); err != nil {
		return bfHeader{}, nil, in.N, err
	}
	hlen := uint64(binary.LittleEndian.Uint32(frame[8:]))
	if hlen < bfChainHeaderSize {
		return bfHeader{}, nil, in.N, fmt.Errorf("%w: %w: a header of %d bytes", ohbloom.ErrCorrupt, ErrBadData, hlen)
	}
	var header []byte
	for done := uint64(0); done < hlen; {
		k := min(stream.Chunk, hlen-done)
		header = append(header, make([]byte, k)...)
		if err := fill(header[done:]); err != nil {
			return bfHeader{}, nil, in.N, err
		}
		done += k
	}
	h, err := decodeBFHeader(header, 0)
	if err != nil {
		return bfHeader{}, nil, in.N, err
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
				return bfHeader{}, nil, in.N, err
			}
			decodeLE(words[i][off/8:(off+k+7)/8], buf[:k])
			off += k
		}
	}
	var tail [trailerSize]byte
	if err := in.Fill(tail[:]); err != nil {
		return bfHeader{}, nil, in.N, err
	}
	if got, rec := sum.Sum64(), binary.LittleEndian.Uint64(tail[:]); got != rec {
		return bfHeader{}, nil, in.N, fmt.Errorf("%w: data hashes to %#x, recorded %#x", ohbloom.ErrChecksum, got, rec)
	}
	return h, words, in.N, nil
}

func (f *Filter) words(i int) []uint64 { return f.links[i].words }

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
func (f *Filter) MarshalBinary() ([]byte, error) {
	return marshalBF(&f.bfChain, len(f.links), f.link, f.words), nil
}

// WriteTo writes MarshalBinary's bytes to w, streaming.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	return writeBF(w, &f.bfChain, len(f.links), f.link, f.words)
}

// UnmarshalBinary replaces f with the chain encoded in data, which must be
// exactly one MarshalBinary encoding. On error f is unchanged. Its byte
// limit becomes the machine's memory (see SetMaxBytes).
func (f *Filter) UnmarshalBinary(data []byte) error {
	h, words, err := unmarshalBF(data)
	if err == nil {
		*f = *newBFFrom(h, words)
	}
	return err
}

// ReadFrom replaces f with a chain read from r, reading exactly one
// encoding, and returns how many bytes it read. Its memory grows with the
// bytes that arrive, never with what the header claims. On error f is
// unchanged.
func (f *Filter) ReadFrom(r io.Reader) (int64, error) {
	h, words, n, err := readBF(r)
	if err == nil {
		*f = *newBFFrom(h, words)
	}
	return n, err
}

func newBFFrom(h bfHeader, words [][]uint64) *Filter {
	f := &Filter{bfChain: h.bfChain, links: make([]bfLink, len(h.params))}
	for i := range f.links {
		f.links[i] = bfLink{bfParams: h.params[i], items: h.items[i], words: words[i]}
	}
	return f
}

// MarshalBinary is Filter.MarshalBinary. During concurrent adds
// it holds some of them and not others, and is consistent either way.
func (f *AtomicFilter) MarshalBinary() ([]byte, error) {
	links := *f.links.Load()
	link, _ := linksOf(links)
	return marshalBF(&f.bfChain, len(links), link, func(i int) []uint64 { return links[i].loadWords() }), nil
}

// WriteTo is Filter.WriteTo.
func (f *AtomicFilter) WriteTo(w io.Writer) (int64, error) {
	links := *f.links.Load()
	link, _ := linksOf(links)
	return writeBF(w, &f.bfChain, len(links), link, func(i int) []uint64 { return links[i].loadWords() })
}

// UnmarshalBinary is Filter.UnmarshalBinary. It must not run
// concurrently with any other method.
func (f *AtomicFilter) UnmarshalBinary(data []byte) error {
	h, words, err := unmarshalBF(data)
	if err == nil {
		f.replace(h, words)
	}
	return err
}

// ReadFrom is Filter.ReadFrom. It must not run concurrently with
// any other method.
func (f *AtomicFilter) ReadFrom(r io.Reader) (int64, error) {
	h, words, n, err := readBF(r)
	if err == nil {
		f.replace(h, words)
	}
	return n, err
}

func (f *AtomicFilter) replace(h bfHeader, words [][]uint64) {
	g := newAtomicBFFrom(h, words)
	f.bfChain = g.bfChain
	f.links.Store(g.links.Load())
}
