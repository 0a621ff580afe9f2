package server

import (
	"math"
	"strings"
)

// SELECT and the expiry commands, as Redis 7.4's db.c and expire.c answer
// them.

func cmdSelectDB(s *Server, sess *session, w replier, args [][]byte) {
	db, msg := s.parseDB(args[1])
	if msg != "" {
		w.WriteError(msg)
		return
	}
	sess.db = db
	w.WriteString("OK")
}

const (
	errDBRange     = "ERR DB index is out of range"
	errValueNotInt = "ERR value is not an integer or out of range"
	errNoSuchKey   = "ERR no such key"
	errSameObject  = "ERR source and destination objects are the same"
)

// parseDB parses a database's number as SELECT, COPY and MOVE do
// (getIntFromObjectOrReply, then selectDb), or returns their error.
func (s *Server) parseDB(b []byte) (int, string) {
	n, ok := parseLongLong(b)
	switch {
	case !ok:
		return 0, errValueNotInt
	case n < math.MinInt32 || n > math.MaxInt32:
		return 0, "ERR value is out of range, value must between -2147483648 and 2147483647"
	case n < 0 || n >= int64(len(s.store.dbs)):
		return 0, errDBRange
	}
	return int(n), ""
}

// The conditions of EXPIRE and its kin (Redis 7's EXPIRE_NX and so on).
const (
	expireNX = 1 << iota
	expireXX
	expireGT
	expireLT
)

// cmdExpire is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT
// (expireGenericCommand): the time is relative to now or absolute, in
// seconds or milliseconds, and a time already past removes the key.
func cmdExpire(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	name := lowerName(args[0])
	ms := name[0] == 'p'
	absolute := name[len(name)-2:] == "at"
	flags, msg := expireFlags(args[3:])
	if msg != "" {
		w.WriteError(msg)
		return
	}
	when, ok := parseLongLong(args[2])
	if !ok {
		w.WriteError(errValueNotInt)
		return
	}
	errTime := "ERR invalid expire time in '" + name + "' command"
	if !ms {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			w.WriteError(errTime)
			return
		}
		when *= 1000
	}
	now := s.store.nowMs()
	if !absolute {
		if when > math.MaxInt64-now {
			w.WriteError(errTime)
			return
		}
		when += now
	}
	key := string(args[1])
	e := s.store.get(sess.db, key)
	if e == nil {
		w.WriteInt64(0)
		return
	}
	current := e.expireAt.Load()
	switch {
	case flags&expireNX != 0 && current != 0,
		flags&expireXX != 0 && current == 0,
		flags&expireGT != 0 && (current == 0 || when <= current),
		flags&expireLT != 0 && current != 0 && when >= current:
		w.WriteInt64(0)
		return
	}
	var pos uint64
	var err error
	if when <= now {
		// A time past deletes the key, as a DEL would.
		_, _, pos, err = s.store.delOne(sess.db, key, func(x *entry) bool { return x == e })
		s.store.uploads.drop(uploadKey(sess.db, key))
	} else {
		pos = s.store.setExpiry(sess.db, key, e, when)
	}
	if cerr := s.commit(sess, pos); cerr != nil {
		w.WriteError(logFailed(cerr))
		return
	}
	if err != nil {
		w.WriteError("ERR " + oneLine(err.Error()))
		return
	}
	w.WriteInt64(1)
}

// expireFlags parses EXPIRE's conditions (parseExtendedExpireArgumentsOrReply).
func expireFlags(args [][]byte) (int, string) {
	flags := 0
	for _, a := range args {
		switch {
		case eq(a, "NX"):
			flags |= expireNX
		case eq(a, "XX"):
			flags |= expireXX
		case eq(a, "GT"):
			flags |= expireGT
		case eq(a, "LT"):
			flags |= expireLT
		default:
			return 0, "ERR Unsupported option " + oneLine(string(a))
		}
	}
	if flags&expireNX != 0 && flags&(expireXX|expireGT|expireLT) != 0 {
		return 0, "ERR NX and XX, GT or LT options at the same time are not compatible"
	}
	if flags&expireGT != 0 && flags&expireLT != 0 {
		return 0, "ERR GT and LT options at the same time are not compatible"
	}
	return flags, ""
}

// setExpiry sets when the key expires (at, Unix ms; 0 never) if it is still
// e, and returns the log position of the change (0 if nothing changed).
// The record is appended under the store's lock, so that it is ordered
// with the key's creation and removal.
func (s *store) setExpiry(db int, name string, e *entry, at int64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dbs[db]
	if d.keys[name] != e {
		return 0
	}
	d.setExpiryLocked(name, e, at)
	e.markDirty()
	if s.log == nil {
		return 0
	}
	return s.log.appendExpire(db, name, at)
}

// cmdTTL is TTL, PTTL, EXPIRETIME and PEXPIRETIME (ttlGenericCommand): -2
// for a missing key, -1 for one without an expiry.
func cmdTTL(s *Server, sess *session, w replier, args [][]byte) {
	name := lowerName(args[0])
	ms := name[0] == 'p'
	e := s.store.getBytes(sess.db, args[1])
	if e == nil {
		w.WriteInt64(-2)
		return
	}
	at := e.expireAt.Load()
	if at == 0 {
		w.WriteInt64(-1)
		return
	}
	if strings.HasSuffix(name, "time") {
		if !ms {
			at /= 1000
		}
		w.WriteInt64(at)
		return
	}
	left := max(at-s.store.nowMs(), 0)
	if !ms {
		left = (left + 500) / 1000
	}
	w.WriteInt64(left)
}

// cmdPersist removes a key's expiry: 1 if it had one.
func cmdPersist(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	key := string(args[1])
	e := s.store.get(sess.db, key)
	if e == nil || e.expireAt.Load() == 0 {
		w.WriteInt64(0)
		return
	}
	pos := s.store.setExpiry(sess.db, key, e, 0)
	if cerr := s.commit(sess, pos); cerr != nil {
		w.WriteError(logFailed(cerr))
		return
	}
	w.WriteInt64(1)
}
