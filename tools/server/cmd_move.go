package server

import (
	"bytes"
	"math"
	"slices"
)

// RENAME, RENAMENX, COPY and MOVE, as Redis 7.4's db.c answers them.
//
// Each runs alone on its keys, as a transaction does (isolation.go): no
// other client's command on either key runs meanwhile, and every command
// on them that ran before has logged its change. The change is then one
// place record in the log (aof.go) holding the key's whole state, so that
// a replay rebuilds the destination from the log alone, whatever the
// snapshot holds of either key: a rename costs a copy of the filter into
// the log, where Redis's costs nothing, in exchange for a replay that is
// exact.

// cmdRename is RENAME and RENAMENX (renameGenericCommand).
func cmdRename(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	nx := len(args[0]) == len("renamenx")
	src, dst := string(args[1]), string(args[2])
	if len(dst) > maxKeyBytes {
		w.WriteError(errKeyTooLong)
		return
	}
	s.alone(sess, args[1:3], func() {
		e := s.store.get(sess.db, src)
		switch {
		case e == nil:
			w.WriteError(errNoSuchKey)
			return
		case src == dst:
			if nx {
				w.WriteInt64(0)
			} else {
				w.WriteString("OK")
			}
			return
		case nx && s.store.get(sess.db, dst) != nil:
			w.WriteInt64(0)
			return
		}
		if !s.relocate(sess, w, e, sess.db, src, sess.db, dst, true) {
			return
		}
		if nx {
			w.WriteInt64(1)
		} else {
			w.WriteString("OK")
		}
	})
}

// cmdCopy is COPY source destination [DB destination-db] [REPLACE]
// (copyCommand).
func cmdCopy(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	dstDB, replace := sess.db, false
	for i := 3; i < len(args); i++ {
		switch {
		case eq(args[i], "REPLACE"):
			replace = true
		case eq(args[i], "DB") && i+1 < len(args):
			db, msg := s.parseDB(args[i+1])
			if msg != "" {
				w.WriteError(msg)
				return
			}
			dstDB = db
			i++
		default:
			w.WriteError("ERR syntax error")
			return
		}
	}
	src, dst := string(args[1]), string(args[2])
	if dstDB == sess.db && src == dst {
		w.WriteError(errSameObject)
		return
	}
	if len(dst) > maxKeyBytes {
		w.WriteError(errKeyTooLong)
		return
	}
	s.alone(sess, args[1:3], func() {
		e := s.store.get(sess.db, src)
		switch {
		case e == nil:
			w.WriteInt64(0)
			return
		case !replace && s.store.get(dstDB, dst) != nil:
			w.WriteInt64(0)
			return
		}
		if s.relocate(sess, w, e, sess.db, src, dstDB, dst, false) {
			w.WriteInt64(1)
		}
	})
}

// cmdMove is MOVE key db (moveCommand).
func cmdMove(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	db, msg := s.parseDB(args[2])
	if msg != "" {
		w.WriteError(msg)
		return
	}
	if db == sess.db {
		w.WriteError(errSameObject)
		return
	}
	key := string(args[1])
	s.alone(sess, args[1:2], func() {
		e := s.store.get(sess.db, key)
		if e == nil || s.store.get(db, key) != nil {
			w.WriteInt64(0)
			return
		}
		if s.relocate(sess, w, e, sess.db, key, db, key, true) {
			w.WriteInt64(1)
		}
	})
}

// alone runs f holding keys' latches alone, as EXEC holds its keys'
// (isolation.go): every command on them that was running has ended, and
// none starts until f returns. Inside EXEC the transaction holds them
// already.
func (s *Server) alone(sess *session, keys [][]byte, f func()) {
	if sess.inExec {
		f()
		return
	}
	c := &claim{tx: true, change: true}
	for _, k := range keys {
		c.stripes.add(k)
	}
	s.iso.active.Add(1)
	defer s.iso.active.Add(-1)
	s.iso.acquire(c)
	defer s.iso.release(c)
	sess.withoutShard(s.barrier)
	f()
}

