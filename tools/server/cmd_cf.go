package server

import (
	"errors"
	"fmt"

	"github.com/ohbloom/ohbloom/redisbloom"
)

// CF.* commands: a CF key is RedisBloom's cuckoo filter
// (redisbloom.AtomicCuckooFilter, kindCuckoo), and every command answers as
// rebloom.c's does, reply for reply: the same false positives, counts,
// "Filter is full", growth, compaction, CF.INFO and CF.SCANDUMP chunks, in
// both protocols (booleans in RESP3 where it sends them, maps). Options
// are parsed and checked with RedisBloom's texts (those of its current
// releases, which also bound the capacity by cf-initial-size's maximum).
// Keys written by an older ohbloom, whose CF keys were counting filters,
// keep answering as they did (cmd_cf_legacy.go).

// RedisBloom's bounds and defaults for cuckoo filters (src/config.c).
const (
	cfDefaultCapacity   = redisbloom.CuckooDefaultCapacity // cf-initial-size
	cfDefaultBucketSize = redisbloom.CuckooDefaultBucketSize
	cfMaxCapacity       = 1 << 30
)

const (
	errCFBadCapacity     = "Bad capacity"
	errCFCapacityRange   = "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"
	errCFInsertCapacity  = "Capacity must be in the range [cf-bucket-size * 2, 1073741824]"
	errCFNotFound        = "Not found"
	errCFCouldNotCreate  = "ERR Could not create filter"
	errCFInvalidPosition = "Invalid position"
	errCFFull            = "Filter is full"
	errCFNoMemory        = "ERR Insufficient memory"
	errCFMaxExpansions   = "Maximum expansions reached"
	errCFCompactNotFound = "Cuckoo filter was not found"
	errCFInvalidHeader   = "Invalid header"
	errCFBadHeader       = "Couldn't create filter!"
	errCFBadChunk        = "Couldn't load chunk!"
)

// newCuckoo makes the filter of a new CF key, within max-filter-bytes.
func (s *Server) newCuckoo(c redisbloom.CuckooConfig) (*entry, error) {
	if c.Capacity < 2*uint64(c.BucketSize) {
		return nil, errors.New(errCFCouldNotCreate) // cfCreate's own check
	}
	c.MaxBytes = s.cfg.MaxFilterBytes
	f, err := redisbloom.NewAtomicCuckoo(c)
	switch {
	case errors.Is(err, redisbloom.ErrCuckooTooLarge):
		return nil, fmt.Errorf("ERR filter exceeds max-filter-bytes (%d)", s.cfg.MaxFilterBytes)
	case err != nil:
		return nil, errors.New(errCFCouldNotCreate)
	}
	return &entry{kind: kindCuckoo, cf: f}, nil
}

// cfOption finds one of CF.RESERVE's options as RedisBloom does
// (RMUtil_ArgIndex over every argument) and checks its value; it returns
// the error reply or "".
func cfOption(args [][]byte, name string, lo, hi int64, def int64) (int64, string) {
	i := argIndex(args, name)
	if i == -1 {
		return def, ""
	}
	var v int64
	ok := i+1 < len(args)
	if ok {
		v, ok = parseLongLong(args[i+1])
	}
	if !ok {
		return 0, "Couldn't parse " + name
	}
	if v < lo || v > hi {
		return 0, fmt.Sprintf("%s: value must be in the range [%d, %d]", name, lo, hi)
	}
	return v, ""
}

