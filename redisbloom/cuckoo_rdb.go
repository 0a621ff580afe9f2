package redisbloom

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// Redis RDB encodings that a module value uses (rdb.h).
const (
	rdbOpcodeEOF    = 0 // RDB_MODULE_OPCODE_EOF
	rdbOpcodeUint   = 2 // RDB_MODULE_OPCODE_UINT
	rdbOpcodeString = 5 // RDB_MODULE_OPCODE_STRING
	rdbLen14        = 1 // 01xxxxxx xxxxxxxx: a 14-bit length
	rdbLen32        = 0x80
	rdbLen64        = 0x81
	rdbEncoded      = 3 // 11xxxxxx: a string in a special encoding
	rdbEncInt8      = 0
	rdbEncInt16     = 1
	rdbEncInt32     = 2
	rdbEncLZF       = 3
	lzfMaxRatio     = 88 // an LZF byte decodes to at most 88 bytes (a 3-byte reference to 264)
)

// MarshalRDB returns the filter as RedisBloom's CFRdbSave writes it into
// an RDB file or a DUMP payload: the value of an RDB_TYPE_MODULE_2 object
// whose module id is CuckooRDBModuleID (type MBbloomCF, encoding version
// CuckooRDBEncVer), from after the module id through the closing
// RDB_MODULE_OPCODE_EOF. The type byte, the module id and, for DUMP, the
// RDB version and CRC-64 around it are the caller's. The value is:
//
//	UINT   sub-filters
//	UINT   buckets of the first sub-filter
//	UINT   items
//	UINT   deletes since the last compaction
//	UINT   bucket size
//	UINT   max iterations
//	UINT   expansion
//	per sub-filter, oldest first:
//	  UINT    its buckets
//	  STRING  its bytes (buckets · bucket size)
//	EOF
//
// UINT is the opcode 2 and an RDB length (6, 14, 32 or 64 bits); STRING is
// the opcode 5 and an RDB string; EOF is the byte 0. Strings are written
// as Redis writes them with rdbcompression off: as an integer when they
// spell one of up to 11 characters, else raw. (Redis with rdbcompression
// on writes strings over 20 bytes LZF-compressed when that is shorter;
// both load the same, and UnmarshalRDB reads either.)
func (f *CuckooFilter) MarshalRDB() []byte { return f.t.appendRDB(nil) }

func (t *cfTable) appendRDB(dst []byte) []byte {
	for _, v := range [...]uint64{uint64(len(t.subs)), t.numBuckets, t.numItems, t.numDeletes,
		t.bucketSize, t.maxIterations, t.expansion} {
		dst = append(dst, rdbOpcodeUint)
		dst = appendRDBLen(dst, v)
	}
	for i := range t.subs {
		s := &t.subs[i]
		dst = append(dst, rdbOpcodeUint)
		dst = appendRDBLen(dst, s.numBuckets)
		dst = append(dst, rdbOpcodeString)
		n := s.numBuckets * t.bucketSize
		if n <= 11 {
			b := cfAppendBytes(nil, s.words, 0, n, t.shared != nil)
			if enc, ok := rdbIntEncoding(b); ok {
				dst = append(dst, enc...)
				continue
			}
		}
		dst = appendRDBLen(dst, n)
		dst = cfAppendBytes(dst, s.words, 0, n, t.shared != nil)
	}
	return append(dst, rdbOpcodeEOF)
}

// appendRDBLen appends v as rdbSaveLen does.
func appendRDBLen(dst []byte, v uint64) []byte {
	switch {
	case v < 1<<6:
		return append(dst, byte(v))
	case v < 1<<14:
		return append(dst, byte(rdbLen14<<6|v>>8), byte(v))
	case v <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(dst, rdbLen32), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, rdbLen64), v)
}

// rdbIntEncoding returns the integer encoding of a string that spells a
// 32-bit integer exactly as Redis prints it (rdbTryIntegerEncoding).
func rdbIntEncoding(b []byte) ([]byte, bool) {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || strconv.FormatInt(v, 10) != string(b) {
		return nil, false
	}
	switch {
	case v >= -1<<7 && v < 1<<7:
		return []byte{rdbEncoded<<6 | rdbEncInt8, byte(v)}, true
	case v >= -1<<15 && v < 1<<15:
		return binary.LittleEndian.AppendUint16([]byte{rdbEncoded<<6 | rdbEncInt16}, uint16(v)), true
	case v >= -1<<31 && v < 1<<31:
		return binary.LittleEndian.AppendUint32([]byte{rdbEncoded<<6 | rdbEncInt32}, uint32(v)), true
	}
	return nil, false
}

