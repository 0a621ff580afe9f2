package server

import "github.com/ohbloom/ohbloom/redisbloom"

// Legacy CF keys: before CF keys were cuckoo filters, ohbloom kept them as
// counting filters (kindCounting), and data directories and dumps written
// then hold such keys; `ohbloom load` of a CountingFilter file makes one
// too. A counting filter cannot be turned into the cuckoo filter its items
// would have made (it does not keep the items), so such a key is kept as
// it is and keeps answering as it did: adds and deletes change its
// counters (which saturate at 15), it never fills up or grows, and
// CF.SCANDUMP gives ohbloom's format. A start that finds such keys says so
// once in the log.

// countingAdds adds items (each only if absent, with nx) to the legacy key
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
			pos = s.store.logChange(sess.db, name, e, func() uint64 {
				return log.appendHashes(recCountingAdd, sess.db, name, first, hs[:n])
			})
		}
	} else if log != nil {
		pos = log.tail.Load()
	}
	sess.unlockEntry(e)
	return s.commit(sess, pos)
}

// legacyAdd is CF.ADD, CF.ADDNX, CF.INSERT and CF.INSERTNX of a legacy key.
func (s *Server) legacyAdd(sess *session, w replier, e *entry, name []byte, items [][]byte, nx, multi bool) {
	if multi {
		w.WriteArray(len(items))
	}
	for rest := items; len(rest) > 0; {
		group := rest[:min(len(rest), hashesPerRecord)]
		rest = rest[len(group):]
		var out [hashesPerRecord]int64
		err := s.countingAdds(sess, e, name, group, nx, out[:])
		for i := range group {
			switch {
			case err != nil:
				w.WriteError(logFailed(err))
			case nx && multi:
				w.WriteInt64(out[i])
			default:
				w.WriteBool(out[i] == 1)
			}
		}
	}
}

// legacyCheck is CF.EXISTS or CF.COUNT of one item of a legacy key.
func legacyCheck(w replier, e *entry, item []byte, count bool) {
	if count {
		w.WriteInt64(int64(e.counting.Count(item)))
	} else {
		w.WriteBool(e.counting.Test(item))
	}
}

// legacyDel deletes one occurrence of an item from a legacy key: 1 when
// the item tests present and the key's item count (adds minus deletes) is
// above 0, and 0 otherwise, changing nothing. Counters that saturated at
// 15 stay there.
func (s *Server) legacyDel(sess *session, w replier, e *entry, name, item []byte) {
	h := e.hash(item)
	deleted := false
	var pos uint64
	sess.lockEntry(e)
	if e.counting.CountHash(h) > 0 && e.decrementItems() {
		e.counting.RemoveHash(h) // present, so it removes
		e.deletes.Add(1)
		e.seq++
		e.markDirty()
		if s.store.log != nil {
			pos = s.store.logChange(sess.db, name, e, func() uint64 {
				return s.store.log.appendRemove(sess.db, name, e.seq, h)
			})
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

// legacyInfo is CF.INFO of a legacy key, with the counting filter's own
// numbers: its blocks are the buckets, its counters per block the bucket
// size; it does not expand and never relocates, so both are 0.
func legacyInfo(e *entry) redisbloom.CuckooInfo {
	return redisbloom.CuckooInfo{
		Size:       e.sizeBytes(),
		Buckets:    e.counting.Blocks(),
		Filters:    1,
		Items:      e.items.Load(),
		Deleted:    e.deletes.Load(),
		BucketSize: e.counting.Counters() / e.counting.Blocks(),
	}
}

// noteLegacyCF says once, at start, that the data directory holds legacy
// CF keys, and names a few.
func (s *store) noteLegacyCF() {
	var names []string
	n := 0
	for _, d := range s.dbs {
		for name, e := range d.keys {
			if e.kind == kindCounting {
				if n++; len(names) < 5 {
					names = append(names, name)
				}
			}
		}
	}
	if n > 0 {
		s.logger.Warn("legacy CF keys: these are counting filters written by an older ohbloom, kept as they are (a counting filter cannot be converted exactly into a cuckoo filter); they answer CF.* as before, but differ from RedisBloom (docs/server.md); re-create them (CF.RESERVE and add the items again) to get RedisBloom's cuckoo filter",
			"keys", n, "some", names)
	}
}
