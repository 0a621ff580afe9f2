package server

import (
	"errors"
	"fmt"

	"github.com/ohbloom/ohbloom"
)

// CF.* commands: counting filters stand where RedisBloom has cuckoo
// filters, so that CF.DEL works. The commands parse and answer as
// rebloom.c's CF commands do (texts, RESP3 booleans where it sends them,
// maps); what a counting filter does differently is in docs/server.md:
// it never fills up (counters saturate at 15 instead of a cuckoo filter's
// "Filter is full"), it does not grow, and BUCKETSIZE, MAXITERATIONS and
// EXPANSION, checked as RedisBloom checks them, shape nothing.

// RedisBloom's bounds and defaults for cuckoo filters (src/config.c).
const (
	cfDefaultCapacity   = 1024 // cf-initial-size
	cfDefaultBucketSize = 2    // cf-bucket-size
	cfMaxCapacity       = 1 << 30
	cfMaxBucketSize     = 255
	cfMaxIterations     = 65535
	cfMaxExpansion      = 32768
)

const (
	errCFBadCapacity     = "Bad capacity"
	errCFCapacityRange   = "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"
	errCFInsertCapacity  = "Capacity must be in the range [cf-bucket-size * 2, 1073741824]"
	errCFNotFound        = "Not found"
	errCFCouldNotCreate  = "ERR Could not create filter"
	errCFInvalidPosition = "Invalid position"
)

func (s *Server) newCounting(capacity int64) (*entry, error) {
	if capacity < 2*cfDefaultBucketSize {
		return nil, errors.New(errCFCouldNotCreate) // cfCreate's own check
	}
	if err := s.checkSize(uint64(capacity), countingErrorRate, countingSize); err != nil {
		return nil, err
	}
	f, err := ohbloom.NewAtomicCountingWithConfig(ohbloom.Config{Capacity: uint64(capacity), FPR: countingErrorRate})
	if err != nil {
		return nil, errors.New(errNoMemoryToCreate)
	}
	return &entry{kind: kindCounting, counting: f, capacity: uint64(capacity), errorRate: countingErrorRate}, nil
}

// checkSize refuses a filter that size says would exceed max-filter-bytes.
func (s *Server) checkSize(n uint64, p float64, size func(uint64, float64) (uint64, int, error)) error {
	blocks, _, err := size(n, p)
	if err != nil {
		return errors.New(errCFCouldNotCreate)
	}
	if bytes := blocks * ohbloom.BlockBytes; bytes > s.cfg.MaxFilterBytes {
		return fmt.Errorf("ERR filter of %d bytes exceeds max-filter-bytes (%d)", bytes, s.cfg.MaxFilterBytes)
	}
	return nil
}

// countingSize sizes a counting filter without allocating one.
func countingSize(n uint64, p float64) (uint64, int, error) { return ohbloom.CountingGeometry(n, p) }

// cfOption finds one of CF.RESERVE's options as RedisBloom does
// (RMUtil_ArgIndex over every argument) and checks its value; it returns
// the error reply or "".
func cfOption(args [][]byte, name string, lo, hi int64, def int64) (int64, string) {
	i := argIndex(args, name)
	if i == -1 {
		return def, ""
	}
	var v int64
	ok := i+1 < len(args)
	if ok {
		v, ok = parseLongLong(args[i+1])
	}
	if !ok {
		return 0, "Couldn't parse " + name
	}
	if v < lo || v > hi {
		return 0, fmt.Sprintf("%s: value must be in the range [%d, %d]", name, lo, hi)
	}
	return v, ""
}

