package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/ohbloom/ohbloom"
)

// FileLoad says what LoadFile did.
type FileLoad struct {
	Loaded   bool   // false: the key existed, and was kept
	Replaced bool   // the key existed, and now holds the file's filter
	Type     string // the key's type: "BF" or "CF"
	Filter   string // what the file held: "Filter", "ScalableFilter" or "CountingFilter"
	Bytes    uint64 // the filter's memory
}

// LoadFile serves the filter in the file at path, as ohbloom's Save or
// SaveFile wrote it, as key name of database 0:
//
//   - a Filter (what "ohbloom build" writes) as a BF key that does not grow
//     (as BF.RESERVE … NONSCALING makes): it takes adds up to the capacity
//     it was sized for, counting its keys from its estimate (BF.CARD);
//   - a ScalableFilter as a BF key that grows;
//   - a CountingFilter as a CF key (the server's CF keys are counting
//     filters), whose item count starts at its estimate.
//
// When the key exists, replace false keeps it (Loaded is false) and
// replace true puts the file's filter in its place at once: a command
// running meanwhile answers from one or the other, and an add it makes to
// the old filter is lost with it. The load is logged (the whole filter, as
// a BF.LOADCHUNK's) and synced before LoadFile returns, and the next save
// writes the key, so that it survives a restart as any key does.
//
// The file is checked in full (checksums, and no byte after the filter)
// before anything changes, and refused above max-filter-bytes.
func (s *Server) LoadFile(name, path string, replace bool) (FileLoad, error) {
	if len(name) > maxKeyBytes {
		return FileLoad{}, fmt.Errorf("server: key of %d bytes, more than %d", len(name), maxKeyBytes)
	}
	e, what, err := s.readFilterFile(path)
	if err != nil {
		return FileLoad{}, err
	}
	out := FileLoad{Type: "BF", Filter: what, Bytes: e.sizeBytes()}
	if e.kind == kindCounting {
		out.Type = "CF"
	}
	// The record a LOADCHUNK of the key's dump would bring: what the log
	// keeps of the load.
	var rec bytes.Buffer
	if _, err := writeRecord(&rec, name, e); err != nil {
		return FileLoad{}, err
	}
	st := s.store
	if msg := st.writeRefusal(); msg != "" {
		return FileLoad{}, fmt.Errorf("server: %s", msg)
	}
	var logged wholeRecord
	if st.log != nil {
		logged = loadWhole(0, name, rec.Bytes())
	}
	st.mu.Lock()
	old := st.dbs[0].keys[name]
	if old != nil && old.expiredAt(st.nowMs()) {
		old = nil
	}
	if old != nil && !replace {
		st.mu.Unlock()
		return out, nil
	}
	e.dirty.Store(true)
	var pos uint64
	if st.log != nil {
		if pos, err = st.log.appendWhole(logged); err != nil {
			st.mu.Unlock()
			return FileLoad{}, fmt.Errorf("server: logging the load of %s: %w", path, err)
		}
	}
	st.dbs[0].setLocked(name, e)
	st.gen.Add(1)
	st.mu.Unlock()
	out.Loaded, out.Replaced = true, old != nil
	if st.log != nil {
		if err := st.log.waitDurable(pos); err != nil {
			return out, fmt.Errorf("server: the load of %s is served but may not survive a crash: the append-only log: %w", path, err)
		}
	}
	return out, nil
}

// readFilterFile decodes the filter file at path into an entry, and says
// which filter type it held.
func (s *Server) readFilterFile(path string) (*entry, string, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	// Checked before decoding: nothing is allocated for a file that could
	// only hold a filter too large to serve.
	if limit := dumpLimit(s.cfg.MaxFilterBytes); uint64(info.Size()) > limit {
		return nil, "", fmt.Errorf("%s: %d bytes, more than a filter of max-filter-bytes (%d) takes", path, info.Size(), s.cfg.MaxFilterBytes)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	// The filter kind is byte 10 of every ohbloom filter file's header
	// (docs/format.md); the decoder of that kind checks the rest, and a
	// file that is no filter at all gets the blocked filter decoder's
	// error, which says what it starts with.
	head, _ := r.Peek(11)
	kind := byte(1)
	if len(head) == 11 && string(head[:8]) == "OHBLOOM\x00" {
		kind = head[10]
	}
	e := &entry{}
	var what string
	switch kind {
	case 2:
		what, e.kind, e.counting = "CountingFilter", kindCounting, new(ohbloom.AtomicCountingFilter)
		_, err = e.counting.ReadFrom(r)
	case 3:
		what, e.kind, e.scalable = "ScalableFilter", kindScalable, new(ohbloom.AtomicScalableFilter)
		_, err = e.scalable.ReadFrom(r)
	default:
		what, e.kind, e.fixed = "Filter", kindFixed, new(ohbloom.AtomicFilter)
		_, err = e.fixed.ReadFrom(r)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %s", path, trimLib(err))
	}
	if _, err := r.ReadByte(); err != io.EOF {
		return nil, "", fmt.Errorf("%s: %w: bytes after the filter", path, errCorrupt)
	}
	if size := e.sizeBytes(); size > s.cfg.MaxFilterBytes {
		return nil, "", fmt.Errorf("%s: a filter of %d bytes, more than max-filter-bytes (%d)", path, size, s.cfg.MaxFilterBytes)
	}
	switch e.kind {
	case kindFixed:
		e.capacity, e.errorRate = e.fixed.Capacity(), e.fixed.TargetFPR()
		// A snapshot of explicit geometry was sized for no capacity: it
		// is served full, taking no adds.
		e.items.Store(min(e.fixed.EstimatedCount(), e.capacity))
	case kindScalable:
		c := e.scalable.Config()
		e.capacity, e.errorRate = c.Capacity, c.FPR
	case kindCounting:
		// The file keeps its target rate, but the library reads it back
		// for no one: the key reports the rate of every CF key.
		e.capacity, e.errorRate = e.counting.Capacity(), countingErrorRate
		if n := e.counting.EstimatedCount(); n != math.MaxUint64 {
			e.items.Store(n)
		}
	}
	e.initSeed()
	e.limit(s.cfg.MaxFilterBytes)
	return e, what, nil
}

// trimLib is the message of a library error without its "ohbloom: ",
// which a path in front of it would repeat.
func trimLib(err error) string {
	msg := err.Error()
	if rest, ok := bytes.CutPrefix([]byte(msg), []byte("ohbloom: ")); ok {
		return string(rest)
	}
	return msg
}

// waitDurable returns once the record ending at pos is fsynced, whatever
// the policy: a file loaded at start or on SIGHUP has no client waiting
// on a reply, and is served only once it would survive a crash.
func (l *appendLog) waitDurable(pos uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		switch {
		case l.durable >= pos:
			return nil
		case l.err != nil:
			return l.err
		case !l.flushing:
			l.flushLocked(true)
		default:
			l.cond.Wait()
		}
	}
}
