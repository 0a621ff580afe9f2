package server

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// cmdDel replies with the number of keys removed, and every one of them
// stays removed after a restart: with the log, its record says so; without
// it, a key whose file cannot be removed is kept, and the reply is an
// error naming it (the keys before it are removed). It runs while the log
// is failing too (it frees space): its reply then waits until the record
// is durable (aof.go's await).
func cmdDel(s *Server, sess *session, w replier, args [][]byte) {
	names := make([]string, len(args)-1)
	for i, a := range args[1:] {
		names[i] = string(a)
	}
	n, pos, err := s.store.del(sess.db, names...)
	if cerr := s.commit(sess, pos); cerr != nil {
		w.WriteError(logFailed(cerr))
		return
	}
	if err != nil {
		s.cfg.Logger.Error("DEL", "err", err)
		w.WriteError("ERR " + oneLine(err.Error()))
		return
	}
	w.WriteInt64(int64(n))
}

func cmdExists(s *Server, sess *session, w replier, args [][]byte) {
	n := 0
	for _, a := range args[1:] {
		if s.store.getBytes(sess.db, a) != nil {
			n++
		}
	}
	w.WriteInt64(int64(n))
}

func cmdType(s *Server, sess *session, w replier, args [][]byte) {
	if e := s.store.getBytes(sess.db, args[1]); e != nil {
		w.WriteString(e.kind.typeName())
		return
	}
	w.WriteString("none")
}

// cmdKeys answers the keys that match a pattern, sorted, as they were at
// one instant: it takes a snapshot of the index (keyIndex), which holds
// the store's lock for a copy of its buckets, not of the keyspace, and
// matches the names without any lock, on the goroutine of a slow command,
// so that a slow match holds up no other client. The reply is bounded by
// what a client may leave unread (MaxRequestBytes, which would close the
// connection): past it KEYS is refused, and SCAN lists any keyspace.
func cmdKeys(s *Server, sess *session, w replier, args [][]byte) {
	if len(args[1]) > maxPatternBytes {
		w.WriteError(errPatternTooLong)
		return
	}
	g := compileGlob(string(args[1]), false)
	snap, expiring := s.keysSnapshot(sess)
	var out []string
	size := 0
	for _, b := range snap.buckets {
		for _, k := range b {
			if !g.match(k.name) || expiring && s.store.get(sess.db, k.name) == nil {
				continue
			}
			out = append(out, k.name)
			if size += bulkBytes(len(k.name)); size > s.cfg.MaxRequestBytes {
				w.WriteError(fmt.Sprintf("ERR KEYS reply longer than max-request-bytes (%d): use SCAN", s.cfg.MaxRequestBytes))
				return
			}
		}
	}
	slices.Sort(out)
	w.WriteArray(len(out))
	for _, name := range out {
		w.WriteBulkString(name)
	}
}

// bulkBytes is the length of a bulk string of n bytes in a reply, at most.
func bulkBytes(n int) int { return n + 16 }

// keysSnapshot is the index of the session's database as it is, once no
// transaction that creates or deletes keys runs (isolation.go); inside
// EXEC, the transaction's claim covers it. expiring says some of its keys
// have an expiry: those whose time is up are to be left out.
func (s *Server) keysSnapshot(sess *session) (*indexSnapshot, bool) {
	list := claim{list: true}
	if !sess.inExec {
		s.iso.acquire(&list)
		defer s.iso.release(&list)
	}
	s.store.mu.RLock()
	defer s.store.mu.RUnlock()
	d := s.store.dbs[sess.db]
	return d.idx().snapshot(), len(d.expires) > 0
}

// scanReplyBytes bounds the names one SCAN call answers: past it the call
// ends early, with a cursor that goes on, as COUNT is a hint (Redis too
// may answer fewer keys than COUNT).
const scanReplyBytes = 1 << 20

