package rdb

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ModuleID is a module type's 64-bit ID, which Redis writes in front of
// every value of the type: the type's 9-character name, 6 bits a
// character in the alphabet A-Z a-z 0-9 - _, then the 10-bit encoding
// version the module registered (moduleTypeEncodeId in module.c).
type ModuleID uint64

const moduleCharset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// NewModuleID encodes a module type's name and encoding version.
func NewModuleID(name string, encver int) (ModuleID, error) {
	if len(name) != 9 {
		return 0, fmt.Errorf("rdb: module type name %q is not 9 characters", name)
	}
	if encver < 0 || encver > 1023 {
		return 0, fmt.Errorf("rdb: module encoding version %d is not in 0..1023", encver)
	}
	var id uint64
	for i := range len(name) {
		p := strings.IndexByte(moduleCharset, name[i])
		if p < 0 {
			return 0, fmt.Errorf("rdb: module type name %q has a character outside A-Z a-z 0-9 - _", name)
		}
		id = id<<6 | uint64(p)
	}
	return ModuleID(id<<10 | uint64(encver)), nil
}

func mustModuleID(name string, encver int) ModuleID {
	id, err := NewModuleID(name, encver)
	if err != nil {
		panic(err)
	}
	return id
}

// Name is the module type's name, such as "MBbloom--".
func (id ModuleID) Name() string {
	var b [9]byte
	v := uint64(id) >> 10
	for i := 8; i >= 0; i-- {
		b[i] = moduleCharset[v&63]
		v >>= 6
	}
	return string(b[:])
}

// EncVer is the encoding version of the value.
func (id ModuleID) EncVer() int { return int(id & 1023) }

// String is the name and the encoding version, as "MBbloom--/4".
func (id ModuleID) String() string { return id.Name() + "/" + strconv.Itoa(id.EncVer()) }

// ModuleOf reads the module type ID at the start of a TypeModule2 value,
// which says its decoder: DecodeBloom for BloomTypeName, DecodeCuckoo for
// CuckooTypeName.
func ModuleOf(value []byte) (ModuleID, error) {
	c := cursor{b: value}
	id, err := c.number("module type ID")
	return ModuleID(id), err
}

// cursor decodes RDB encodings from a byte slice. Strings it returns alias
// the slice unless they were compressed or are integers.
type cursor struct {
	b   []byte
	pos int
}

func (c *cursor) err(at int, kind error, format string, args ...any) error {
	return errAt(int64(at), kind, format, args...)
}

func (c *cursor) need(n int, at int, what string) error {
	if len(c.b)-c.pos < n {
		return c.err(at, ErrTruncated, "%s ends past the value's last byte, %d", what, len(c.b))
	}
	return nil
}

// length is stream.length on the slice.
func (c *cursor) length(what string) (uint64, bool, error) {
	at := c.pos
	if err := c.need(1, at, what); err != nil {
		return 0, false, err
	}
	b := c.b[c.pos]
	c.pos++
	switch b >> 6 {
	case 0:
		return uint64(b), false, nil
	case 1:
		if err := c.need(1, at, what); err != nil {
			return 0, false, err
		}
		c.pos++
		return uint64(b&0x3f)<<8 | uint64(c.b[c.pos-1]), false, nil
	case 3:
		return uint64(b & 0x3f), true, nil
	}
	switch b {
	case 0x80:
		if err := c.need(4, at, what); err != nil {
			return 0, false, err
		}
		c.pos += 4
		return uint64(binary.BigEndian.Uint32(c.b[c.pos-4:])), false, nil
	case 0x81:
		if err := c.need(8, at, what); err != nil {
			return 0, false, err
		}
		c.pos += 8
		return binary.BigEndian.Uint64(c.b[c.pos-8:]), false, nil
	}
	return 0, false, c.err(at, ErrCorrupt, "unknown length encoding 0x%02x in %s", b, what)
}

func (c *cursor) number(what string) (uint64, error) {
	n, _, err := c.length(what)
	return n, err
}

// str is stream.str on the slice, always keeping.
func (c *cursor) str(what string) ([]byte, error) {
	at := c.pos
	n, enc, err := c.length(what)
	if err != nil {
		return nil, err
	}
	if !enc {
		if n > uint64(len(c.b)-c.pos) {
			return nil, c.err(at, ErrTruncated, "%s of %d bytes, but %d bytes left", what, n, len(c.b)-c.pos)
		}
		c.pos += int(n)
		return c.b[c.pos-int(n) : c.pos : c.pos], nil
	}
	switch n {
	case 0, 1, 2:
		w := 1 << n
		if err := c.need(w, at, what); err != nil {
			return nil, err
		}
		p := c.b[c.pos : c.pos+w]
		c.pos += w
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
		clen, err := c.number(what)
		if err != nil {
			return nil, err
		}
		ulen, err := c.number(what)
		if err != nil {
			return nil, err
		}
		if clen > uint64(len(c.b)-c.pos) {
			return nil, c.err(at, ErrTruncated, "%s: %d compressed bytes, but %d bytes left", what, clen, len(c.b)-c.pos)
		}
		out, err := lzfDecompress(c.b[c.pos:c.pos+int(clen)], ulen)
		if err != nil {
			return nil, c.err(at, ErrCorrupt, "%s: invalid LZF data", what)
		}
		c.pos += int(clen)
		return out, nil
	}
	return nil, c.err(at, ErrCorrupt, "%s: unknown string encoding %d", what, n)
}