// cmdCFReserve is CFReserve_RedisCommand: an odd number of arguments, the
// capacity, then MAXITERATIONS, BUCKETSIZE and EXPANSION (in that order of
// checking) found anywhere, then the capacity against the bucket size.
func cmdCFReserve(s *Server, sess *session, w replier, args [][]byte) {
	if len(args)%2 == 0 {
		w.WriteError(wrongArity(args[0]))
		return
	}
	capacity, ok := parseLongLong(args[2])
	if !ok {
		w.WriteError(errCFBadCapacity)
		return
	}
	if _, msg := cfOption(args, "MAXITERATIONS", 1, cfMaxIterations, 20); msg != "" {
		w.WriteError(msg)
		return
	}
	bucketSize, msg := cfOption(args, "BUCKETSIZE", 1, cfMaxBucketSize, cfDefaultBucketSize)
	if msg != "" {
		w.WriteError(msg)
		return
	}
	if _, msg := cfOption(args, "EXPANSION", 0, cfMaxExpansion, 1); msg != "" {
		w.WriteError(msg)
		return
	}
	if bucketSize*2 > capacity || capacity > cfMaxCapacity {
		w.WriteError(errCFCapacityRange)
		return
	}
	s.reserve(sess, w, args[1], true, func() (*entry, error) {
		// A cuckoo filter's capacity is at least twice its bucket size;
		// a counting filter takes any, so the smallest that RedisBloom
		// takes with the default bucket size is sized for.
		return s.newCounting(max(capacity, 2*cfDefaultBucketSize))
	})
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
	if !sess.holdOnLoop(e) {
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
	sess.lockEntry(e)
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
	sess.unlockEntry(e)
	return s.commit(sess, pos)
}

// cmdCFAdd is CF.ADD and CF.ADDNX (CFAdd_RedisCommand, told apart by the
// last letter of the name): a boolean in RESP3.
func cmdCFAdd(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	e := s.countingEntry(sess, w, args[1], true, cfDefaultCapacity)
	if e == nil {
		return
	}
	var out [1]int64
	if err := s.countingAdds(sess, e, args[1], args[2:3], lower(args[0][len(args[0])-1]) == 'x', out[:]); err != nil {
		w.WriteError(logFailed(err))
		return
	}
	w.WriteBool(out[0] == 1)
}

// cmdCFInsert is CF.INSERT and CF.INSERTNX (CFInsert_RedisCommand), its
// options read by their first letters: C is CAPACITY, I starts the items,
// any word starting with N is NOCREATE. CF.INSERT answers booleans in
// RESP3, CF.INSERTNX integers in both protocols, as RedisBloom does.
func cmdCFInsert(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	capacity, create, items := int64(cfDefaultCapacity), true, -1
	for i := 2; i < len(args) && items < 0; {
		switch lower(at(args[i], 0)) {
		case 'c':
			if i++; i == len(args) {
				w.WriteError(wrongArity(args[0]))
				return
			}
			var ok bool
			if capacity, ok = parseLongLong(args[i]); !ok {
				w.WriteError(errCFBadCapacity)
				return
			}
			if capacity < 2*cfDefaultBucketSize || capacity > cfMaxCapacity {
				w.WriteError(errCFInsertCapacity)
				return
			}
			i++
		case 'i':
			i++
			items = i
		case 'n':
			create = false
			i++
		default:
			w.WriteError(errUnknownArgument)
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
	nx := lower(args[0][len(args[0])-1]) == 'x'
	w.WriteArray(len(args) - items)
	for rest := args[items:]; len(rest) > 0; {
		group := rest[:min(len(rest), hashesPerRecord)]
		rest = rest[len(group):]
		var out [hashesPerRecord]int64
		err := s.countingAdds(sess, e, args[1], group, nx, out[:])
		for i := range group {
			switch {
			case err != nil:
				w.WriteError(logFailed(err))
			case nx:
				w.WriteInt64(out[i])
			default:
				w.WriteBool(out[i] == 1)
			}
		}
	}
}

// cmdCFExists is CF.EXISTS, CF.MEXISTS and CF.COUNT (CFCheck_RedisCommand):
// a key that is missing or holds another type answers 0 (false) for every
// item; CF.COUNT answers integers in both protocols.
func cmdCFExists(s *Server, _ *session, w replier, args [][]byte) {
	e := s.store.getBytes(args[1])
	if e != nil && e.kind != kindCounting {
		e = nil
	}
	count := lower(args[0][len(args[0])-1]) == 't'
	if lower(args[0][3]) == 'm' {
		w.WriteArray(len(args) - 2)
	}
	for _, item := range args[2:] {
		switch {
		case count && e == nil:
			w.WriteInt64(0)
		case count:
			w.WriteInt64(int64(e.counting.Count(item)))
		default:
			w.WriteBool(e != nil && e.counting.Test(item))
		}
	}
}

// cmdCFDel deletes one occurrence of an item: it replies 1 when the item
// tests present and the key's item count (adds minus deletes) is above 0,
// and 0 otherwise, changing nothing. So the count never goes below 0, and
// an item added n times is deleted n times, as in RedisBloom, even when its
// counters saturated at 15: those stay at 15 (a counter that reached 15 no
// longer knows how many items it counts), so such an item still tests
// present after its last delete, where RedisBloom would say absent. A key
// that is missing or of another type is "Not found", RedisBloom's text.
func cmdCFDel(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	e := s.store.getBytes(args[1])
	if e == nil || e.kind != kindCounting {
		w.WriteError(errCFNotFound)
		return
	}
	if !sess.holdOnLoop(e) {
		return
	}
	h := e.hash(args[2])
	deleted := false
	var pos uint64
	sess.lockEntry(e)
	if e.counting.CountHash(h) > 0 && e.decrementItems() {
		e.counting.RemoveHash(h) // present, so it removes
		e.deletes.Add(1)
		e.seq++
		e.markDirty()
		if s.store.log != nil {
			pos = s.store.log.appendRemove(args[1], e.seq, h)
		}
		deleted = true
	}
	sess.unlockEntry(e)
	if err := s.commit(sess, pos); err != nil {
		w.WriteError(logFailed(err))
		return
	}
	w.WriteBool(deleted)
}

// cmdCFInfo is CFInfo_RedisCommand's reply, with the counting filter's
// own numbers: its blocks are the buckets, its counters per block the
// bucket size; it does not expand and never relocates, so both are 0.
func cmdCFInfo(s *Server, _ *session, w replier, args [][]byte) {
	e := s.store.getBytes(args[1])
	switch {
	case e == nil:
		w.WriteError(errNotFound)
		return
	case e.kind != kindCounting:
		w.WriteError(wrongType)
		return
	}
	info := [...]struct {
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
	w.WriteMap(len(info))
	for _, f := range info {
		w.WriteString(f.name)
		w.WriteInt64(int64(f.value))
	}
}
