package server

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/redisbloom"
	"github.com/ohbloom/ohbloom/tools/rdb"
)

// DUMP and RESTORE, as Redis 7.4's dumpCommand and restoreCommand.
//
// A payload is Redis's: a value's RDB type byte, its RDB encoding, the RDB
// version (2 bytes) and a CRC-64 of all that (8 bytes). RESTORE takes
// RedisBloom's own payloads, of its module types MBbloom-- and MBbloomCF,
// exactly as RedisBloom writes them, and DUMP of a key made from
// RedisBloom's bytes (kindRedisBloom) gives back the payload RedisBloom
// itself would, byte for byte (tools/rdb decodes and encodes them), so that
// keys move both ways between the two servers. Every other key dumps in a
// payload of ohbloom's own: a module value of type ohbloom-- (ohbloomModule)
// holding the key's record, the bytes of its data file. A Redis without
// such a module, RedisBloom's included, refuses it as it refuses any
// unknown module value ("Bad data format"); RESTORE here takes it back.
//
// Both are bounded by max-request-bytes: no payload longer than a request
// may be can arrive, and DUMP refuses a key whose payload would be longer
// (BF.SCANDUMP moves any key, in chunks). RESTORE decodes the payload into
// memory the payload itself holds: the filters grow as their bytes are
// copied in, and their sizes, from the payload's header, are checked
// against max-filter-bytes before anything is allocated for them.

// ohbloomModule is the module type of ohbloom's own payloads: its
// encoding version 1 is one string item, the key's record.
var ohbloomModule = func() rdb.ModuleID {
	id, err := rdb.NewModuleID("ohbloom--", 1)
	if err != nil {
		panic(err)
	}
	return id
}()

// Redis's replies of DUMP and RESTORE.
const (
	errBusyKey         = "BUSYKEY Target key name already exists."
	errDumpPayload     = "ERR DUMP payload version or checksum are wrong"
	errBadDataFormat   = "ERR Bad data format"
	errValueNotInteger = "ERR value is not an integer or out of range"
	errSyntax          = "ERR syntax error"
)

// cmdDump is DUMP key: a null reply for a missing key, else the key's
// payload.
func cmdDump(s *Server, sess *session, w replier, args [][]byte) {
	name := string(args[1])
	e := s.store.get(sess.db, name)
	if e == nil {
		w.WriteNull()
		return
	}
	p, msg := s.dumpPayload(sess, name, e)
	if msg != "" {
		w.WriteError(msg)
		return
	}
	w.WriteBulk(p)
}

// dumpPayload is the DUMP payload of key name, whose entry is e, or an
// error reply.
func (s *Server) dumpPayload(sess *session, name string, e *entry) ([]byte, string) {
	limit := uint64(s.cfg.MaxRequestBytes)
	tooLong := func(n uint64) string {
		return fmt.Sprintf("ERR a DUMP of this key takes %d bytes, more than max-request-bytes (%d): move it with BF.SCANDUMP, or raise max-request-bytes", n, limit)
	}
	if e.kind == kindRedisBloom {
		// RedisBloom's payload, from the chunks its SCANDUMP gives, taken
		// under the key's lock so that they agree with each other.
		if n := e.rb.Info().Size; n > limit {
			return nil, tooLong(n)
		}
		var chunks []rdb.Chunk
		sess.lockEntry(e)
		for iter := int64(0); ; {
			next, data := e.rb.ScanDump(iter, nil)
			if next == 0 {
				break
			}
			chunks = append(chunks, rdb.Chunk{Iter: next, Data: data})
			iter = next
		}
		sess.unlockEntry(e)
		b, err := rdb.BloomFromScanDump(chunks)
		if err != nil {
			// The key's own filter, which RedisBloom's rules made: a bug.
			return nil, "ERR internal error: the key's filter does not convert to RedisBloom's: " + oneLine(err.Error())
		}
		p := b.DumpPayload()
		if uint64(len(p)) > limit {
			return nil, tooLong(uint64(len(p)))
		}
		return p, ""
	}
	if e.kind == kindCuckoo {
		// RedisBloom's payload, from the value its CFRdbSave writes (an
		// empty filter too, which CF.SCANDUMP does not dump), with the
		// strings encoded as Redis encodes them.
		if n := e.cf.Info().Size; n > limit {
			return nil, tooLong(n)
		}
		value := rdb.AppendModuleValue(nil, rdb.CuckooModuleID, e.cf.MarshalRDB())
		c, err := rdb.DecodeCuckoo(value)
		if err != nil {
			return nil, "ERR internal error: the key's filter does not convert to RedisBloom's: " + oneLine(err.Error())
		}
		p := c.DumpPayload()
		if uint64(len(p)) > limit {
			return nil, tooLong(uint64(len(p)))
		}
		return p, ""
	}
	if n := e.sizeBytes() + uint64(recordFixed+len(name)+4096); n > limit {
		return nil, tooLong(n)
	}
	rec := recordBytes(name, e)[8:]
	p := rdb.AppendPayload(nil, rdb.TypeModule2, rdb.AppendBlobValue(nil, ohbloomModule, rec))
	if uint64(len(p)) > limit {
		return nil, tooLong(uint64(len(p)))
	}
	return p, ""
}

