package server

import (
	"strconv"
	"strings"

	"github.com/tidwall/match"
)

func cmdDel(s *Server, _ *session, w replier, args [][]byte) {
	names := make([]string, len(args)-1)
	for i, a := range args[1:] {
		names[i] = string(a)
	}
	n, err := s.store.del(names...)
	if err != nil {
		s.cfg.Logger.Error("removing data files", "err", err)
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
	var out []string
	for _, name := range s.store.names() {
		if match.Match(name, string(args[1])) {
			out = append(out, name)
		}
	}
	w.WriteArray(len(out))
	for _, name := range out {
		w.WriteBulkString(name)
	}
}

// cmdScan walks the sorted keys; the cursor is the position of the next
// one. Keys added or deleted during a scan may be missed or seen twice, as
// Redis allows.
func cmdScan(s *Server, _ *session, w replier, args [][]byte) {
	cursor, ok := parseInt(args[1])
	if !ok || cursor < 0 {
		w.WriteError("ERR invalid cursor")
		return
	}
	pattern, count, typ := "*", int64(10), ""
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			w.WriteError("ERR syntax error")
			return
		}
		switch {
		case eq(args[i], "MATCH"):
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
	names := s.store.names()
	var out []string
	next := int64(0)
	for i := cursor; i < int64(len(names)); i++ {
		if i-cursor >= count {
			next = i
			break
		}
		name := names[i]
		e := s.store.get(name)
		if e == nil || !match.Match(name, pattern) || (typ != "" && !strings.EqualFold(typ, e.kind.typeName())) {
			continue
		}
		out = append(out, name)
	}
	w.WriteArray(2)
	w.WriteBulkString(strconv.FormatInt(next, 10))
	w.WriteArray(len(out))
	for _, name := range out {
		w.WriteBulkString(name)
	}
}

func cmdFlush(s *Server, _ *session, w replier, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !eq(args[1], "SYNC") && !eq(args[1], "ASYNC")) {
		w.WriteError("ERR syntax error")
		return
	}
	if _, err := s.store.del(s.store.names()...); err != nil {
		s.cfg.Logger.Error("removing data files", "err", err)
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
	go func() {
		if err := s.store.save(false); err != nil {
			s.cfg.Logger.Error("BGSAVE", "err", err)
		}
	}()
	w.WriteString("Background saving started")
}
