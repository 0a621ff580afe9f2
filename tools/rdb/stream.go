package rdb

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strconv"
)

// stream reads RDB encodings from an io.Reader through its own buffer,
// keeping the offset of every byte, the CRC-64 of what it consumed and,
// while recording, a copy of it. Every length it reads is checked against
// the bytes left when the input's size is known, and anything it keeps
// grows as bytes arrive, never to a length the input merely claims.
type stream struct {
	r        io.Reader
	buf      []byte
	pos, end int
	base     int64 // offset of buf[0]
	size     int64 // the input's length, or -1
	err      error // the reader's error once it gave one

	sum    bool
	crc    uint64 // CRC-64 of the input before buf[crcPos]
	crcPos int

	recOn  bool
	rec    []byte
	recMax int64 // most bytes rec, or any kept string, may hold; 0 for no limit
}

const streamBuf = 64 << 10

func newStream(r io.Reader, size int64, bufSize int) *stream {
	return &stream{r: r, buf: make([]byte, bufSize), size: size}
}

func (s *stream) off() int64 { return s.base + int64(s.pos) }

// left is how many bytes the input still has, or MaxInt64 if unknown.
func (s *stream) left() int64 {
	if s.size < 0 {
		return math.MaxInt64
	}
	return max(s.size-s.off(), 0)
}

// checksum is the CRC-64 of everything consumed.
func (s *stream) checksum() uint64 {
	s.crc = crc64(s.crc, s.buf[s.crcPos:s.pos])
	s.crcPos = s.pos
	return s.crc
}

// compact moves the unread bytes to the front, so that the buffer can take
// more.
func (s *stream) compact() {
	if s.sum {
		s.checksum()
	}
	n := copy(s.buf, s.buf[s.pos:s.end])
	s.base += int64(s.pos)
	s.pos, s.end, s.crcPos = 0, n, 0
}

// fill reads until at least n bytes (n ≤ len(buf)) are buffered. at is the
// offset of the item being read, for the error.
func (s *stream) fill(n int, at int64, what string) error {
	if s.end-s.pos >= n {
		return nil
	}
	if len(s.buf)-s.pos < n {
		s.compact()
	}
	for s.end-s.pos < n {
		if s.err != nil {
			return s.readErr(at, what)
		}
		m, err := s.r.Read(s.buf[s.end:])
		s.end += m
		if err != nil {
			s.err = err
		} else if m == 0 {
			s.err = io.ErrNoProgress
		}
	}
	return nil
}

func (s *stream) readErr(at int64, what string) error {
	if errors.Is(s.err, io.EOF) {
		return errAt(at, ErrTruncated, "%s ends past the input's last byte, %d", what, s.base+int64(s.end))
	}
	return &Error{Offset: s.base + int64(s.end), Msg: "reading " + what + ": " + s.err.Error(), Err: s.err}
}

// consume takes n buffered bytes.
func (s *stream) consume(n int) ([]byte, error) {
	b := s.buf[s.pos : s.pos+n]
	if s.recOn {
		if s.recMax > 0 && int64(len(s.rec)+n) > s.recMax {
			return nil, errAt(s.off(), ErrTooLarge, "value longer than the limit of %d bytes", s.recMax)
		}
		s.rec = append(s.rec, b...)
	}
	s.pos += n
	return b, nil
}

// fixed reads n ≤ 16 bytes; the slice is valid until the next read.
func (s *stream) fixed(n int, what string) ([]byte, error) {
	if err := s.fill(n, s.off(), what); err != nil {
		return nil, err
	}
	return s.consume(n)
}

func (s *stream) byte1(what string) (byte, error) {
	b, err := s.fixed(1, what)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// length reads an RDB length (rdbLoadLenByRef): 00xxxxxx, 01xxxxxx
// xxxxxxxx, 0x80 and 4 bytes big-endian, 0x81 and 8 bytes big-endian, or
// 11xxxxxx, a special string encoding, reported with enc set. Callers that
// want a plain number take an encoded one as its six bits, as Redis does.
func (s *stream) length(what string) (n uint64, enc bool, err error) {
	at := s.off()
	b, err := s.byte1(what)
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case 0:
		return uint64(b), false, nil
	case 1:
		c, err := s.byte1(what)
		return uint64(b&0x3f)<<8 | uint64(c), false, err
	case 3:
		return uint64(b & 0x3f), true, nil
	}
	switch b {
	case 0x80:
		p, err := s.fixed(4, what)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(p)), false, nil
	case 0x81:
		p, err := s.fixed(8, what)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(p), false, nil
	}
	return 0, false, errAt(at, ErrCorrupt, "unknown length encoding 0x%02x in %s", b, what)
}

func (s *stream) number(what string) (uint64, error) {
	n, _, err := s.length(what)
	return n, err
}

// count reads a number of items that take at least minBytes each, and
// refuses one the bytes left cannot hold.
func (s *stream) count(what string, minBytes int64) (uint64, error) {
	at := s.off()
	n, err := s.number(what)
	if err != nil {
		return 0, err
	}
	if n > uint64(s.left()/minBytes) {
		return 0, errAt(at, ErrCorrupt, "%s %d cannot fit in the %d bytes left", what, n, s.left())
	}
	return n, nil
}

