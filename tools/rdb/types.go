package rdb

import (
	"errors"
	"fmt"
	"strconv"
)

// Type is the byte in front of a value in an RDB file or a DUMP payload
// (rdb.h's RDB_TYPE_*). It names the value's encoding, not only its Redis
// type: a small hash is TypeHashListpack, a large one TypeHash.
type Type uint8

// The value types of RDB versions 9 to 12. Type 8 was never used.
const (
	TypeString              Type = 0  // a string
	TypeList                Type = 1  // a list, element by element (before Redis 3.2)
	TypeSet                 Type = 2  // a set, member by member
	TypeZset                Type = 3  // a sorted set with scores as text (before RDB 8)
	TypeHash                Type = 4  // a hash, field by field
	TypeZset2               Type = 5  // a sorted set with binary scores
	TypeModulePreGA         Type = 6  // a module value of Redis 4.0's release candidates: unreadable without the module
	TypeModule2             Type = 7  // a module value: module type ID, typed items, EOF
	TypeHashZipmap          Type = 9  // a hash in one zipmap blob (before Redis 2.6)
	TypeListZiplist         Type = 10 // a list in one ziplist blob (before Redis 3.2)
	TypeSetIntset           Type = 11 // a set of integers in one intset blob
	TypeZsetZiplist         Type = 12 // a sorted set in one ziplist blob (before Redis 7.0)
	TypeHashZiplist         Type = 13 // a hash in one ziplist blob (before Redis 7.0)
	TypeListQuicklist       Type = 14 // a list of ziplist blobs (Redis 3.2 to 6.2)
	TypeStreamListpacks     Type = 15 // a stream (Redis 5.0 to 6.2)
	TypeHashListpack        Type = 16 // a hash in one listpack blob
	TypeZsetListpack        Type = 17 // a sorted set in one listpack blob
	TypeListQuicklist2      Type = 18 // a list of listpack blobs (Redis 7.0 on)
	TypeStreamListpacks2    Type = 19 // a stream with first ID, max deleted ID and entries added (Redis 7.0)
	TypeSetListpack         Type = 20 // a set in one listpack blob (Redis 7.2 on)
	TypeStreamListpacks3    Type = 21 // a stream whose consumers have an active time (Redis 7.2 on)
	TypeHashMetadataPreGA   Type = 22 // a hash with field TTLs, absolute (Redis 7.4 release candidates)
	TypeHashListpackExPreGA Type = 23 // a listpack hash with field TTLs (Redis 7.4 release candidates)
	TypeHashMetadata        Type = 24 // a hash with field TTLs relative to its earliest (Redis 7.4 on)
	TypeHashListpackEx      Type = 25 // a listpack hash with field TTLs after its earliest (Redis 7.4 on)

	maxType = TypeHashListpackEx
)

// Valid reports whether t is a value type an RDB file or payload may hold.
func (t Type) Valid() bool { return t <= maxType && t != 8 }

var typeNames = [...]string{
	TypeString: "string", TypeList: "list", TypeSet: "set", TypeZset: "zset", TypeHash: "hash",
	TypeZset2: "zset2", TypeModulePreGA: "module-pre-ga", TypeModule2: "module2",
	TypeHashZipmap: "hash-zipmap", TypeListZiplist: "list-ziplist", TypeSetIntset: "set-intset",
	TypeZsetZiplist: "zset-ziplist", TypeHashZiplist: "hash-ziplist", TypeListQuicklist: "list-quicklist",
	TypeStreamListpacks: "stream-listpacks", TypeHashListpack: "hash-listpack",
	TypeZsetListpack: "zset-listpack", TypeListQuicklist2: "list-quicklist2",
	TypeStreamListpacks2: "stream-listpacks2", TypeSetListpack: "set-listpack",
	TypeStreamListpacks3: "stream-listpacks3", TypeHashMetadataPreGA: "hash-metadata-pre-ga",
	TypeHashListpackExPreGA: "hash-listpack-ex-pre-ga", TypeHashMetadata: "hash-metadata",
	TypeHashListpackEx: "hash-listpack-ex",
}

// String names the encoding, as "hash-listpack" or "module2".
func (t Type) String() string {
	if t.Valid() {
		return typeNames[t]
	}
	return "type" + strconv.Itoa(int(t))
}

