package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ohbloom/ohbloom"
)

// CF.* commands: counting filters stand where RedisBloom has cuckoo filters.

func (s *Server) newCounting(capacity int64) (*entry, error) {
	if capacity < 1 {
		return nil, errors.New("ERR (capacity should be larger than 0)")
	}
	if err := s.checkSize(uint64(capacity), countingErrorRate, countingSize); err != nil {
		return nil, err
	}
	f, err := ohbloom.NewAtomicCountingWithConfig(ohbloom.Config{Capacity: uint64(capacity), FPR: countingErrorRate})
	if err != nil {
		return nil, errors.New("ERR " + oneLine(err.Error()))
	}
	return &entry{kind: kindCounting, counting: f, capacity: uint64(capacity), errorRate: countingErrorRate}, nil
}

// countingSize sizes a counting filter without allocating one.
func countingSize(n uint64, p float64) (uint64, int, error) { return ohbloom.CountingSize(n, p) }

func cmdCFReserve(s *Server, sess *session, w replier, args [][]byte) {
	capacity, ok := parseInt(args[2])
	if !ok {
		w.WriteError("ERR Bad capacity")
		return
	}
	for i := 3; i < len(args); i += 2 {
		if i+1 == len(args) {
			w.WriteError(wrongArity(args[0]))
			return
		}
		v, ok := parseInt(args[i+1])
		switch {
		case eq(args[i], "BUCKETSIZE") || eq(args[i], "MAXITERATIONS") || eq(args[i], "EXPANSION"):
			// Cuckoo-filter tuning: a counting filter has no buckets
			// to size and never relocates; the values are checked and
			// otherwise have no effect.
			if !ok || v < 0 {
				w.WriteError(fmt.Sprintf("ERR Couldn't parse %s", strings.ToUpper(string(args[i]))))
				return
			}
		default:
			w.WriteError(unknownArgument(args[i]))
			return
		}
	}
	s.reserve(sess, w, args[1], true, func() (*entry, error) { return s.newCounting(capacity) })
}

// reserve creates the key with build and answers BF.RESERVE or CF.RESERVE:
// OK, or RedisBloom's error for a key that exists, of either type.
func (s *Server) reserve(sess *session, w replier, name []byte, counting bool, build func() (*entry, error)) {
	if len(name) > maxKeyBytes {
		w.WriteError(errKeyTooLong)
		return
	}
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	e, created, pos, err := s.store.getOrCreateLogged(string(name), build)
	if err == nil {
		err = s.commit(sess, pos)
		if err != nil {
			err = errors.New(logFailed(err))
		}
	}
	switch {
	case err != nil:
		w.WriteError(err.Error())
	case !created && (e.kind == kindCounting) != counting:
		w.WriteError(wrongType)
	case !created:
		w.WriteError(errItemExists)
	default:
		w.WriteString("OK")
	}
}

func (s *Server) countingEntry(sess *session, w replier, name []byte, create bool, capacity int64) *entry {
	e := s.store.getBytes(name)
	if e == nil && create {
		if len(name) > maxKeyBytes {
			w.WriteError(errKeyTooLong)
			return nil
		}
		var err error
		var pos uint64
		e, _, pos, err = s.store.getOrCreateLogged(string(name), func() (*entry, error) { return s.newCounting(capacity) })
		if err != nil {
			w.WriteError(err.Error())
			return nil
		}
		noteLog(sess, pos)
	} else if e == nil {
		w.WriteError(errNotFound)
		return nil
	}
	if e.kind != kindCounting {
		w.WriteError(wrongType)
		return nil
	}
	return e
}

// countingAdds adds items (each only if absent, with nx) to the CF key
// name, at most hashesPerRecord of them, and sets out[i] to 1 for each
// added. The adds, their numbers and their record are one step under the
// key's lock (persist.go says why); then the change is committed.
func (s *Server) countingAdds(sess *session, e *entry, name []byte, items [][]byte, nx bool, out []int64) error {
	log := s.store.log
	var hs [hashesPerRecord]uint64
	n := 0
	e.mu.Lock()
	first := e.seq + 1
	for i, item := range items {
		h := e.hash(item)
		if nx && e.counting.CountHash(h) > 0 {
			out[i] = 0
			continue
		}
		e.counting.AddHash(h)
		e.items.Add(1)
		e.seq++
		hs[n] = h
		n++
		out[i] = 1
	}
	var pos uint64
	if n > 0 {
		e.markDirty()
		if log != nil {
			pos = log.appendHashes(recCountingAdd, name, first, hs[:n])
		}
	} else if log != nil {
		// Nothing changed, but what CF.ADDNX saw may be another
		// client's add whose record is not yet durable.
		pos = log.tail.Load()
	}
	e.mu.Unlock()
	return s.commit(sess, pos)
}