// cmdScan walks the keys in the order of a hash of their names; the
// cursor is the hash to go on from (see keyIndex). As in Redis, a key
// present for the whole scan is returned, one added or deleted meanwhile
// may or may not be, and COUNT bounds the keys looked at in one call. The
// index is read in chunks, each under the store's lock and the keyspace's
// list mode (so that no transaction's keys are seen halfway), and the
// names are matched without them.
func cmdScan(s *Server, sess *session, w replier, args [][]byte) {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		w.WriteError("ERR invalid cursor")
		return
	}
	pattern, count, typ := "*", int64(10), ""
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			w.WriteError("ERR syntax error")
			return
		}
		var ok bool
		switch {
		case eq(args[i], "MATCH"):
			if len(args[i+1]) > maxPatternBytes {
				w.WriteError(errPatternTooLong)
				return
			}
			pattern = string(args[i+1])
		case eq(args[i], "COUNT"):
			if count, ok = parseInt(args[i+1]); !ok || count < 1 {
				w.WriteError("ERR value is out of range, must be positive")
				return
			}
		case eq(args[i], "TYPE"):
			typ = string(args[i+1])
		default:
			w.WriteError("ERR syntax error")
			return
		}
	}
	g := compileGlob(pattern, false)
	list := claim{list: true}
	lock, unlock := func() {}, func() {}
	if !sess.inExec {
		lock, unlock = func() { s.iso.acquire(&list) }, func() { s.iso.release(&list) }
	}
	var out []string
	size := 0
	next := s.store.scanChunks(sess.db, cursor, count, lock, unlock, func(name string) {
		if !g.match(name) {
			return
		}
		e := s.store.get(sess.db, name)
		if e == nil || typ != "" && !strings.EqualFold(typ, e.kind.typeName()) {
			return
		}
		out = append(out, name)
		size += bulkBytes(len(name))
	}, func() bool { return size >= scanReplyBytes })
	w.WriteArray(2)
	w.WriteBulkString(strconv.FormatUint(next, 10))
	w.WriteArray(len(out))
	for _, name := range out {
		w.WriteBulkString(name)
	}
}

// cmdFlush removes every key (FLUSHALL) or those of the session's
// database (FLUSHDB), and their LOADCHUNK uploads in progress; as DEL,
// without the log it keeps the keys whose files cannot be removed and
// replies an error, and it runs while the log is failing.
func cmdFlush(s *Server, sess *session, w replier, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !eq(args[1], "SYNC") && !eq(args[1], "ASYNC")) {
		w.WriteError("ERR syntax error")
		return
	}
	var dbs []int // all
	if lower(args[0][5]) == 'd' {
		dbs = []int{sess.db}
	}
	pos, err := s.store.flush(dbs...)
	if cerr := s.commit(sess, pos); cerr != nil {
		w.WriteError(logFailed(cerr))
		return
	}
	if err != nil {
		s.cfg.Logger.Error("FLUSHALL", "err", err)
		w.WriteError("ERR " + oneLine(err.Error()))
		return
	}
	w.WriteString("OK")
}

func cmdSave(s *Server, sess *session, w replier, _ [][]byte) {
	if s.cfg.DataDir == "" {
		w.WriteError("ERR no data directory: start the server with --dir to save")
		return
	}
	if err := s.store.save(false); err != nil {
		w.WriteError("ERR " + oneLine(err.Error()))
		return
	}
	w.WriteString("OK")
}

func cmdBgsave(s *Server, sess *session, w replier, _ [][]byte) {
	if s.cfg.DataDir == "" {
		w.WriteError("ERR no data directory: start the server with --dir to save")
		return
	}
	if !s.store.bgsave.CompareAndSwap(false, true) {
		w.WriteError("ERR Background save already in progress")
		return
	}
	go func() {
		defer s.store.bgsave.Store(false)
		if err := s.store.save(false); err != nil {
			s.cfg.Logger.Error("BGSAVE", "err", err)
		}
	}()
	w.WriteString("Background saving started")
}
