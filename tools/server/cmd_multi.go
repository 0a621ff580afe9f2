package server

import "unsafe"

// MULTI, EXEC, DISCARD: transactions as Redis runs them, without WATCH.
//
// Between MULTI and EXEC a client's commands are checked (known, right
// number of arguments) and queued, each answered +QUEUED; one that fails
// the check is answered its error and makes EXEC answer EXECABORT. EXEC
// runs off the event loop, in a goroutine of its own, and answers an
// array of the queued commands' replies. While it runs it holds the
// latches of the keys its commands name, alone, and the keyspace's list or
// change mode if its commands list keys or may create or delete one
// (isolation.go): no other client's command on those keys, and no listing
// of keys that could see a key it creates and removes, runs between its
// commands; other clients' commands on other keys, PING and INFO go on
// meanwhile. The queue is a copy of the commands' bytes, counted against
// the client's MaxRequestBytes and the server's MaxBufferedBytes.

// multiState is a transaction being queued.
type multiState struct {
	buf  []byte // the queued commands' arguments, one after another
	cmds [][]span
	// spanBytes is what the commands' span slices hold: 16 bytes an
	// argument, more than an empty argument's 6 on the wire, so they are
	// counted, or a queue of empty arguments would grow past every limit.
	spanBytes int64
	dirty     bool // a command was refused: EXEC aborts
}

// spanSize is the memory of one span.
const spanSize = int64(unsafe.Sizeof(span{}))

const (
	errExecAbort    = "EXECABORT Transaction discarded because of previous errors."
	errWatchMissing = "ERR WATCH is not supported by ohbloom serve: MULTI/EXEC transactions run without it"
)

func (sess *session) multiBytes() int64 {
	if sess.multi == nil {
		return 0
	}
	m := sess.multi
	return int64(cap(m.buf)+cap(m.cmds)*24) + m.spanBytes
}

func cmdMulti(_ *Server, sess *session, w replier, _ [][]byte) {
	if sess.multi != nil {
		w.WriteError("ERR MULTI calls can not be nested")
		return
	}
	sess.multi = &multiState{}
	w.WriteString("OK")
}

func cmdDiscard(_ *Server, sess *session, w replier, _ [][]byte) {
	if sess.multi == nil {
		w.WriteError("ERR DISCARD without MULTI")
		return
	}
	sess.multi = nil
	w.WriteString("OK")
}

func cmdWatch(_ *Server, sess *session, w replier, _ [][]byte) {
	if sess.multi != nil {
		w.WriteError("ERR WATCH inside MULTI is not allowed")
		return
	}
	w.WriteError(errWatchMissing)
}

func cmdUnwatch(_ *Server, _ *session, w replier, _ [][]byte) {
	w.WriteError(errWatchMissing)
}

// queue checks a command sent inside MULTI and queues a copy of it.
func (s *Server) queue(sess *session, w replier, c command, known bool, args [][]byte) {
	m := sess.multi
	switch {
	case !known:
		m.dirty = true
		w.WriteError(unknownCommand(args))
		return
	case !c.arityOK(len(args)):
		m.dirty = true
		w.WriteError(wrongArity(c.name))
		return
	}
	size := 0
	for _, a := range args {
		size += len(a)
	}
	if sess.multiBytes()+int64(size)+spanSize*int64(len(args)) > int64(s.cfg.MaxRequestBytes) {
		// Drop the queue now, so that its memory goes, and abort at EXEC.
		m.buf, m.cmds, m.spanBytes, m.dirty = nil, nil, 0, true
		w.WriteError(string(errQueuedTooLarge))
		return
	}
	spans := make([]span, len(args))
	for i, a := range args {
		spans[i] = span{len(m.buf), len(m.buf) + len(a)}
		m.buf = appendChunked(m.buf, a)
	}
	m.cmds = append(m.cmds, spans)
	m.spanBytes += spanSize * int64(cap(spans))
	w.WriteString("QUEUED")
}

func cmdExec(s *Server, sess *session, w replier, _ [][]byte) {
	m := sess.multi
	if m == nil {
		w.WriteError("ERR EXEC without MULTI")
		return
	}
	sess.multi = nil
	if m.dirty {
		w.WriteError(errExecAbort)
		return
	}
	c := &claim{tx: true}
	swaps := false // it swaps databases: it holds the save lock too
	m.each(func(args [][]byte) {
		if cmd, ok := lookup(args[0]); ok {
			s.addClaim(c, sess.db, cmd.name, args)
			// Which keys the commands after a SELECT create is not
			// known here: they may change the keyspace.
			c.change = c.change || cmd.name == "select"
			swaps = swaps || cmd.name == "swapdb"
		}
	})
	if !c.empty() {
		s.iso.active.Add(1)
		defer s.iso.active.Add(-1)
		for {
			// A SWAPDB must not fall inside a save, and must not wait
			// for one while the transaction holds its latches: it held
			// every key's for the whole save (a BGSAVE of two 256 MB
			// filters: 2 s). So the transaction takes the save lock
			// with its latches, waiting for neither holding the other,
			// as a SWAPDB alone does.
			if swaps {
				s.acquireBesideSave(c)
			} else {
				s.iso.acquire(c)
			}
			sess.withoutShard(s.barrier)
			if c.change || !s.createsKey(sess.db, m) {
				break
			}
			// A key it creates was deleted before its latch was taken:
			// the transaction changes the keyspace after all.
			s.iso.release(c)
			if swaps {
				s.store.saveMu.Unlock()
			}
			c.change = true
		}
		defer s.iso.release(c)
		if swaps {
			defer s.store.saveMu.Unlock()
		}
	}
	sess.inExec = true
	defer func() { sess.inExec = false }()
	w.WriteArray(len(m.cmds))
	m.each(func(args [][]byte) { s.exec(sess, w, args) })
}

// each calls f with the arguments of each queued command, in order; the
// slice is reused between calls.
func (m *multiState) each(f func(args [][]byte)) {
	args := make([][]byte, 0, 8)
	for _, spans := range m.cmds {
		args = args[:0]
		for _, sp := range spans {
			args = append(args, m.buf[sp.start:sp.end:sp.end])
		}
		f(args)
	}
}

// createsKey reports whether a command of m would create its key now.
func (s *Server) createsKey(db int, m *multiState) bool {
	creates := false
	m.each(func(args [][]byte) {
		if cmd, ok := lookup(args[0]); ok && keySpecs[cmd.name].create && s.store.getBytes(db, args[1]) == nil {
			creates = true
		}
	})
	return creates
}
