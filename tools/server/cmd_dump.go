package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/redisbloom"
)

// scanDumpChunk is the most an ohbloom-format SCANDUMP chunk carries:
// 10 MiB, the MAX_SCANDUMP_SIZE of RedisBloom's older releases (current
// RedisBloom sends up to 16 MiB, redisbloom.MaxChunk, which is
// what a RedisBloom key's dump uses here). A variable so that tests can
// see many chunks without large filters.
var scanDumpChunk uint64 = 10 << 20

// SCANDUMP and LOADCHUNK.
//
// A key loaded from RedisBloom's dump (kindRedisBloom) is dumped in
// RedisBloom's format, byte for byte, so that it can go back: iterator 0
// gives its header chunk, the next iterators its filters' bytes, read
// from the live filter as RedisBloom reads them. BF.LOADCHUNK of a
// RedisBloom header chunk (iterator 1, on a missing key) makes such a
// key at once, its bits clear, as RedisBloom does; its data chunks then
// write into it. Every other key is dumped in ohbloom's format, below:
// a RedisBloom iterator is below 2^43, an ohbloom one never is, so each
// LOADCHUNK says which it continues.
//
// An ohbloom dump is the key's record (the data file's bytes) behind an 8-byte
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

// RedisBloom's replies of SCANDUMP and LOADCHUNK.
const (
	errScanDumpIter   = "Second argument must be numeric"
	errLoadChunkIter  = "ERR Second argument must be numeric"
	errRBBadData      = "ERR received bad data"
	errRBNoLink       = "ERR invalid offset - no link found"
	errRBChunkTooBig  = "ERR invalid chunk - Too big for current filter"
	errNotRedisBloom  = "ERR this key holds an ohbloom filter, which loads only its own dumps (iterators from its BF.SCANDUMP)"
	errDumpDropped    = "ERR no dump in progress for this iterator (finished, idle too long, or dropped to bound memory): start again at iterator 0"
	errCuckooDump     = "ERR this CF key is a counting filter written by an older ohbloom, which loads only its own dumps (iterators from its CF.SCANDUMP)"
	ohbloomIterators  = 1 << dumpIDShift // the least iterator of an ohbloom dump
	redisBloomHeaders = 1                // the iterator of a RedisBloom header chunk
)

