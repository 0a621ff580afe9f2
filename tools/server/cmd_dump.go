package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// scanDumpChunk is the most SCANDUMP returns at once, RedisBloom's 10 MiB
// (a variable so that tests can see many chunks without large filters).
var scanDumpChunk uint64 = 10 << 20

// SCANDUMP and LOADCHUNK.
//
// A dump is the key's record (the data file's bytes) behind an 8-byte
// length, served in chunks of at most 10 MiB. The iterator of a chunk is
// one past the offset of its end, so LOADCHUNK knows where each chunk goes
// and that the first one starts the upload. The record is taken whole at
// iterator 0, so adds during a dump do not tear it.

type pendingLoad struct {
	kinds string // "bf" or "cf": the family that started it
	total uint64
	buf   []byte
}

// family tells BF.SCANDUMP and BF.LOADCHUNK from their CF twins.
func family(args [][]byte) string {
	if eq(args[0][:2], "cf") {
		return "cf"
	}
	return "bf"
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
	e.dumpMu.Lock()
	defer e.dumpMu.Unlock()
	if iter == 0 {
		rec := record{name, e}.bytes()
		e.dump = binary.LittleEndian.AppendUint64(make([]byte, 0, 8+len(rec)), uint64(len(rec)))
		e.dump = append(e.dump, rec...)
	}
	start := uint64(max(iter, 1) - 1)
	if e.dump == nil || start >= uint64(len(e.dump)) {
		e.dump = nil
		w.WriteArray(2)
		w.WriteInt64(0)
		w.WriteBulk(nil)
		return
	}
	end := min(start+scanDumpChunk, uint64(len(e.dump)))
	w.WriteArray(2)
	w.WriteInt64(int64(end) + 1)
	w.WriteBulk(e.dump[start:end])
}

func cmdLoadChunk(s *Server, _ *session, w replier, args [][]byte) {
	iter, ok := parseInt(args[2])
	data := args[3]
	if !ok || iter < 1 || uint64(iter-1) < uint64(len(data)) {
		w.WriteError("ERR invalid chunk position")
		return
	}
	name := string(args[1])
	start := uint64(iter-1) - uint64(len(data))
	fam := family(args)
	s.store.pendingMu.Lock()
	defer s.store.pendingMu.Unlock()
	p := s.store.pending[name]
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
		if limit := s.cfg.MaxFilterBytes + 2*maxKeyBytes; total > limit {
			w.WriteError(fmt.Sprintf("ERR dump of %d bytes exceeds max-filter-bytes (%d)", total, s.cfg.MaxFilterBytes))
			return
		}
		p = &pendingLoad{kinds: fam, total: total}
		data = data[8:]
		s.store.pending[name] = p
	} else {
		if p == nil || p.kinds != fam {
			w.WriteError("ERR no dump being loaded for this key: start with its first chunk")
			return
		}
		if start != 8+uint64(len(p.buf)) {
			w.WriteError(fmt.Sprintf("ERR chunk starts at byte %d, expected %d", start, 8+len(p.buf)))
			return
		}
	}
	if uint64(len(p.buf))+uint64(len(data)) > p.total {
		delete(s.store.pending, name)
		w.WriteError("ERR chunk runs past the end of the dump")
		return
	}
	p.buf = append(p.buf, data...)
	if uint64(len(p.buf)) < p.total {
		w.WriteString("OK")
		return
	}
	delete(s.store.pending, name)
	r := bytes.NewReader(p.buf)
	_, e, err := readRecord(r) // a dump may be loaded under another key, as in RedisBloom
	switch {
	case err != nil:
		w.WriteError("ERR invalid dump: " + oneLine(err.Error()))
	case r.Len() != 0:
		w.WriteError("ERR invalid dump: bytes after the filter")
	case (e.kind == kindCounting) != (fam == "cf"):
		w.WriteError(wrongType)
	case e.sizeBytes() > s.cfg.MaxFilterBytes:
		w.WriteError(fmt.Sprintf("ERR filter of %d bytes exceeds max-filter-bytes (%d)", e.sizeBytes(), s.cfg.MaxFilterBytes))
	case !s.store.put(name, e):
		w.WriteError(errItemExists)
	default:
		w.WriteString("OK")
	}
}
