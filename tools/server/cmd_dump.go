package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
)

// scanDumpChunk is the most SCANDUMP returns at once, RedisBloom's 10 MiB
// (a variable so that tests can see many chunks without large filters).
var scanDumpChunk uint64 = 10 << 20

// SCANDUMP and LOADCHUNK.
//
// A dump is the key's record (the data file's bytes) behind an 8-byte
// length, served in chunks of at most 10 MiB. Each dump is a copy of the
// record taken at iterator 0, of its own (dumps.go): adds during a dump do
// not tear it, and concurrent dumps of one key each get theirs. A copy
// rather than chunks read from the live filter, because a counting filter
// read piecemeal while an item is deleted could hold the delete in one
// chunk and not another, and a later delete in the copy would then make
// other items absent. The copies are bounded (max-dump-bytes, maxDumps).
//
// The iterator says where the chunk ends and which dump it is:
//
//	bits 0-41   one past the offset of the chunk's end, as RedisBloom's, so
//	            LOADCHUNK knows where each chunk goes and that the first
//	            starts the upload
//	bit 42      set on the last chunk: the next call ends the dump
//	bits 43-62  the dump's id
const (
	iterPosBits = 42
	iterPosMask = 1<<iterPosBits - 1
	iterFinal   = 1 << iterPosBits
	dumpIDShift = iterPosBits + 1
	dumpIDMask  = 1<<20 - 1
)

// family tells BF.SCANDUMP and BF.LOADCHUNK from their CF twins.
func family(args [][]byte) string {
	if eq(args[0][:2], "cf") {
		return "cf"
	}
	return "bf"
}

func itoa[T int | int64 | uint64](n T) string {
	if n < 0 {
		return strconv.FormatInt(int64(n), 10)
	}
	return strconv.FormatUint(uint64(n), 10)
}

func cmdScanDump(s *Server, _ *session, w replier, args [][]byte) {
	iter, ok := parseInt(args[2])
	if !ok || iter < 0 {
		w.WriteError("ERR Second argument must be numeric")
		return
	}
	name := string(args[1])
	e := s.store.get(name)
	if e == nil {
		w.WriteError(errNotFound)
		return
	}
	if (e.kind == kindCounting) != (family(args) == "cf") {
		w.WriteError(wrongType)
		return
	}
	if iter&iterFinal != 0 {
		w.WriteArray(2)
		w.WriteInt64(0)
		w.WriteBulk(nil)
		return
	}
	var id uint32
	var data []byte
	if iter == 0 {
		if msg := s.store.dumps.reserve(8 + recordFixed + uint64(len(name)) + 8 + e.sizeBytes() + 4096); msg != "" {
			w.WriteError(msg)
			return
		}
		data = recordBytes(name, e)
		id = s.store.dumps.add(name, data)
		iter = 1
	} else {
		id = uint32(iter>>dumpIDShift) & dumpIDMask
		if data = s.store.dumps.get(id, name); data == nil {
			w.WriteError("ERR no dump in progress for this iterator (finished, idle too long, or dropped to bound memory): start again at iterator 0")
			return
		}
	}
	start := uint64(iter&iterPosMask) - 1
	if start >= uint64(len(data)) {
		w.WriteError("ERR invalid iterator")
		return
	}
	end := min(start+scanDumpChunk, uint64(len(data)))
	next := int64(id)<<dumpIDShift | int64(end+1)
	if end == uint64(len(data)) {
		next |= iterFinal
	}
	w.WriteArray(2)
	w.WriteInt64(next)
	w.WriteBulk(data[start:end])
	if end == uint64(len(data)) {
		s.store.dumps.done(id)
	}
}

func cmdLoadChunk(s *Server, sess *session, w replier, args [][]byte) {
	if len(args[1]) > maxKeyBytes {
		w.WriteError(errKeyTooLong)
		return
	}
	iter, ok := parseInt(args[2])
	data := args[3]
	pos := uint64(iter) & iterPosMask
	if !ok || iter < 1 || pos < 1 || pos-1 < uint64(len(data)) {
		w.WriteError("ERR invalid chunk position")
		return
	}
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	name := string(args[1])
	start := pos - 1 - uint64(len(data))
	fam := family(args)
	if start == 0 {
		if s.store.get(name) != nil {
			w.WriteError(errItemExists)
			return
		}
		if len(data) < 8 {
			w.WriteError("ERR invalid dump header")
			return
		}
		total := binary.LittleEndian.Uint64(data)
		if limit := dumpLimit(s.cfg.MaxFilterBytes); total > limit {
			w.WriteError(fmt.Sprintf("ERR dump of %d bytes exceeds max-filter-bytes (%d)", total, s.cfg.MaxFilterBytes))
			return
		}
		if msg := s.store.uploads.start(name, fam, total, sess); msg != "" {
			w.WriteError(msg)
			return
		}
		data = data[8:]
	} else if start < 8 {
		w.WriteError(fmt.Sprintf("ERR chunk starts at byte %d, inside the dump's header", start))
		return
	} else {
		start -= 8
	}
	rec, done, msg := s.store.uploads.add(name, fam, start, data)
	if msg != "" {
		w.WriteError(msg)
		return
	}
	if !done {
		w.WriteString("OK")
		return
	}
	r := bytes.NewReader(rec)
	_, e, err := readRecord(r) // a dump may be loaded under another key, as in RedisBloom
	switch {
	case err != nil:
		w.WriteError("ERR invalid dump: " + oneLine(err.Error()))
		return
	case r.Len() != 0:
		w.WriteError("ERR invalid dump: bytes after the filter")
		return
	case (e.kind == kindCounting) != (fam == "cf"):
		w.WriteError(wrongType)
		return
	case e.sizeBytes() > s.cfg.MaxFilterBytes:
		w.WriteError(fmt.Sprintf("ERR filter of %d bytes exceeds max-filter-bytes (%d)", e.sizeBytes(), s.cfg.MaxFilterBytes))
		return
	}
	put, logPos, err := s.store.put(name, e, rec)
	switch {
	case err != nil:
		w.WriteError("ERR " + oneLine(err.Error()))
	case !put:
		w.WriteError(errItemExists)
	default:
		if err := s.commit(sess, logPos); err != nil {
			w.WriteError(logFailed(err))
			return
		}
		w.WriteString("OK")
	}
}