// cmdScanDump is BF.SCANDUMP and CF.SCANDUMP. BF.SCANDUMP looks at the key
// before its iterator (BFScanDump_RedisCommand), CF.SCANDUMP the other
// way round (CFScanDump_RedisCommand).
func cmdScanDump(s *Server, sess *session, w replier, args [][]byte) {
	cf := family(args) == "cf"
	iter, ok := parseLongLong(args[2])
	if cf && (!ok || iter < 0) {
		w.WriteError(errCFInvalidPosition)
		return
	}
	name := string(args[1])
	e := s.store.get(sess.db, name)
	if e == nil {
		w.WriteError(errNotFound)
		return
	}
	if e.kind.isCF() != cf {
		w.WriteError(wrongType)
		return
	}
	if !ok {
		w.WriteError(errScanDumpIter)
		return
	}
	if e.kind == kindCuckoo {
		next, chunk := e.cf.ScanDump(iter, nil)
		w.WriteArray(2)
		w.WriteInt64(next)
		if next == 0 {
			w.WriteNull() // an empty filter, or past the end: RedisBloom's nil
		} else {
			w.WriteBulk(chunk)
		}
		return
	}
	if e.kind == kindRedisBloom {
		next, chunk := e.rb.ScanDump(iter, nil)
		w.WriteArray(2)
		w.WriteInt64(next)
		w.WriteBulk(chunk)
		return
	}
	if iter < 0 || iter&iterFinal != 0 {
		// Past the end, as RedisBloom answers an iterator it has no
		// chunk for.
		w.WriteArray(2)
		w.WriteInt64(0)
		w.WriteBulk(nil)
		return
	}
	var id uint32
	var data []byte
	if iter == 0 {
		var msg string
		if id, msg = s.store.dumps.reserve(uploadKey(sess.db, name), 8+recordFixed+uint64(len(name))+8+e.sizeBytes()+4096); msg != "" {
			w.WriteError(msg)
			return
		}
		data = recordBytes(name, e)
		if !s.store.dumps.fill(id, data) {
			w.WriteError(errDumpDropped)
			return
		}
		iter = 1
	} else {
		id = uint32(iter>>dumpIDShift) & dumpIDMask
		if data = s.store.dumps.get(id, uploadKey(sess.db, name)); data == nil {
			w.WriteError(errDumpDropped)
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

// cmdLoadChunk is BF.LOADCHUNK and CF.LOADCHUNK: of a RedisBloom dump
// (its iterators are below ohbloomIterators) as BFLoadChunk_RedisCommand
// loads it, or of an ohbloom dump.
func cmdLoadChunk(s *Server, sess *session, w replier, args [][]byte) {
	if len(args[1]) > maxKeyBytes {
		w.WriteError(errKeyTooLong)
		return
	}
	fam := family(args)
	iter, ok := parseLongLong(args[2])
	switch {
	case fam == "bf" && !ok:
		w.WriteError(errLoadChunkIter)
		return
	case fam == "cf" && (!ok || iter == 0):
		w.WriteError(errCFInvalidPosition)
		return
	}
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	if iter < ohbloomIterators {
		e := s.store.getBytes(sess.db, args[1])
		switch {
		case e == nil && fam == "bf" && iter == redisBloomHeaders:
			s.rbLoadHeader(sess, w, args[1], args[3])
		case e == nil && iter == redisBloomHeaders:
			s.cfLoadHeader(sess, w, args[1], args[3])
		case e == nil:
			w.WriteError(errNotFound)
		case e.kind.isCF() != (fam == "cf"):
			w.WriteError(wrongType)
		case fam == "cf" && iter == redisBloomHeaders:
			w.WriteError(errItemExists) // CFLoadChunk_RedisCommand's header on a key
		case e.kind == kindCuckoo:
			s.cfLoadChunk(sess, w, e, args[1], iter, args[3])
		case fam == "cf":
			w.WriteError(errCuckooDump)
		case e.kind == kindRedisBloom:
			s.rbLoadChunk(sess, w, e, args[1], iter, args[3])
		default:
			w.WriteError(errNotRedisBloom)
		}
		return
	}
	s.loadOhbloomChunk(sess, w, args[1], fam, iter, args[3])
}

// rbLoadHeader makes the key name of a RedisBloom header chunk: a chain
// whose filters (their bytes all clear until the data chunks come) are
// checked as SB_NewChainFromHeader checks them, and together within
// max-filter-bytes; the load counts against the upload limits until its
// last chunk. Nothing is allocated for the bits yet.
func (s *Server) rbLoadHeader(sess *session, w replier, name, header []byte) {
	if len(header) > maxRBHeader {
		w.WriteError(errRBBadData)
		return
	}
	f, err := redisbloom.NewAtomicFromHeader(header, s.cfg.MaxFilterBytes)
	switch {
	case errors.Is(err, ohbloom.ErrTooLarge):
		w.WriteError(fmt.Sprintf("ERR the dump's filters take more than max-filter-bytes (%d)", s.cfg.MaxFilterBytes))
		return
	case err != nil:
		w.WriteError(errRBBadData)
		return
	}
	var total uint64
	for i := range int(f.Info().Filters) {
		total += f.Link(i).Bytes
	}
	if msg := s.store.uploads.startRB(uploadKey(sess.db, string(name)), total, sess); msg != "" {
		w.WriteError(msg)
		return
	}
	e, created, pos, err := s.store.getOrCreateLogged(sess.db, string(name), func() (*entry, error) {
		return &entry{kind: kindRedisBloom, rb: f}, nil
	})
	switch {
	case err != nil:
		w.WriteError("ERR " + oneLine(err.Error()))
	case !created && e.kind == kindRedisBloom:
		s.rbLoadChunk(sess, w, e, name, redisBloomHeaders, header) // made meanwhile: as RedisBloom, a chunk
	case !created && e.kind.isCF():
		w.WriteError(wrongType)
	case !created:
		w.WriteError(errNotRedisBloom)
	default:
		s.commitOK(sess, w, pos)
	}
}

// rbLoadChunk writes a data chunk into a RedisBloom key, as
// SBChain_LoadEncodedChunk does, and logs it under the key's lock, its
// records made before the store's lock and the log's are taken.
func (s *Server) rbLoadChunk(sess *session, w replier, e *entry, name []byte, iter int64, data []byte) {
	log := s.store.log
	var pos uint64
	if log != nil {
		e.mu.Lock()
	}
	err := e.rb.LoadChunk(iter, data)
	if err == nil && len(data) > 0 {
		e.markDirty()
		if log != nil {
			recs := newChunkRecords(recRBChunk, sess.db, name, e.seq+1, iter, data)
			pos = s.store.logChange(sess.db, name, e, func() uint64 {
				e.seq += recs.n
				return log.appendChunk(recs)
			})
		}
	}
	if log != nil {
		e.mu.Unlock()
	}
	switch {
	case errors.Is(err, redisbloom.ErrNoLink):
		w.WriteError(errRBNoLink)
		return
	case errors.Is(err, redisbloom.ErrChunkTooBig):
		w.WriteError(errRBChunkTooBig)
		return
	case err != nil:
		w.WriteError(errRBBadData)
		return
	}
	if err := s.commit(sess, pos); err != nil {
		w.WriteError(logFailed(err))
		return
	}
	s.store.uploads.continuedRB(uploadKey(sess.db, string(name)), uint64(iter)-1)
	w.WriteString("OK")
}

// loadOhbloomChunk takes a chunk of an ohbloom dump: the record is
// gathered until it is whole, then checked and installed.
func (s *Server) loadOhbloomChunk(sess *session, w replier, key []byte, fam string, iter int64, data []byte) {
	pos := uint64(iter) & iterPosMask
	if pos < 1 || pos-1 < uint64(len(data)) {
		w.WriteError("ERR invalid chunk position")
		return
	}
	name := string(key)
	start := pos - 1 - uint64(len(data))
	if start == 0 {
		if s.store.get(sess.db, name) != nil {
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
		if msg := s.store.uploads.start(uploadKey(sess.db, name), fam, total, sess); msg != "" {
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
	rec, done, msg := s.store.uploads.add(uploadKey(sess.db, name), fam, start, data)
	if msg != "" {
		w.WriteError(msg)
		return
	}
	if !done {
		w.WriteString("OK")
		return
	}
	r := bytes.NewReader(rec)
	_, _, e, err := readRecord(r) // a dump may be loaded under another key, as in RedisBloom
	switch {
	case err != nil:
		w.WriteError("ERR invalid dump: " + oneLine(err.Error()))
		return
	case r.Len() != 0:
		w.WriteError("ERR invalid dump: bytes after the filter")
		return
	case e.kind.isCF() != (fam == "cf"):
		w.WriteError(wrongType)
		return
	case e.sizeBytes() > s.cfg.MaxFilterBytes:
		w.WriteError(fmt.Sprintf("ERR filter of %d bytes exceeds max-filter-bytes (%d)", e.sizeBytes(), s.cfg.MaxFilterBytes))
		return
	}
	e.limit(s.cfg.MaxFilterBytes)
	put, logPos, err := s.store.put(sess.db, name, e, rec)
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