// cmdRestore is RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME
// seconds] [FREQ frequency], checked in Redis's order. IDLETIME and FREQ
// are checked and ignored: no key here is evicted by its use.
func cmdRestore(s *Server, sess *session, w replier, args [][]byte) {
	if len(args[1]) > maxKeyBytes {
		w.WriteError(errKeyTooLong)
		return
	}
	replace, absTTL := false, false
	idle, freq := int64(-1), int64(-1)
	for j := 4; j < len(args); j++ {
		more := len(args) - j - 1
		var ok bool
		switch {
		case eq(args[j], "replace"):
			replace = true
		case eq(args[j], "absttl"):
			absTTL = true
		case eq(args[j], "idletime") && more >= 1 && freq == -1:
			j++
			if idle, ok = parseLongLong(args[j]); !ok {
				w.WriteError(errValueNotInteger)
				return
			}
			if idle < 0 {
				w.WriteError("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
		case eq(args[j], "freq") && more >= 1 && idle == -1:
			j++
			if freq, ok = parseLongLong(args[j]); !ok {
				w.WriteError(errValueNotInteger)
				return
			}
			if freq < 0 || freq > 255 {
				w.WriteError("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
		default:
			w.WriteError(errSyntax)
			return
		}
	}
	name := string(args[1])
	if !replace && s.store.get(sess.db, name) != nil {
		w.WriteError(errBusyKey)
		return
	}
	ttl, ok := parseLongLong(args[2])
	switch {
	case !ok:
		w.WriteError(errValueNotInteger)
		return
	case ttl < 0:
		w.WriteError("ERR Invalid TTL value, must be >= 0")
		return
	}
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	e, msg := s.entryFromPayload(args[3])
	if msg != "" {
		w.WriteError(msg)
		return
	}
	// The expiry, as Unix milliseconds (0: none).
	expireAt := ttl
	if ttl != 0 && !absTTL {
		now := s.store.now().UnixMilli()
		if ttl > math.MaxInt64-now {
			w.WriteError("ERR invalid expire time in 'restore' command")
			return
		}
		expireAt = now + ttl
	}
	s.restoreKey(sess, w, name, e, replace, expireAt)
}

// entryFromPayload decodes a DUMP payload into a key, checked as RESTORE
// checks it and within max-filter-bytes, or returns an error reply. The
// key aliases nothing of p.
func (s *Server) entryFromPayload(p []byte) (*entry, string) {
	typ, value, err := rdb.ParsePayload(p)
	switch {
	case len(p) < 10, errors.Is(err, rdb.ErrVersion), errors.Is(err, rdb.ErrChecksum):
		return nil, errDumpPayload
	case err != nil:
		return nil, badData(err)
	case typ != rdb.TypeModule2:
		return nil, fmt.Sprintf("ERR ohbloom serve holds Bloom and cuckoo filters only: the payload is a %s value", typ.Kind())
	}
	id, err := rdb.ModuleOf(value)
	if err != nil {
		return nil, badData(err)
	}
	switch id.Name() {
	case rdb.BloomTypeName:
		return s.bloomFromValue(value)
	case rdb.CuckooTypeName:
		return s.cuckooFromValue(value)
	case ohbloomModule.Name():
		return s.ohbloomFromValue(value)
	}
	return nil, fmt.Sprintf("ERR ohbloom serve holds Bloom and cuckoo filters only: the payload is a value of module type '%s'", id.Name())
}

// badData is Redis's reply to a payload that does not decode, with what is
// wrong with it.
func badData(err error) string { return errBadDataFormat + ": " + oneLine(err.Error()) }

// bloomFromValue makes a RedisBloom key of a MBbloom-- value: the chain's
// header, checked as BF.LOADCHUNK checks it, then its filters' bytes.
func (s *Server) bloomFromValue(value []byte) (*entry, string) {
	b, err := rdb.DecodeBloom(value)
	if err != nil {
		return nil, badData(err)
	}
	chunks, err := b.ScanDump()
	if err != nil {
		return nil, badData(err)
	}
	f, err := redisbloom.NewAtomicFromHeader(chunks[0].Data, s.cfg.MaxFilterBytes)
	switch {
	case errors.Is(err, ohbloom.ErrTooLarge):
		return nil, fmt.Sprintf("ERR the payload's filters take more than max-filter-bytes (%d)", s.cfg.MaxFilterBytes)
	case err != nil:
		return nil, badData(err)
	}
	for _, c := range chunks[1:] {
		if err := f.LoadChunk(c.Iter, c.Data); err != nil {
			return nil, badData(err)
		}
	}
	e := &entry{kind: kindRedisBloom, rb: f}
	e.limit(s.cfg.MaxFilterBytes)
	return e, ""
}

// cuckooFromValue makes a cuckoo key of a MBbloomCF value, as
// RedisBloom's CFRdbLoad reads it: its shape checked as CF.LOADCHUNK
// checks a header, its size against max-filter-bytes before any
// sub-filter is allocated.
func (s *Server) cuckooFromValue(value []byte) (*entry, string) {
	if _, err := rdb.DecodeCuckoo(value); err != nil {
		return nil, badData(err) // (its errors say where)
	}
	id, items, err := rdb.SplitModuleValue(value)
	if err != nil {
		return nil, badData(err)
	}
	f := new(redisbloom.AtomicCuckooFilter)
	n, err := f.UnmarshalRDB(items, id.EncVer(), s.cfg.MaxFilterBytes)
	switch {
	case errors.Is(err, redisbloom.ErrCuckooTooLarge):
		return nil, fmt.Sprintf("ERR the payload's filter takes more than max-filter-bytes (%d)", s.cfg.MaxFilterBytes)
	case err != nil:
		return nil, badData(err)
	case n != len(items):
		return nil, errBadDataFormat + ": bytes after the cuckoo filter"
	}
	return &entry{kind: kindCuckoo, cf: f}, ""
}

// ohbloomFromValue makes a key of ohbloom's own payload: its record.
func (s *Server) ohbloomFromValue(value []byte) (*entry, string) {
	blob, err := rdb.DecodeBlobValue(value, ohbloomModule)
	if err != nil {
		return nil, badData(err)
	}
	r := bytes.NewReader(blob)
	_, _, e, err := readRecord(r) // the record's own name is the dumped key's: RESTORE names the key and its expiry
	switch {
	case err != nil:
		return nil, badData(err)
	case r.Len() != 0:
		return nil, errBadDataFormat + ": bytes after the key's record"
	case e.sizeBytes() > s.cfg.MaxFilterBytes:
		return nil, fmt.Sprintf("ERR filter of %d bytes exceeds max-filter-bytes (%d)", e.sizeBytes(), s.cfg.MaxFilterBytes)
	}
	e.limit(s.cfg.MaxFilterBytes)
	return e, ""
}

// restoreKey installs e under name in the session's database, replacing
// a key there if replace, with an expiry at expireAt (Unix milliseconds;
// 0: none), and answers RESTORE. It is the one place a restored key's
// expiry goes. A time already past makes no key, as in Redis: the key it
// would replace is deleted, and the reply is OK.
func (s *Server) restoreKey(sess *session, w replier, name string, e *entry, replace bool, expireAt int64) {
	if expireAt != 0 && expireAt <= s.store.nowMs() {
		var pos uint64
		if replace {
			var err error
			if _, pos, err = s.store.del(sess.db, name); err != nil {
				w.WriteError("ERR " + oneLine(err.Error()))
				return
			}
		}
		s.commitOK(sess, w, pos)
		return
	}
	e.seq = 0 // numbered afresh, as every loaded key (store.put)
	rec := recordBytes(name, e)[8:]
	ok, pos, err := s.store.restore(sess.db, name, e, rec, replace, expireAt)
	switch {
	case err != nil:
		w.WriteError("ERR " + oneLine(err.Error()))
	case !ok:
		w.WriteError(errBusyKey)
	default:
		s.commitOK(sess, w, pos)
	}
}

// restore installs e, decoded from a payload whose record is rec, under
// name in database db with expiry at (0: none), replacing the key there
// if replace (a key whose time is up counts as none), and returns whether
// it did and the log position. The key and its expiry are one place
// record in the log, which replaces whatever the key held, logged under
// the store's lock, so that no command sees the key missing or without
// its expiry; under the key's stripe lock, so that a save still writing
// the old key leaves the new one to the next save, which writes its file
// over the old one's.
func (s *store) restore(db int, name string, e *entry, rec []byte, replace bool, at int64) (bool, uint64, error) {
	s.reapName(db, name)
	if replace {
		s.uploads.drop(uploadKey(db, name))
	}
	var logged wholeRecord
	if s.log != nil {
		logged = placeWhole(db, name, at, -1, "", rec)
	}
	lock := s.stripeOf(db, name)
	lock.Lock()
	defer lock.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dbs[db]
	if old := d.keys[name]; old != nil && !replace && !old.expiredAt(s.nowMs()) {
		return false, 0, nil
	}
	e.seq = 0
	e.expireAt.Store(at)
	e.dirty.Store(true)
	var pos uint64
	if s.log != nil {
		var err error
		if pos, err = s.log.appendWhole(logged); err != nil {
			return false, 0, err
		}
	}
	d.setLocked(name, e)
	return true, pos, nil
}
