package rdb

import (
	"bytes"
	"encoding/binary"
)

// PayloadVersion is the RDB version a DUMP payload of Redis 7.4 carries,
// and the newest ParsePayload takes.
const PayloadVersion = MaxVersion

// ParsePayload checks a DUMP payload as RESTORE does and returns its
// value's type and encoding, which aliases p. A payload is
//
//	type (1 byte) | value | RDB version (2 bytes, little-endian) | CRC-64 (8 bytes, little-endian)
//
// where the CRC-64 covers everything before it. As Redis's
// verifyDumpPayload, ParsePayload refuses a version newer than
// PayloadVersion and a CRC-64 that does not match (0 is no exception in a
// payload); beyond it, it checks that the value is well-formed for its
// type and fills the space before the footer exactly. Errors are *Error
// values with offsets into p.
func ParsePayload(p []byte) (Type, []byte, error) {
	if len(p) < 11 {
		return 0, nil, errAt(0, ErrTruncated, "DUMP payload of %d bytes: the type and the 10-byte footer take 11", len(p))
	}
	foot := len(p) - 10
	if v := binary.LittleEndian.Uint16(p[foot:]); v > PayloadVersion {
		return 0, nil, errAt(int64(foot), ErrVersion, "DUMP payload of RDB version %d, newer than %d", v, PayloadVersion)
	}
	if got, want := binary.LittleEndian.Uint64(p[foot+2:]), crc64(0, p[:foot+2]); got != want {
		return 0, nil, errAt(int64(foot+2), ErrChecksum, "DUMP payload checksum %016x, but its bytes sum to %016x", got, want)
	}
	t := Type(p[0])
	if !t.Valid() {
		return 0, nil, errAt(0, ErrCorrupt, "unknown value type %d", p[0])
	}
	value := p[1:foot]
	s := newStream(bytes.NewReader(value), int64(len(value)), min(max(len(value), 64), streamBuf))
	s.base = 1
	s.size++ // offsets count the type byte
	var err error
	switch t {
	case TypeModulePreGA:
		err = errAt(1, ErrUnsupported, "module value in the format of Redis 4.0's release candidates, which Redis itself refuses")
	default:
		err = s.skipValue(t)
	}
	if err != nil {
		return 0, nil, err
	}
	if s.off() != int64(foot) {
		return 0, nil, errAt(s.off(), ErrCorrupt, "%d bytes between the value and the footer", int64(foot)-s.off())
	}
	return t, value, nil
}

// AppendPayload appends the DUMP payload of a value of type t whose
// encoding is value (Entry.Value, or a filter's AppendValue), as Redis 7.4
// makes it: version PayloadVersion.
func AppendPayload(dst []byte, t Type, value []byte) []byte {
	start := len(dst)
	dst = append(dst, byte(t))
	dst = append(dst, value...)
	dst = binary.LittleEndian.AppendUint16(dst, PayloadVersion)
	return binary.LittleEndian.AppendUint64(dst, crc64(0, dst[start:]))
}