func cmdCFAdd(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	e := s.countingEntry(sess, w, args[1], true, defaultCFCapacity)
	if e == nil {
		return
	}
	var out [1]int64
	if err := s.countingAdds(sess, e, args[1], args[2:3], eq(args[0], "cf.addnx"), out[:]); err != nil {
		w.WriteError(logFailed(err))
		return
	}
	w.WriteInt64(out[0])
}

func cmdCFInsert(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	capacity, create, items := int64(defaultCFCapacity), true, -1
	for i := 2; i < len(args) && items < 0; i++ {
		switch {
		case eq(args[i], "ITEMS"):
			items = i + 1
		case eq(args[i], "NOCREATE"):
			create = false
		case eq(args[i], "CAPACITY"):
			if i+1 == len(args) {
				w.WriteError(wrongArity(args[0]))
				return
			}
			i++
			var ok bool
			if capacity, ok = parseInt(args[i]); !ok || capacity < 1 {
				w.WriteError("ERR Bad capacity")
				return
			}
		default:
			w.WriteError(unknownArgument(args[i]))
			return
		}
	}
	if items < 0 || items == len(args) {
		w.WriteError(wrongArity(args[0]))
		return
	}
	e := s.countingEntry(sess, w, args[1], create, capacity)
	if e == nil {
		return
	}
	nx := eq(args[0], "cf.insertnx")
	w.WriteArray(len(args) - items)
	for rest := args[items:]; len(rest) > 0; {
		group := rest[:min(len(rest), hashesPerRecord)]
		rest = rest[len(group):]
		var out [hashesPerRecord]int64
		err := s.countingAdds(sess, e, args[1], group, nx, out[:])
		for i := range group {
			if err != nil {
				w.WriteError(logFailed(err))
			} else {
				w.WriteInt64(out[i])
			}
		}
	}
}

func cmdCFExists(s *Server, _ *session, w replier, args [][]byte) {
	e := s.store.getBytes(args[1])
	if e != nil && e.kind != kindCounting {
		w.WriteError(wrongType)
		return
	}
	multi, count := eq(args[0], "cf.mexists"), eq(args[0], "cf.count")
	if multi {
		w.WriteArray(len(args) - 2)
	}
	for _, item := range args[2:] {
		switch {
		case e == nil:
			w.WriteInt64(0)
		case count:
			w.WriteInt64(int64(e.counting.Count(item)))
		case e.counting.Test(item):
			w.WriteInt64(1)
		default:
			w.WriteInt64(0)
		}
	}
}

// cmdCFDel deletes one occurrence of an item: it replies 1 when the item
// tests present and the key's item count (adds minus deletes) is above 0,
// and 0 otherwise, changing nothing. So the count never goes below 0, and
// an item added n times is deleted n times, as in RedisBloom, even when its
// counters saturated at 15: those stay at 15 (a counter that reached 15 no
// longer knows how many items it counts), so such an item still tests
// present after its last delete, where RedisBloom would say absent.
func cmdCFDel(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	e := s.countingEntry(sess, w, args[1], false, 0)
	if e == nil {
		return
	}
	h := e.hash(args[2])
	deleted := int64(0)
	var pos uint64
	e.mu.Lock()
	if e.counting.CountHash(h) > 0 && e.decrementItems() {
		e.counting.RemoveHash(h) // present, so it removes
		e.deletes.Add(1)
		e.seq++
		e.markDirty()
		if s.store.log != nil {
			pos = s.store.log.appendRemove(args[1], e.seq, h)
		}
		deleted = 1
	}
	e.mu.Unlock()
	if err := s.commit(sess, pos); err != nil {
		w.WriteError(logFailed(err))
		return
	}
	w.WriteInt64(deleted)
}

func cmdCFInfo(s *Server, _ *session, w replier, args [][]byte) {
	e := s.countingEntry(nil, w, args[1], false, 0)
	if e == nil {
		return
	}
	info := []struct {
		name  string
		value uint64
	}{
		{"Size", e.sizeBytes()},
		{"Number of buckets", e.counting.Blocks()},
		{"Number of filters", 1},
		{"Number of items inserted", e.items.Load()},
		{"Number of items deleted", e.deletes.Load()},
		{"Bucket size", e.counting.Counters() / e.counting.Blocks()},
		{"Expansion rate", 0},
		{"Max iterations", 0},
	}
	w.WriteArray(2 * len(info))
	for _, f := range info {
		w.WriteString(f.name)
		w.WriteInt64(int64(f.value))
	}
}
