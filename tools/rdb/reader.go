package rdb

import (
	"encoding/binary"
	"io"
	"math"
	"os"
)

// The RDB versions Reader takes: 9 (Redis 5.0) to 12 (Redis 7.4).
const (
	MinVersion = 9
	MaxVersion = 12
)

// NoExpiry is Entry.ExpireAt, Idle and Freq of a key without one.
const NoExpiry = -1

// Options adjusts a Reader. The zero value is ready to use.
type Options struct {
	// Size is the input's length in bytes, if known. Every length in the
	// file is then checked against the bytes left before anything is read,
	// skipped or allocated for it, and bytes after the checksum are
	// refused. It must be exact. 0 means unknown, unless the input has
	// Size() int64 and Seek methods (bytes.Reader, io.SectionReader) or is
	// a regular *os.File: then it is the bytes from the current offset to
	// the end.
	Size int64

	// Keep reports whether Next should return the value of the entry it is
	// reading (DB, Key, Type, ExpireAt, Idle, Freq and, for module values,
	// Module are set). nil keeps RedisBloom's filters only (KeepRedisBloom).
	// The others are skipped as they stream by, never held in memory.
	Keep func(e *Entry) bool

	// MaxValueBytes bounds the bytes of one kept value as the file holds
	// it, and of a key or AUX field as expanded (0: only the input bounds
	// them).
	MaxValueBytes int64
}

// KeepRedisBloom keeps the values of RedisBloom's Bloom and cuckoo
// filters: the default of Options.Keep.
func KeepRedisBloom(e *Entry) bool {
	return e.Type == TypeModule2 && (e.Module.Name() == BloomTypeName || e.Module.Name() == CuckooTypeName)
}

// Entry is one key of an RDB file.
type Entry struct {
	Offset   int64    // of the key's first byte in the file: its first opcode
	DB       int      // the database it is in
	Key      []byte   // the key's name
	Type     Type     // the value's encoding
	Module   ModuleID // for TypeModule2 and TypeModulePreGA: the module type and encoding version
	ExpireAt int64    // Unix time in milliseconds, or NoExpiry; a past time is returned as it is
	Idle     int64    // LRU idle time in seconds, or NoExpiry
	Freq     int      // LFU counter, or NoExpiry

	// Value is the value's encoding after the type byte, exactly as in the
	// file, if it was kept; nil if it was skipped. A DUMP payload of the
	// key is AppendPayload(nil, Type, Value); a RedisBloom filter's value
	// decodes with DecodeBloom or DecodeCuckoo.
	Value []byte
}

// Kind is the key's Redis type as TYPE names it: "string", "hash", ...,
// and for a module value its type's name, such as "MBbloom--".
func (e *Entry) Kind() string {
	if e.Type == TypeModule2 || e.Type == TypeModulePreGA {
		return e.Module.Name()
	}
	return e.Type.Kind()
}

// AuxField is one AUX record of the file: redis-ver, ctime, used-mem, ...
type AuxField struct {
	Key, Value string
}

// Stats counts what a Reader has read so far.
type Stats struct {
	Keys      int64            // keys read
	Kept      int64            // keys whose Value was kept
	Skipped   map[string]int64 // keys whose value was skipped, by Entry.Kind
	ModuleAux map[string]int64 // MODULE_AUX records, by module type name
	Functions int64            // function libraries (FUNCTION2), skipped
}

// Reader reads the keys of a Redis RDB file, of versions MinVersion to
// MaxVersion, from a stream: only the values it keeps are held in memory.
// It checks the structure of every record and, at the end, the file's
// CRC-64 (a checksum of 0 means the file was written without one, as Redis
// takes it); any fault is an *Error with the byte offset. It is not safe for
// concurrent use.
//
// The file is "REDIS" and a four-digit version, then records, each an
// opcode byte: AUX, SELECTDB, RESIZEDB, SLOT_INFO, MODULE_AUX and FUNCTION2
// are read (and kept or counted), EXPIRETIME, EXPIRETIME_MS, IDLE and FREQ
// set the next key's attributes, a value type starts a key (its name, a
// string, then its value), and EOF is followed by the 8-byte CRC-64,
// little-endian. docs/format.md describes every encoding.
type Reader struct {
	s       *stream
	keep    func(*Entry) bool
	version int
	aux     []AuxField
	stats   Stats
	db      int
	done    bool
	err     error
}