// relocate makes dst of database dstDB hold e's filter and expiry, e
// being src of srcDB, and removes src if move (RENAME, MOVE) or leaves it
// with a copy of the filter (COPY). It writes an error reply and returns
// false if it could not; the caller replies otherwise. The caller runs
// alone on src and dst (alone).
func (s *Server) relocate(sess *session, w replier, e *entry, srcDB int, src string, dstDB int, dst string, move bool) bool {
	st := s.store
	// The record of the key as it is: nothing else changes it now.
	// Its changes are numbered afresh from the place record on, as replay
	// numbers them: the record says seq 0.
	var rec []byte
	if e.ordered() {
		e.mu.Lock()
		seq := e.seq
		e.seq = 0
		rec = recordBytesLocked(dst, e)[8:]
		e.seq = seq
		e.mu.Unlock()
	} else {
		rec = recordBytesLocked(dst, e)[8:] // seq is always 0: a save may read it meanwhile
	}
	moved := e
	if !move {
		_, _, c, err := readRecord(bytes.NewReader(rec))
		if err != nil {
			w.WriteError("ERR " + oneLine(err.Error()))
			return false
		}
		c.limit(st.maxFilterBytes)
		c.expireAt.Store(e.expireAt.Load())
		moved = c
	}
	at := moved.expireAt.Load()
	var logged wholeRecord
	if st.log != nil {
		srcLogged := -1
		if move {
			srcLogged = srcDB
		}
		logged = placeWhole(dstDB, dst, at, srcLogged, src, rec)
	}
	// The files' locks, in order, so that no save writes either key's
	// file while it changes hands.
	locks := []int{st.stripeIndex(srcDB, src), st.stripeIndex(dstDB, dst)}
	slices.Sort(locks)
	locks = slices.Compact(locks)
	for _, i := range locks {
		st.stripe[i].Lock()
	}
	defer func() {
		for _, i := range locks {
			st.stripe[i].Unlock()
		}
	}()
	st.mu.Lock()
	from, to := st.dbs[srcDB], st.dbs[dstDB]
	if from.keys[src] != e || e.expiredAt(st.nowMs()) {
		// Its time ran out meanwhile: it is gone.
		st.mu.Unlock()
		if move {
			w.WriteError(errNoSuchKey)
		} else {
			w.WriteInt64(0)
		}
		return false
	}
	var pos uint64
	moved.dirty.Store(true)
	if st.log != nil {
		var err error
		if pos, err = st.log.appendWhole(logged); err != nil {
			st.mu.Unlock()
			w.WriteError("ERR " + oneLine(err.Error()))
			return false
		}
	}
	if move {
		from.removeLocked(src)
		if e.ordered() {
			e.mu.Lock()
			e.seq = 0
			e.mu.Unlock()
		}
	}
	moved.onDisk = false // its file is src's, not dst's
	to.setLocked(dst, moved)
	st.gen.Add(1)
	st.mu.Unlock()
	st.uploads.drop(uploadKey(dstDB, dst))
	if move {
		st.uploads.drop(uploadKey(srcDB, src))
		if st.log != nil {
			// The log holds the key whole: src's file can go, as a DEL's.
			if err := st.removeDataFile(srcDB, src); err != nil {
				st.logger.Warn("RENAME: the source's data file stays until the next save removes it; the log records the rename", "key", src, "err", err)
			}
		}
	}
	if err := s.commit(sess, pos); err != nil {
		w.WriteError(logFailed(err))
		return false
	}
	return true
}

// cmdSwapDB is SWAPDB index1 index2 (swapdbCommand): the two databases
// exchange their keys, and each connection stays on its index, so sees the
// other's. Their data files stay where they are: the databases exchange
// identities (store.ident), which the log records and the next save's
// manifest holds. It runs alone on the whole keyspace and between saves.
func cmdSwapDB(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	st := s.store
	var ids [2]int
	for i, which := range []string{"first", "second"} {
		n, ok := parseLongLong(args[1+i])
		if !ok || n < math.MinInt32 || n > math.MaxInt32 {
			w.WriteError("ERR invalid " + which + " DB index")
			return
		}
		ids[i] = int(n)
	}
	a, b := ids[0], ids[1]
	if a < 0 || a >= len(st.dbs) || b < 0 || b >= len(st.dbs) {
		w.WriteError(errDBRange)
		return
	}
	if a == b {
		w.WriteString("OK")
		return
	}
	var pos uint64
	run := func() { // under st.saveMu
		st.mu.Lock()
		swap := func() {
			st.dbs[a], st.dbs[b] = st.dbs[b], st.dbs[a]
			ia, ib := st.ident[a].Load(), st.ident[b].Load()
			st.ident[a].Store(ib)
			st.ident[b].Store(ia)
		}
		if st.log != nil {
			pos = st.log.appendSwapDB(a, b, swap)
		} else {
			swap()
		}
		st.gen.Add(1)
		st.mu.Unlock()
		st.uploads.dropAll()
	}
	if sess.inExec {
		run() // EXEC holds the save lock beside its latches (cmdExec)
	} else {
		c := &claim{tx: true, list: true, change: true}
		for i := range c.stripes {
			c.stripes[i] = ^uint64(0)
		}
		s.iso.active.Add(1)
		s.acquireBesideSave(c)
		sess.withoutShard(s.barrier)
		run()
		st.saveMu.Unlock()
		s.iso.release(c)
		s.iso.active.Add(-1)
	}
	s.commitOK(sess, w, pos)
}