// cmdCFReserve is CFReserve_RedisCommand: an odd number of arguments, the
// capacity, then MAXITERATIONS, BUCKETSIZE and EXPANSION (in that order of
// checking) found anywhere, then the capacity against the bucket size.
func cmdCFReserve(s *Server, sess *session, w replier, args [][]byte) {
	if len(args)%2 == 0 {
		w.WriteError(wrongArity(args[0]))
		return
	}
	capacity, ok := parseLongLong(args[2])
	if !ok {
		w.WriteError(errCFBadCapacity)
		return
	}
	iterations, msg := cfOption(args, "MAXITERATIONS", 1, redisbloom.CuckooMaxIterations, redisbloom.CuckooDefaultMaxIterations)
	if msg != "" {
		w.WriteError(msg)
		return
	}
	bucketSize, msg := cfOption(args, "BUCKETSIZE", 1, redisbloom.CuckooMaxBucketSize, cfDefaultBucketSize)
	if msg != "" {
		w.WriteError(msg)
		return
	}
	expansion, msg := cfOption(args, "EXPANSION", 0, redisbloom.CuckooMaxExpansion, redisbloom.CuckooDefaultExpansion)
	if msg != "" {
		w.WriteError(msg)
		return
	}
	if bucketSize*2 > capacity || capacity > cfMaxCapacity {
		w.WriteError(errCFCapacityRange)
		return
	}
	s.reserve(sess, w, args[1], true, func() (*entry, error) {
		return s.newCuckoo(redisbloom.CuckooConfig{Capacity: uint64(capacity), BucketSize: uint16(bucketSize),
			MaxIterations: uint16(iterations), Expansion: uint16(expansion)})
	})
}

// cfWriteEntry finds the CF key name for a change, creating it with
// RedisBloom's defaults and capacity when create says so, and answers
// RedisBloom's error when there is none.
func (s *Server) cfWriteEntry(sess *session, w replier, name []byte, create bool, capacity int64) *entry {
	e := s.store.getBytes(sess.db, name)
	if e == nil && create {
		if len(name) > maxKeyBytes {
			w.WriteError(errKeyTooLong)
			return nil
		}
		var err error
		var pos uint64
		e, _, pos, err = s.store.getOrCreateLogged(sess.db, string(name), func() (*entry, error) {
			return s.newCuckoo(redisbloom.DefaultCuckooConfig(uint64(capacity)))
		})
		if err != nil {
			w.WriteError(err.Error())
			return nil
		}
		noteLog(sess, pos)
	} else if e == nil {
		w.WriteError(errNotFound)
		return nil
	}
	if !e.kind.isCF() {
		w.WriteError(wrongType)
		return nil
	}
	if !sess.holdOnLoop(e) {
		return nil
	}
	return e
}

// What adding one item to a cuckoo key did.
const (
	cfExists    int8 = iota // CF.ADDNX or CF.INSERTNX found it: 0
	cfInserted              // 1
	cfNoSpace               // "Filter is full", or -1 in an array
	cfNoMemory              // "ERR Insufficient memory", or -1 in an array
	cfLogFailed             // the append-only log could not take the change
)

// cfAdds adds items (each only if absent, with nx) to the cuckoo key
// name, at most hashesPerRecord of them, and sets out[i] to what each did.
// The adds, their numbers and their record are one step under the key's
// lock (cuckoo_log.go says why); then the change is committed. An add that
// changed nothing is not logged, but what it saw may be another client's
// add, whose record is in the log before the lock was released: the reply
// waits for the log's tail.
func (s *Server) cfAdds(sess *session, e *entry, name []byte, items [][]byte, nx bool, out []int8) error {
	log := s.store.log
	var hs [hashesPerRecord]uint64
	n := 0
	for i, item := range items {
		hs[i] = redisbloom.CuckooHash(item) // outside the lock
	}
	sess.lockEntry(e)
	first := e.seq + 1
	for i := range items {
		h := hs[i]
		ok, err := true, error(nil)
		if nx {
			ok, err = e.cf.AddUniqueHash(h)
		} else {
			err = e.cf.AddHash(h)
		}
		switch {
		case errors.Is(err, redisbloom.ErrCuckooFull):
			out[i] = cfNoSpace
		case err != nil:
			out[i] = cfNoMemory
		case !ok:
			out[i] = cfExists
		default:
			out[i] = cfInserted
			hs[n] = h // n ≤ i: the hashes still to add are after it
			n++
		}
	}
	var pos uint64
	if n > 0 {
		e.seq += uint64(n)
		e.markDirty()
		if log != nil {
			pos = s.store.logChange(sess.db, name, e, func() uint64 {
				return log.appendCuckoo(recCuckooAdd, sess.db, name, first, hs[:n])
			})
		}
	} else if log != nil {
		pos = log.tail.Load()
	}
	sess.unlockEntry(e)
	err := s.commit(sess, pos)
	if err != nil {
		for i := range items {
			out[i] = cfLogFailed
		}
	}
	return err
}