// NewReader reads the file's magic and version from r and returns a Reader
// for its records. opts may be nil.
func NewReader(r io.Reader, opts *Options) (*Reader, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	size := o.Size
	if size <= 0 {
		size = inputSize(r)
	}
	buf := streamBuf
	if size >= 0 && size < streamBuf {
		buf = max(int(size), 64) // a small input needs no big buffer; fixed reads need 16 bytes
	}
	s := newStream(r, size, buf)
	s.sum = true
	s.recMax = o.MaxValueBytes
	rd := &Reader{s: s, keep: o.Keep, stats: Stats{Skipped: map[string]int64{}, ModuleAux: map[string]int64{}}}
	if rd.keep == nil {
		rd.keep = KeepRedisBloom
	}
	magic, err := s.fixed(9, "magic")
	if err != nil {
		return nil, err
	}
	if string(magic[:5]) != "REDIS" {
		return nil, errAt(0, ErrCorrupt, "not an RDB file: no REDIS magic")
	}
	v := 0
	for _, c := range magic[5:9] {
		if c < '0' || c > '9' {
			return nil, errAt(5, ErrCorrupt, "RDB version %q is not a number", magic[5:9])
		}
		v = v*10 + int(c-'0')
	}
	if v < MinVersion || v > MaxVersion {
		return nil, errAt(5, ErrVersion, "RDB version %d: this reader takes %d (Redis 5.0) to %d (Redis 7.4)", v, MinVersion, MaxVersion)
	}
	rd.version = v
	return rd, nil
}

// inputSize is the bytes left in r, if r can say, else -1.
func inputSize(r io.Reader) int64 {
	var size int64
	switch r := r.(type) {
	case interface{ Size() int64 }:
		size = r.Size()
	case *os.File:
		fi, err := r.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		size = fi.Size()
	default:
		return -1
	}
	seeker, ok := r.(io.Seeker)
	if !ok {
		return -1
	}
	off, err := seeker.Seek(0, io.SeekCurrent)
	if err != nil || off > size {
		return -1
	}
	return size - off
}

// Version is the file's RDB version.
func (r *Reader) Version() int { return r.version }

// Aux returns the AUX fields read so far: all of them once Next has
// returned io.EOF (Redis writes them before the keys, but may write some
// after).
func (r *Reader) Aux() []AuxField { return r.aux }

// Offset is the number of bytes read so far.
func (r *Reader) Offset() int64 { return r.s.off() }

// Stats returns the counts so far; its maps are copies.
func (r *Reader) Stats() Stats {
	st := r.stats
	st.Skipped = make(map[string]int64, len(r.stats.Skipped))
	for k, v := range r.stats.Skipped {
		st.Skipped[k] = v
	}
	st.ModuleAux = make(map[string]int64, len(r.stats.ModuleAux))
	for k, v := range r.stats.ModuleAux {
		st.ModuleAux[k] = v
	}
	return st
}

// Next reads the next key. It returns io.EOF after the last key, once the
// checksum has been verified, and the same error again after a failure.
func (r *Reader) Next() (*Entry, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.done {
		return nil, io.EOF
	}
	e, err := r.next()
	if err != nil {
		r.err = err
		return nil, err
	}
	if e == nil {
		r.done = true
		return nil, io.EOF
	}
	return e, nil
}