// skip consumes n bytes, in buffer-sized steps.
func (s *stream) skip(n uint64, at int64, what string) error {
	for n > 0 {
		if s.pos == s.end {
			if err := s.fill(1, at, what); err != nil {
				return err
			}
		}
		k := int(min(uint64(s.end-s.pos), n))
		if _, err := s.consume(k); err != nil {
			return err
		}
		n -= uint64(k)
	}
	return nil
}

// take reads n bytes into a new slice that grows as they arrive.
func (s *stream) take(n uint64, at int64, what string) ([]byte, error) {
	if s.recMax > 0 && n > uint64(s.recMax) {
		return nil, errAt(at, ErrTooLarge, "%s of %d bytes is longer than the limit of %d", what, n, s.recMax)
	}
	var out []byte
	if s.size >= 0 {
		// n is within the bytes left; past 64 MiB it grows as they arrive
		// all the same, which also keeps a 32-bit int from overflowing.
		out = make([]byte, 0, min(n, 64<<20))
	}
	for uint64(len(out)) < n {
		if s.pos == s.end {
			if err := s.fill(1, at, what); err != nil {
				return nil, err
			}
		}
		k := int(min(uint64(s.end-s.pos), n-uint64(len(out))))
		b, err := s.consume(k)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// str reads an RDB string (rdbGenericLoadStringObject): a length and the
// bytes, an integer (11000000 and 1 byte, 11000001 and 2, 11000010 and 4,
// little-endian, signed), or LZF (11000011, compressed length, length,
// compressed bytes). With keep it returns the string's bytes, an integer
// as its decimal text; without, it checks the encoding and skips the bytes.
func (s *stream) str(what string, keep bool) ([]byte, error) {
	at := s.off()
	n, enc, err := s.length(what)
	if err != nil {
		return nil, err
	}
	if enc {
		switch n {
		case 0, 1, 2:
			p, err := s.fixed(1<<n, what)
			if err != nil || !keep {
				return nil, err
			}
			var v int64
			switch n {
			case 0:
				v = int64(int8(p[0]))
			case 1:
				v = int64(int16(binary.LittleEndian.Uint16(p)))
			default:
				v = int64(int32(binary.LittleEndian.Uint32(p)))
			}
			return strconv.AppendInt(nil, v, 10), nil
		case 3:
			clen, err := s.number(what)
			if err != nil {
				return nil, err
			}
			ulen, err := s.number(what)
			if err != nil {
				return nil, err
			}
			if clen > uint64(s.left()) {
				return nil, errAt(at, ErrTruncated, "%s: %d compressed bytes, but %d bytes left", what, clen, s.left())
			}
			if ulen > clen*lzfMaxRatio {
				return nil, errAt(at, ErrCorrupt, "%s: %d LZF bytes cannot expand to %d", what, clen, ulen)
			}
			if !keep {
				return nil, s.skip(clen, at, what)
			}
			if s.recMax > 0 && ulen > uint64(s.recMax) {
				return nil, errAt(at, ErrTooLarge, "%s of %d bytes is longer than the limit of %d", what, ulen, s.recMax)
			}
			c, err := s.take(clen, at, what)
			if err != nil {
				return nil, err
			}
			out, err := lzfDecompress(c, ulen)
			if err != nil {
				return nil, errAt(at, ErrCorrupt, "%s: invalid LZF data", what)
			}
			return out, nil
		}
		return nil, errAt(at, ErrCorrupt, "%s: unknown string encoding %d", what, n)
	}
	if n > uint64(s.left()) {
		return nil, errAt(at, ErrTruncated, "%s of %d bytes, but %d bytes left", what, n, s.left())
	}
	if !keep {
		return nil, s.skip(n, at, what)
	}
	return s.take(n, at, what)
}

// skipValue consumes a value of type t (rdbLoadObject's reads, without
// building anything). Redis writes every small aggregate (a ziplist, a
// listpack, an intset, a zipmap) as one string, whose insides are left
// alone here: skipping needs only their length, and the file's CRC-64
// vouches for them.
func (s *stream) skipValue(t Type) error {
	switch t {
	case TypeString, TypeHashZipmap, TypeListZiplist, TypeSetIntset, TypeZsetZiplist,
		TypeHashZiplist, TypeHashListpack, TypeZsetListpack, TypeSetListpack, TypeHashListpackExPreGA:
		_, err := s.str("value", false)
		return err
	case TypeHashListpackEx:
		if _, err := s.fixed(8, "hash minimum expiry"); err != nil {
			return err
		}
		_, err := s.str("value", false)
		return err
	case TypeList, TypeSet, TypeListQuicklist:
		return s.skipStrings("elements", 1)
	case TypeHash:
		return s.skipStrings("fields", 2)
	case TypeZset, TypeZset2:
		n, err := s.count("members", 2)
		if err != nil {
			return err
		}
		for range n {
			if _, err := s.str("member", false); err != nil {
				return err
			}
			if t == TypeZset2 {
				_, err = s.fixed(8, "score")
			} else {
				err = s.skipTextScore()
			}
			if err != nil {
				return err
			}
		}
		return nil
	case TypeListQuicklist2:
		n, err := s.count("quicklist nodes", 2)
		if err != nil {
			return err
		}
		for range n {
			at := s.off()
			c, err := s.number("quicklist node container")
			if err != nil {
				return err
			}
			if c != 1 && c != 2 { // QUICKLIST_NODE_CONTAINER_PLAIN, _PACKED
				return errAt(at, ErrCorrupt, "quicklist node container %d", c)
			}
			if _, err := s.str("quicklist node", false); err != nil {
				return err
			}
		}
		return nil
	case TypeHashMetadata, TypeHashMetadataPreGA:
		if t == TypeHashMetadata {
			if _, err := s.fixed(8, "hash minimum expiry"); err != nil {
				return err
			}
		}
		n, err := s.count("fields", 3)
		if err != nil {
			return err
		}
		for range n {
			if _, err := s.number("field TTL"); err != nil {
				return err
			}
			if _, err := s.str("field", false); err != nil {
				return err
			}
			if _, err := s.str("field value", false); err != nil {
				return err
			}
		}
		return nil
	case TypeStreamListpacks, TypeStreamListpacks2, TypeStreamListpacks3:
		return s.skipStream(t)
	case TypeModule2:
		if _, err := s.number("module type ID"); err != nil {
			return err
		}
		return s.skipModuleItems()
	}
	return errAt(s.off(), ErrCorrupt, "no value of type %d", t)
}

func (s *stream) skipStrings(what string, per int64) error {
	n, err := s.count(what, per)
	if err != nil {
		return err
	}
	for range uint64(per) * n {
		if _, err := s.str("element", false); err != nil {
			return err
		}
	}
	return nil
}

// skipTextScore skips a score of a TypeZset: a length byte, or 253, 254,
// 255 for NaN, +inf, -inf, and that many bytes of text.
func (s *stream) skipTextScore() error {
	at := s.off()
	n, err := s.byte1("score")
	if err != nil || n >= 253 {
		return err
	}
	return s.skip(uint64(n), at, "score")
}

// skipStream skips a stream: its listpacks, its length and IDs, then its
// consumer groups with their pending entries and consumers.
func (s *stream) skipStream(t Type) error {
	if err := s.skipStrings("stream listpacks", 2); err != nil {
		return err
	}
	ids := 3 // length, last ID
	if t >= TypeStreamListpacks2 {
		ids += 5 // first ID, max deleted ID, entries added
	}
	for range ids {
		if _, err := s.number("stream ID"); err != nil {
			return err
		}
	}
	groups, err := s.count("consumer groups", 3)
	if err != nil {
		return err
	}
	for range groups {
		if _, err := s.str("consumer group name", false); err != nil {
			return err
		}
		n := 2 // last delivered ID
		if t >= TypeStreamListpacks2 {
			n++ // entries read
		}
		for range n {
			if _, err := s.number("consumer group ID"); err != nil {
				return err
			}
		}
		pel, err := s.count("pending entries", 16+8+1)
		if err != nil {
			return err
		}
		for range pel {
			if _, err := s.fixed(16, "pending entry ID"); err != nil {
				return err
			}
			if _, err := s.fixed(8, "pending entry delivery time"); err != nil {
				return err
			}
			if _, err := s.number("pending entry delivery count"); err != nil {
				return err
			}
		}
		consumers, err := s.count("consumers", 1+8+1)
		if err != nil {
			return err
		}
		for range consumers {
			if _, err := s.str("consumer name", false); err != nil {
				return err
			}
			if _, err := s.fixed(8, "consumer seen time"); err != nil {
				return err
			}
			if t >= TypeStreamListpacks3 {
				if _, err := s.fixed(8, "consumer active time"); err != nil {
					return err
				}
			}
			n, err := s.count("consumer pending entries", 16)
			if err != nil {
				return err
			}
			for range n {
				if _, err := s.fixed(16, "consumer pending entry ID"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// skipModuleItems skips a module value's items up to and with its EOF
// opcode (rdbLoadCheckModuleValue, which Redis uses for a module it does
// not have; an opcode it does not know is refused here).
func (s *stream) skipModuleItems() error {
	for {
		at := s.off()
		op, err := s.number("module value opcode")
		if err != nil {
			return err
		}
		switch op {
		case moduleEOF:
			return nil
		case moduleSigned, moduleUint:
			_, err = s.number("module integer")
		case moduleFloat:
			_, err = s.fixed(4, "module float")
		case moduleDouble:
			_, err = s.fixed(8, "module double")
		case moduleString:
			_, err = s.str("module string", false)
		default:
			return errAt(at, ErrCorrupt, "unknown module value opcode %d", op)
		}
		if err != nil {
			return err
		}
	}
}