// cfAddReply answers what one add did (cfInsertCommon's switch): multi is
// CF.INSERT and CF.INSERTNX, whose failures are array elements; the
// insert-NX form answers integers in both protocols.
func cfAddReply(w replier, r int8, nx, multi bool, logErr string) {
	boolean := w.Proto() == 3 && (!nx || !multi)
	switch r {
	case cfInserted, cfExists:
		if boolean {
			w.WriteBool(r == cfInserted)
		} else {
			w.WriteInt64(int64(r))
		}
	case cfNoSpace, cfNoMemory:
		switch {
		case !multi && r == cfNoSpace:
			w.WriteError(errCFFull)
		case !multi:
			w.WriteError(errCFNoMemory)
		case w.Proto() == 3 && !nx:
			w.WriteBool(false)
		default:
			w.WriteInt64(-1)
		}
	default:
		w.WriteError(logErr)
	}
}

// cfAddCommon is cfInsertCommon: the key (created with capacity unless
// NOCREATE), RedisBloom's refusal of a key with cf-max-expansions
// sub-filters, then each item.
func (s *Server) cfAddCommon(sess *session, w replier, args [][]byte, items [][]byte, create bool, capacity int64, multi bool) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	name := args[1]
	nx := lower(args[0][len(args[0])-1]) == 'x'
	e := s.cfWriteEntry(sess, w, name, create, capacity)
	if e == nil {
		return
	}
	if e.kind == kindCounting {
		s.legacyAdd(sess, w, e, name, items, nx, multi)
		return
	}
	if e.cf.Info().Filters >= redisbloom.CuckooDefaultMaxExpansions {
		w.WriteError(errCFMaxExpansions)
		return
	}
	if multi {
		w.WriteArray(len(items))
	}
	for rest := items; len(rest) > 0; {
		group := rest[:min(len(rest), hashesPerRecord)]
		rest = rest[len(group):]
		var out [hashesPerRecord]int8
		logErr := ""
		if err := s.cfAdds(sess, e, name, group, nx, out[:]); err != nil {
			logErr = logFailed(err)
		}
		for _, r := range out[:len(group)] {
			cfAddReply(w, r, nx, multi, logErr)
		}
	}
}

// cmdCFAdd is CF.ADD and CF.ADDNX (CFAdd_RedisCommand, told apart by the
// last letter of the name): a boolean in RESP3.
func cmdCFAdd(s *Server, sess *session, w replier, args [][]byte) {
	s.cfAddCommon(sess, w, args, args[2:3], true, cfDefaultCapacity, false)
}

// cmdCFInsert is CF.INSERT and CF.INSERTNX (CFInsert_RedisCommand), its
// options read by their first letters: C is CAPACITY, I starts the items,
// any word starting with N is NOCREATE. CF.INSERT answers booleans in
// RESP3, CF.INSERTNX integers in both protocols, as RedisBloom does.
func cmdCFInsert(s *Server, sess *session, w replier, args [][]byte) {
	capacity, create, items := int64(cfDefaultCapacity), true, -1
	for i := 2; i < len(args) && items < 0; {
		switch lower(at(args[i], 0)) {
		case 'c':
			if i++; i == len(args) {
				w.WriteError(wrongArity(args[0]))
				return
			}
			var ok bool
			if capacity, ok = parseLongLong(args[i]); !ok {
				w.WriteError(errCFBadCapacity)
				return
			}
			if capacity < 2*cfDefaultBucketSize || capacity > cfMaxCapacity {
				w.WriteError(errCFInsertCapacity)
				return
			}
			i++
		case 'i':
			i++
			items = i
		case 'n':
			create = false
			i++
		default:
			w.WriteError(errUnknownArgument)
			return
		}
	}
	if items < 0 || items == len(args) {
		w.WriteError(wrongArity(args[0]))
		return
	}
	s.cfAddCommon(sess, w, args, args[items:], create, capacity, true)
}