func (r *Reader) next() (*Entry, error) {
	s := r.s
	e := &Entry{Offset: -1, ExpireAt: NoExpiry, Idle: NoExpiry, Freq: NoExpiry}
	for {
		at := s.off()
		op, err := s.byte1("record")
		if err != nil {
			return nil, err
		}
		if e.Offset < 0 && (op == opExpireTime || op == opExpireTimeMs || op == opFreq || op == opIdle || Type(op).Valid()) {
			e.Offset = at
		}
		switch op {
		case opExpireTime:
			p, err := s.fixed(4, "expiry")
			if err != nil {
				return nil, err
			}
			e.ExpireAt = int64(int32(binary.LittleEndian.Uint32(p))) * 1000
			continue
		case opExpireTimeMs:
			p, err := s.fixed(8, "expiry")
			if err != nil {
				return nil, err
			}
			e.ExpireAt = int64(binary.LittleEndian.Uint64(p))
			continue
		case opFreq:
			b, err := s.byte1("LFU counter")
			if err != nil {
				return nil, err
			}
			e.Freq = int(b)
			continue
		case opIdle:
			n, err := s.number("LRU idle time")
			if err != nil {
				return nil, err
			}
			e.Idle = int64(min(n, math.MaxInt64))
			continue
		case opEOF:
			return nil, r.finish()
		case opSelectDB:
			n, err := s.number("database")
			if err != nil {
				return nil, err
			}
			if n > math.MaxInt32 {
				return nil, errAt(at, ErrCorrupt, "database %d", n)
			}
			r.db = int(n)
			continue
		case opResizeDB:
			if _, err := s.number("database size"); err != nil {
				return nil, err
			}
			if _, err := s.number("database expires size"); err != nil {
				return nil, err
			}
			continue
		case opSlotInfo:
			slot, err := s.number("slot")
			if err != nil {
				return nil, err
			}
			if slot >= 16384 {
				return nil, errAt(at, ErrCorrupt, "slot %d", slot)
			}
			if _, err := s.number("slot size"); err != nil {
				return nil, err
			}
			if _, err := s.number("slot expires size"); err != nil {
				return nil, err
			}
			continue
		case opAux:
			k, err := s.str("AUX name", true)
			if err != nil {
				return nil, err
			}
			v, err := s.str("AUX value", true)
			if err != nil {
				return nil, err
			}
			r.aux = append(r.aux, AuxField{Key: string(k), Value: string(v)})
			continue
		case opModuleAux:
			id, err := s.number("module type ID")
			if err != nil {
				return nil, err
			}
			wat := s.off()
			if op, err := s.number("module AUX when opcode"); err != nil {
				return nil, err
			} else if op != moduleUint {
				return nil, errAt(wat, ErrCorrupt, "module AUX when opcode %d", op)
			}
			if _, err := s.number("module AUX when"); err != nil {
				return nil, err
			}
			if err := s.skipModuleItems(); err != nil {
				return nil, err
			}
			r.stats.ModuleAux[ModuleID(id).Name()]++
			continue
		case opFunction2:
			if _, err := s.str("function library", false); err != nil {
				return nil, err
			}
			r.stats.Functions++
			continue
		case opFunctionPreGA:
			return nil, errAt(at, ErrUnsupported, "function in the format of Redis 7.0's release candidates, which Redis itself refuses")
		}
		t := Type(op)
		if !t.Valid() {
			return nil, errAt(at, ErrCorrupt, "unknown record type 0x%02x", op)
		}
		return e, r.readKey(e, t)
	}
}

// readKey reads a key's name and value.
func (r *Reader) readKey(e *Entry, t Type) error {
	s := r.s
	e.DB, e.Type = r.db, t
	key, err := s.str("key", true)
	if err != nil {
		return err
	}
	e.Key = key
	valueAt := s.off()
	s.rec, s.recOn = nil, true
	defer func() { s.rec, s.recOn = nil, false }()
	if t == TypeModule2 || t == TypeModulePreGA {
		id, err := s.number("module type ID")
		if err != nil {
			return err
		}
		e.Module = ModuleID(id)
		if t == TypeModulePreGA {
			return errAt(valueAt, ErrUnsupported, "module value of type %s in the format of Redis 4.0's release candidates, which only the module can delimit", e.Module)
		}
	}
	keep := r.keep(e)
	if !keep {
		s.rec, s.recOn = nil, false
	}
	if t == TypeModule2 {
		err = s.skipModuleItems()
	} else {
		err = s.skipValue(t)
	}
	if err != nil {
		return err
	}
	r.stats.Keys++
	if keep {
		e.Value = s.rec
		r.stats.Kept++
	} else {
		r.stats.Skipped[e.Kind()]++
	}
	return nil
}

// finish checks the checksum after the EOF opcode and, when the size is
// known, that nothing follows it.
func (r *Reader) finish() error {
	s := r.s
	sum := s.checksum()
	at := s.off()
	p, err := s.fixed(8, "checksum")
	if err != nil {
		return err
	}
	if got := binary.LittleEndian.Uint64(p); got != 0 && got != sum {
		return errAt(at, ErrChecksum, "checksum %016x, but the bytes before it sum to %016x", got, sum)
	}
	if s.size >= 0 && s.off() != s.size {
		return errAt(s.off(), ErrCorrupt, "%d bytes after the checksum", s.size-s.off())
	}
	return nil
}