// opcode reads a module item's opcode and checks that it is want, as
// RedisModule_Load* does.
func (c *cursor) opcode(want uint64, what string) error {
	at := c.pos
	op, err := c.number(what)
	if err != nil {
		return err
	}
	if op != want {
		return c.err(at, ErrCorrupt, "%s: module item opcode %d, want %d", what, op, want)
	}
	return nil
}

// loadUnsigned is RedisModule_LoadUnsigned.
func (c *cursor) loadUnsigned(what string) (uint64, error) {
	if err := c.opcode(moduleUint, what); err != nil {
		return 0, err
	}
	return c.number(what)
}

// loadUnsignedMax is loadUnsigned, refusing a value past limit, which a
// RedisBloom field of that width could not have held.
func (c *cursor) loadUnsignedMax(what string, limit uint64) (uint64, error) {
	at := c.pos
	v, err := c.loadUnsigned(what)
	if err == nil && v > limit {
		err = c.err(at, ErrCorrupt, "%s %d is more than %d", what, v, limit)
	}
	return v, err
}

// loadDouble is RedisModule_LoadDouble.
func (c *cursor) loadDouble(what string) (float64, error) {
	if err := c.opcode(moduleDouble, what); err != nil {
		return 0, err
	}
	if err := c.need(8, c.pos, what); err != nil {
		return 0, err
	}
	c.pos += 8
	return math.Float64frombits(binary.LittleEndian.Uint64(c.b[c.pos-8:])), nil
}

// loadString is RedisModule_LoadStringBuffer.
func (c *cursor) loadString(what string) ([]byte, error) {
	if err := c.opcode(moduleString, what); err != nil {
		return nil, err
	}
	return c.str(what)
}

// end reads the module value's EOF opcode and checks that nothing follows.
func (c *cursor) end() error {
	if err := c.opcode(moduleEOF, "module value end"); err != nil {
		return err
	}
	if c.pos != len(c.b) {
		return c.err(c.pos, ErrCorrupt, "%d bytes after the module value's end", len(c.b)-c.pos)
	}
	return nil
}

// appendLen is rdbSaveLen: the shortest of the four length encodings.
func appendLen(dst []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(dst, byte(n))
	case n < 1<<14:
		return append(dst, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0x81), n)
}

// appendString is rdbSaveRawString with rdbcompression on, Redis's
// default: a string of up to 11 bytes that reads back as the same integer
// in 32 bits is written as that integer; one of more than 20 bytes that
// LZF shrinks by at least 4 bytes is written compressed; any other as its
// length and bytes.
func appendString(dst, s []byte) []byte {
	if len(s) <= 11 {
		if v, ok := string2ll(s); ok && v >= math.MinInt32 && v <= math.MaxInt32 {
			switch {
			case v >= math.MinInt8 && v <= math.MaxInt8:
				return append(dst, 0xc0, byte(v))
			case v >= math.MinInt16 && v <= math.MaxInt16:
				return binary.LittleEndian.AppendUint16(append(dst, 0xc1), uint16(v))
			}
			return binary.LittleEndian.AppendUint32(append(dst, 0xc2), uint32(v))
		}
	}
	if len(s) > 20 {
		outLen := len(s) - 4
		out := make([]byte, outLen+1)
		if n := lzfCompress(s, out, outLen); n > 0 {
			dst = append(dst, 0xc3)
			dst = appendLen(dst, uint64(n))
			dst = appendLen(dst, uint64(len(s)))
			return append(dst, out[:n]...)
		}
	}
	return append(appendLen(dst, uint64(len(s))), s...)
}

// string2ll is Redis's string2ll (util.c): a decimal integer with no sign
// but an optional '-', no leading zero, no space, within int64.
func string2ll(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) >= 21 {
		return 0, false
	}
	if len(s) == 1 && s[0] == '0' {
		return 0, true
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
		if len(s) == 0 {
			return 0, false
		}
	}
	if s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > math.MaxUint64/10 {
			return 0, false
		}
		v *= 10
		if v > math.MaxUint64-uint64(c-'0') {
			return 0, false
		}
		v += uint64(c - '0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// Module items as RedisModule_Save* writes them.

func appendUnsigned(dst []byte, v uint64) []byte {
	return appendLen(append(dst, moduleUint), v)
}

func appendDouble(dst []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(append(dst, moduleDouble), math.Float64bits(v))
}

func appendStringItem(dst, s []byte) []byte {
	return appendString(append(dst, moduleString), s)
}