// cmdCFExists is CF.EXISTS, CF.MEXISTS and CF.COUNT (CFCheck_RedisCommand):
// a key that is missing or holds another type answers 0 (false) for every
// item; CF.COUNT answers integers in both protocols. Tests take no lock.
func cmdCFExists(s *Server, sess *session, w replier, args [][]byte) {
	e := s.store.getBytes(sess.db, args[1])
	if e != nil && !e.kind.isCF() {
		e = nil
	}
	count := lower(args[0][len(args[0])-1]) == 't'
	if lower(args[0][3]) == 'm' {
		w.WriteArray(len(args) - 2)
	}
	for _, item := range args[2:] {
		switch {
		case e == nil && count:
			w.WriteInt64(0)
		case e == nil:
			w.WriteBool(false)
		case e.kind == kindCounting:
			legacyCheck(w, e, item, count)
		case count:
			w.WriteInt64(int64(e.cf.Count(item)))
		default:
			w.WriteBool(e.cf.Test(item))
		}
	}
}

// cmdCFDel is CFDel_RedisCommand: "Not found" for a key that is missing
// or of another type; else 1 (true) when a copy of the item's fingerprint
// was removed, 0 (false) when there was none.
func cmdCFDel(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	e := s.store.getBytes(sess.db, args[1])
	if e == nil || !e.kind.isCF() {
		w.WriteError(errCFNotFound)
		return
	}
	if !sess.holdOnLoop(e) {
		return
	}
	if e.kind == kindCounting {
		s.legacyDel(sess, w, e, args[1], args[2])
		return
	}
	h := redisbloom.CuckooHash(args[2])
	var pos uint64
	sess.lockEntry(e)
	deleted := e.cf.DeleteHash(h)
	if deleted {
		e.seq++
		e.markDirty()
		if s.store.log != nil {
			pos = s.store.logChange(sess.db, args[1], e, func() uint64 {
				return s.store.log.appendCuckoo(recCuckooDelete, sess.db, args[1], e.seq, []uint64{h})
			})
		}
	} else if s.store.log != nil {
		pos = s.store.log.tail.Load() // what it saw absent may be a delete not yet durable
	}
	sess.unlockEntry(e)
	if err := s.commit(sess, pos); err != nil {
		w.WriteError(logFailed(err))
		return
	}
	w.WriteBool(deleted)
}

// cmdCFCompact is CFCompact_RedisCommand: fingerprints move to older
// sub-filters, emptied newest ones go, and the delete count resets.
func cmdCFCompact(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	e := s.store.getBytes(sess.db, args[1])
	if e == nil || !e.kind.isCF() {
		w.WriteError(errCFCompactNotFound)
		return
	}
	if e.kind == kindCounting {
		w.WriteString("OK") // a counting filter has nothing to move
		return
	}
	if !sess.holdOnLoop(e) {
		return
	}
	var pos uint64
	sess.lockEntry(e)
	e.cf.Compact()
	e.seq++
	e.markDirty()
	if s.store.log != nil {
		pos = s.store.logChange(sess.db, args[1], e, func() uint64 {
			return s.store.log.appendCuckoo(recCuckooCompact, sess.db, args[1], e.seq, nil)
		})
	}
	sess.unlockEntry(e)
	s.commitOK(sess, w, pos)
}

// cfInfo is what CF.INFO and CF.DEBUG report about a CF key.
func (e *entry) cfInfo() redisbloom.CuckooInfo {
	if e.kind == kindCounting {
		return legacyInfo(e)
	}
	return e.cf.Info()
}

// cfKeyOrError looks a CF key up for CF.INFO and CF.DEBUG, answering
// RedisBloom's statusStrerror when there is none.
func (s *Server) cfKeyOrError(sess *session, w replier, name []byte) *entry {
	e := s.store.getBytes(sess.db, name)
	switch {
	case e == nil:
		w.WriteError(errNotFound)
		return nil
	case !e.kind.isCF():
		w.WriteError(wrongType)
		return nil
	}
	return e
}

