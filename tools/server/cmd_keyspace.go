package server

import "strconv"

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
	n, pos, err := s.store.del(names...)
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

func cmdExists(s *Server, _ *session, w replier, args [][]byte) {
	n := 0
	for _, a := range args[1:] {
		if s.store.getBytes(a) != nil {
			n++
		}
	}
	w.WriteInt64(int64(n))
}

func cmdType(s *Server, _ *session, w replier, args [][]byte) {
	if e := s.store.getBytes(args[1]); e != nil {
		w.WriteString(e.kind.typeName())
		return
	}
	w.WriteString("none")
}

func cmdKeys(s *Server, _ *session, w replier, args [][]byte) {
	if len(args[1]) > maxPatternBytes {
		w.WriteError(errPatternTooLong)
		return
	}
	pattern := string(args[1])
	var out []string
	for _, name := range s.store.names() {
		if globMatch(pattern, name) {
			out = append(out, name)
		}
	}
	w.WriteArray(len(out))
	for _, name := range out {
		w.WriteBulkString(name)
	}
}

// cmdScan walks the keys in the order of a hash of their names; the
// cursor is the hash to go on from (see keyIndex). As in Redis, a key
// present for the whole scan is returned, one added or deleted meanwhile
// may or may not be, and COUNT bounds the keys looked at in one call.
func cmdScan(s *Server, _ *session, w replier, args [][]byte) {
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
	out, next := s.store.scan(cursor, count, pattern, typ)
	w.WriteArray(2)
	w.WriteBulkString(strconv.FormatUint(next, 10))
	w.WriteArray(len(out))
	for _, name := range out {
		w.WriteBulkString(name)
	}
}

// cmdFlush removes every key and every LOADCHUNK upload in progress; as
// DEL, without the log it keeps the keys whose files cannot be removed and
// replies an error, and it runs while the log is failing.
func cmdFlush(s *Server, sess *session, w replier, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !eq(args[1], "SYNC") && !eq(args[1], "ASYNC")) {
		w.WriteError("ERR syntax error")
		return
	}
	pos, err := s.store.flush()
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

func cmdSave(s *Server, _ *session, w replier, _ [][]byte) {
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

func cmdBgsave(s *Server, _ *session, w replier, _ [][]byte) {
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