// UnmarshalRDB replaces the filter with the one an MBbloomCF value in data
// holds, as CFRdbLoad reads it, and returns the bytes it took: the value
// as MarshalRDB describes it, through its EOF opcode; data may go on
// after. encver is the encoding version from the module id (its low 10
// bits): 4, or 0 to 3 for RedisBloom's older layout without deletes,
// bucket size, max iterations, expansion and per-sub-filter buckets
// (bucket size 2, 20 iterations, expansion 1). Strings may be raw,
// integer-encoded or LZF-compressed.
//
// It fails with ErrCuckooBadRDB, leaving the filter unchanged, for a
// value that is truncated or corrupt, of another encoding version, or of
// a shape RedisBloom never makes (see NewCuckooFromHeader), and for one
// whose size (CuckooInfo's Size) would pass maxBytes (0: the machine's RAM
// plus swap), which also wraps ErrCuckooTooLarge. Before it allocates a
// sub-filter it has checked that data holds its bytes, or for an
// LZF-compressed string enough bytes to decode to them. maxBytes then
// bounds the filter's growth too.
func (f *CuckooFilter) UnmarshalRDB(data []byte, encver int, maxBytes uint64) (int, error) {
	t, n, err := decodeCFRDB(data, encver, maxBytes)
	if err != nil {
		return 0, err
	}
	f.t = t
	return n, nil
}

// rdbReader reads an RDB module value.
type rdbReader struct {
	b   []byte
	off int
}

func (r *rdbReader) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrCuckooBadRDB, r.off, fmt.Sprintf(format, args...))
}

// length reads an RDB length (rdbLoadLen), or the kind of a string's
// special encoding when encoded is true.
func (r *rdbReader) length() (v uint64, encoded bool, err error) {
	if r.off >= len(r.b) {
		return 0, false, r.errorf("truncated")
	}
	c := r.b[r.off]
	r.off++
	switch c >> 6 {
	case 0:
		return uint64(c & 0x3f), false, nil
	case rdbLen14:
		if r.off >= len(r.b) {
			return 0, false, r.errorf("truncated")
		}
		r.off++
		return uint64(c&0x3f)<<8 | uint64(r.b[r.off-1]), false, nil
	case rdbEncoded:
		return uint64(c & 0x3f), true, nil
	}
	var n int
	switch c {
	case rdbLen32:
		n = 4
	case rdbLen64:
		n = 8
	default:
		return 0, false, r.errorf("unknown length encoding %#x", c)
	}
	if len(r.b)-r.off < n {
		return 0, false, r.errorf("truncated")
	}
	if n == 4 {
		v = uint64(binary.BigEndian.Uint32(r.b[r.off:]))
	} else {
		v = binary.BigEndian.Uint64(r.b[r.off:])
	}
	r.off += n
	return v, false, nil
}

// plainLength reads a length that may not be a special encoding.
func (r *rdbReader) plainLength() (uint64, error) {
	v, enc, err := r.length()
	if err == nil && enc {
		err = r.errorf("an encoded string where a length belongs")
	}
	return v, err
}

// unsigned reads a value of RedisModule_SaveUnsigned.
func (r *rdbReader) unsigned() (uint64, error) {
	if op, err := r.plainLength(); err != nil || op != rdbOpcodeUint {
		if err == nil {
			err = r.errorf("opcode %d, want %d (unsigned)", op, rdbOpcodeUint)
		}
		return 0, err
	}
	return r.plainLength()
}