// cmdCFInfo is CFInfo_RedisCommand's reply.
func cmdCFInfo(s *Server, sess *session, w replier, args [][]byte) {
	e := s.cfKeyOrError(sess, w, args[1])
	if e == nil {
		return
	}
	in := e.cfInfo()
	info := [...]struct {
		name  string
		value uint64
	}{
		{"Size", in.Size},
		{"Number of buckets", in.Buckets},
		{"Number of filters", in.Filters},
		{"Number of items inserted", in.Items},
		{"Number of items deleted", in.Deleted},
		{"Bucket size", in.BucketSize},
		{"Expansion rate", in.Expansion},
		{"Max iterations", in.MaxIterations},
	}
	w.WriteMap(len(info))
	for _, f := range info {
		w.WriteString(f.name)
		w.WriteInt64(int64(f.value))
	}
}

// cmdCFDebug is CFDebug_RedisCommand: the filter's numbers in one bulk
// string.
func cmdCFDebug(s *Server, sess *session, w replier, args [][]byte) {
	e := s.cfKeyOrError(sess, w, args[1])
	if e == nil {
		return
	}
	in := e.cfInfo()
	w.WriteBulkString(fmt.Sprintf("bktsize:%d buckets:%d items:%d deletes:%d filters:%d max_iterations:%d expansion:%d",
		in.BucketSize, in.Buckets, in.Items, in.Deleted, in.Filters, in.MaxIterations, in.Expansion))
}

// cfLoadHeader makes the key name of a CF.LOADCHUNK header chunk
// (CFHeader_Load): a filter of that shape, checked as RedisBloom checks it
// and within max-filter-bytes, its slots empty until the data chunks come.
// The load counts against the upload limits until the chunk that ends at
// its last byte. Nothing is allocated for the slots yet.
func (s *Server) cfLoadHeader(sess *session, w replier, name, header []byte) {
	if len(header) != redisbloom.CuckooHeaderSize {
		w.WriteError(errCFInvalidHeader)
		return
	}
	f, err := redisbloom.NewAtomicCuckooFromHeader(header, s.cfg.MaxFilterBytes)
	switch {
	case errors.Is(err, redisbloom.ErrCuckooTooLarge):
		w.WriteError(fmt.Sprintf("ERR the dump's filter takes more than max-filter-bytes (%d)", s.cfg.MaxFilterBytes))
		return
	case err != nil:
		w.WriteError(errCFBadHeader)
		return
	}
	in := f.Info()
	total := in.Size - 40 - 16*in.Filters // the slots' bytes (CuckooInfo.Size)
	if msg := s.store.uploads.startRB(uploadKey(sess.db, string(name)), total, sess); msg != "" {
		w.WriteError(msg)
		return
	}
	e, created, pos, err := s.store.getOrCreateLogged(sess.db, string(name), func() (*entry, error) {
		return &entry{kind: kindCuckoo, cf: f}, nil
	})
	switch {
	case err != nil:
		w.WriteError("ERR " + oneLine(err.Error()))
	case !created && e.kind.isCF():
		w.WriteError(errItemExists) // made meanwhile
	case !created:
		w.WriteError(wrongType)
	default:
		s.commitOK(sess, w, pos)
	}
}

// cfLoadChunk writes a data chunk into a cuckoo key, as
// CF_LoadEncodedChunk does, and logs it under the key's lock, its records
// made before the store's lock and the log's are taken.
func (s *Server) cfLoadChunk(sess *session, w replier, e *entry, name []byte, iter int64, data []byte) {
	log := s.store.log
	var pos uint64
	sess.lockEntry(e)
	err := e.cf.LoadChunk(iter, data)
	if err == nil {
		e.markDirty()
		if log != nil {
			recs := newChunkRecords(recCuckooChunk, sess.db, name, e.seq+1, iter, data)
			pos = s.store.logChange(sess.db, name, e, func() uint64 {
				e.seq += recs.n
				return log.appendChunk(recs)
			})
		}
	}
	sess.unlockEntry(e)
	if err != nil {
		w.WriteError(errCFBadChunk)
		return
	}
	if err := s.commit(sess, pos); err != nil {
		w.WriteError(logFailed(err))
		return
	}
	s.store.uploads.continuedRB(uploadKey(sess.db, string(name)), uint64(iter)-1)
	w.WriteString("OK")
}