// Kind is the Redis type of values of type t, as the TYPE command names it:
// "string", "list", "set", "zset", "hash", "stream" or "module" (TYPE
// gives a module value's type name instead: see Entry.Kind).
func (t Type) Kind() string {
	switch t {
	case TypeString:
		return "string"
	case TypeList, TypeListZiplist, TypeListQuicklist, TypeListQuicklist2:
		return "list"
	case TypeSet, TypeSetIntset, TypeSetListpack:
		return "set"
	case TypeZset, TypeZset2, TypeZsetZiplist, TypeZsetListpack:
		return "zset"
	case TypeHash, TypeHashZipmap, TypeHashZiplist, TypeHashListpack, TypeHashMetadataPreGA,
		TypeHashListpackExPreGA, TypeHashMetadata, TypeHashListpackEx:
		return "hash"
	case TypeStreamListpacks, TypeStreamListpacks2, TypeStreamListpacks3:
		return "stream"
	case TypeModulePreGA, TypeModule2:
		return "module"
	}
	return t.String()
}

// Opcodes of the RDB file that are not value types (rdb.h's RDB_OPCODE_*).
const (
	opSlotInfo      = 244 // slot, keys, expiring keys (Redis 7.4 cluster mode)
	opFunction2     = 245 // a function library's code
	opFunctionPreGA = 246 // Redis 7.0's release candidates' functions
	opModuleAux     = 247 // a module's data outside the keyspace
	opIdle          = 248 // the next key's LRU idle time
	opFreq          = 249 // the next key's LFU counter
	opAux           = 250 // a name and a value about the file
	opResizeDB      = 251 // the database's key and expire counts
	opExpireTimeMs  = 252 // the next key's expiry, Unix milliseconds
	opExpireTime    = 253 // the next key's expiry, Unix seconds
	opSelectDB      = 254 // the database of the keys that follow
	opEOF           = 255 // the end of the keys, then the checksum
)

// Item opcodes inside a module value (rdb.h's RDB_MODULE_OPCODE_*): each
// RedisModule_Save* call writes one before its value.
const (
	moduleEOF    = 0 // the value's end
	moduleSigned = 1 // RedisModule_SaveSigned: a length-encoded uint64, two's complement
	moduleUint   = 2 // RedisModule_SaveUnsigned: a length-encoded uint64
	moduleFloat  = 3 // RedisModule_SaveFloat: 4 bytes, little-endian
	moduleDouble = 4 // RedisModule_SaveDouble: 8 bytes, little-endian
	moduleString = 5 // RedisModule_SaveStringBuffer: an RDB string
)

// The errors a refusal wraps: test with errors.Is.
var (
	// ErrTruncated: the input ends before what it describes does.
	ErrTruncated = errors.New("truncated")
	// ErrChecksum: the CRC-64 does not match the bytes.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrVersion: an RDB version this package does not read.
	ErrVersion = errors.New("unsupported RDB version")
	// ErrCorrupt: bytes that no Redis writes (a bad opcode, encoding,
	// length or field).
	ErrCorrupt = errors.New("corrupt")
	// ErrUnsupported: a well-formed encoding this package cannot read: a
	// pre-release format, or a module encoding version newer than
	// RedisBloom 2.8's.
	ErrUnsupported = errors.New("unsupported")
	// ErrTooLarge: a value past a limit the caller set.
	ErrTooLarge = errors.New("too large")
)

// Error is a refusal of input, with the byte offset it concerns: from the
// start of the file for Reader, of the payload for ParsePayload, of the
// value for the module value decoders.
type Error struct {
	Offset int64  // where the faulty item starts
	Msg    string // what is wrong
	Err    error  // one of the Err* values above, or the reader's own error
}

func (e *Error) Error() string {
	return fmt.Sprintf("rdb: at byte %d: %s", e.Offset, e.Msg)
}

// Unwrap returns e.Err.
func (e *Error) Unwrap() error { return e.Err }

func errAt(off int64, kind error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if kind != nil && kind != ErrCorrupt {
		msg += " (" + kind.Error() + ")"
	}
	return &Error{Offset: off, Msg: msg, Err: kind}
}