// bucketBytes reads a value of RedisModule_SaveStringBuffer that must be
// want bytes long into words of that many bytes.
func (r *rdbReader) bucketBytes(want uint64) ([]uint64, error) {
	if op, err := r.plainLength(); err != nil || op != rdbOpcodeString {
		if err == nil {
			err = r.errorf("opcode %d, want %d (string)", op, rdbOpcodeString)
		}
		return nil, err
	}
	v, enc, err := r.length()
	if err != nil {
		return nil, err
	}
	var b []byte
	switch {
	case !enc:
		if v != want {
			return nil, r.errorf("a sub-filter of %d bytes, want %d", v, want)
		}
		if uint64(len(r.b)-r.off) < v {
			return nil, r.errorf("truncated: %d bytes of %d", len(r.b)-r.off, v)
		}
		b = r.b[r.off : r.off+int(v)]
		r.off += int(v)
	case v <= rdbEncInt32:
		n := 1 << v
		if len(r.b)-r.off < n {
			return nil, r.errorf("truncated")
		}
		var x int64
		switch v {
		case rdbEncInt8:
			x = int64(int8(r.b[r.off]))
		case rdbEncInt16:
			x = int64(int16(binary.LittleEndian.Uint16(r.b[r.off:])))
		default:
			x = int64(int32(binary.LittleEndian.Uint32(r.b[r.off:])))
		}
		r.off += n
		b = strconv.AppendInt(nil, x, 10)
		if uint64(len(b)) != want {
			return nil, r.errorf("a sub-filter of %d bytes, want %d", len(b), want)
		}
	case v == rdbEncLZF:
		clen, err := r.plainLength()
		if err != nil {
			return nil, err
		}
		ulen, err := r.plainLength()
		if err != nil {
			return nil, err
		}
		if ulen != want {
			return nil, r.errorf("a sub-filter of %d bytes, want %d", ulen, want)
		}
		if uint64(len(r.b)-r.off) < clen {
			return nil, r.errorf("truncated: %d bytes of %d", len(r.b)-r.off, clen)
		}
		if ulen/lzfMaxRatio > clen {
			return nil, r.errorf("%d compressed bytes cannot hold %d", clen, ulen)
		}
		b = make([]byte, ulen)
		if err := lzfDecompress(r.b[r.off:r.off+int(clen)], b); err != nil {
			return nil, r.errorf("%v", err)
		}
		r.off += int(clen)
	default:
		return nil, r.errorf("unknown string encoding %d", v)
	}
	words := cfMakeWords(want)
	cfStoreBytes(words, 0, b, false)
	return words, nil
}

// lzfDecompress decodes LZF (liblzf's lzf_decompress) into exactly out.
func lzfDecompress(in, out []byte) error {
	op := 0
	for ip := 0; ip < len(in); {
		ctrl := int(in[ip])
		ip++
		if ctrl < 1<<5 {
			n := ctrl + 1
			if len(in)-ip < n || len(out)-op < n {
				return fmt.Errorf("LZF literal of %d bytes past the end", n)
			}
			copy(out[op:], in[ip:ip+n])
			op += n
			ip += n
			continue
		}
		n := ctrl >> 5
		if n == 7 {
			if ip >= len(in) {
				return fmt.Errorf("LZF reference truncated")
			}
			n += int(in[ip])
			ip++
		}
		if ip >= len(in) {
			return fmt.Errorf("LZF reference truncated")
		}
		ref := op - (ctrl&0x1f)<<8 - 1 - int(in[ip])
		ip++
		n += 2
		if ref < 0 || len(out)-op < n {
			return fmt.Errorf("LZF reference out of bounds")
		}
		for range n {
			out[op] = out[ref]
			op++
			ref++
		}
	}
	if op != len(out) {
		return fmt.Errorf("LZF data of %d bytes, want %d", op, len(out))
	}
	return nil
}

// decodeCFRDB is CFRdbLoad with every field checked.
func decodeCFRDB(data []byte, encver int, maxBytes uint64) (cfTable, int, error) {
	if encver < 0 || encver > CuckooRDBEncVer {
		return cfTable{}, 0, fmt.Errorf("%w: encoding version %d, this build reads 0 to %d", ErrCuckooBadRDB, encver, CuckooRDBEncVer)
	}
	r := &rdbReader{b: data}
	n := 3
	if encver >= CuckooRDBEncVer {
		n = 7
	}
	var v [7]uint64
	for i := range n {
		var err error
		if v[i], err = r.unsigned(); err != nil {
			return cfTable{}, 0, err
		}
	}
	if encver < CuckooRDBEncVer {
		v[3], v[4], v[5], v[6] = 0, CuckooDefaultBucketSize, CuckooDefaultMaxIterations, CuckooDefaultExpansion
	}
	t, err := cfShape(v[1], v[0], v[4], v[5], v[6], maxBytes, ErrCuckooBadRDB)
	if err != nil {
		return cfTable{}, 0, err
	}
	t.numItems, t.numDeletes = v[2], v[3]
	for i := range t.subs {
		s := &t.subs[i]
		if encver >= CuckooRDBEncVer {
			nb, err := r.unsigned()
			if err != nil {
				return cfTable{}, 0, err
			}
			if nb != s.numBuckets {
				return cfTable{}, 0, r.errorf("sub-filter %d has %d buckets, its place says %d", i, nb, s.numBuckets)
			}
		}
		if s.words, err = r.bucketBytes(s.numBuckets * t.bucketSize); err != nil {
			return cfTable{}, 0, err
		}
	}
	if op, err := r.plainLength(); err != nil || op != rdbOpcodeEOF {
		if err == nil {
			err = r.errorf("opcode %d, want EOF", op)
		}
		return cfTable{}, 0, err
	}
	t.lazy = false
	return t, r.off, nil
}
