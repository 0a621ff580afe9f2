package server

import (
	"errors"
	"fmt"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/redisbloom"
)

// BF.* commands, answering as RedisBloom's rebloom.c answers: the same
// argument parsing, in the same order, the same error texts byte for byte
// (some with "ERR ", some without, as there), integers in RESP2 and
// booleans in RESP3 where it replies with RedisModule_ReplyWithBool, maps
// where it replies with RedisModule_ReplyWithMapOrArray.
//
// A BF key holds one of three filters: a scalable ohbloom filter
// (BF.RESERVE, BF.ADD and BF.INSERT make them), a fixed one (NONSCALING),
// or RedisBloom's own chain, loaded from its dump (kindRedisBloom). Every
// command answers for all three alike.

// RedisBloom's bounds and defaults (src/config.c: bf-initial-size,
// bf-expansion-factor; src/config.h: BF_ERROR_RATE_CAP).
const (
	maxBFCapacity = 1 << 30
	maxExpansion  = 32768
	// errorRateCap: a larger error rate is taken as this, silently
	// (rebloom.c's BFReserve_RedisCommand only logs a warning).
	errorRateCap = 0.25
)

// RedisBloom's replies, byte for byte.
const (
	errBadErrorRate       = "ERR bad error rate"
	errErrorRateRange     = "ERR error rate must be in the range (0.000000, 1.000000)"
	errBadCapacity        = "ERR bad capacity"
	errCapacityRange      = "ERR capacity must be in the range [1, 1073741824]"
	errNoExpansion        = "ERR no expansion"
	errBadExpansion       = "ERR bad expansion"
	errExpansionRange     = "ERR expansion must be in the range [0, 32768]"
	errCannotExpand       = "Nonscaling filters cannot expand"
	errInsertBadErrorRate = "Bad error rate"
	errInsertBadCapacity  = "Bad capacity"
	errInsertBadExpansion = "Bad expansion"
	errUnknownArgument    = "Unknown argument received"
	errInvalidInfo        = "Invalid information value"
	errCouldNotCreate     = "ERR could not create filter"
	errNoMemoryToCreate   = "ERR Insufficient memory to create filter"
	errProblemInserting   = "ERR problem inserting into filter"
)

// bloomOptions are what BF.RESERVE and BF.INSERT create a key with.
type bloomOptions struct {
	errorRate  float64
	capacity   int64
	expansion  int64
	nonScaling bool
}

// bloomDefaults are the options of a key that BF.ADD, BF.MADD or BF.INSERT
// creates (bf-error-rate, bf-initial-size, bf-expansion-factor).
var bloomDefaults = bloomOptions{errorRate: defaultErrorRate, capacity: defaultBFCapacity, expansion: defaultExpansion}

// newBloom builds a BF key's filter: a fixed filter at the whole error
// rate for NONSCALING (as RedisBloom sizes its one filter), else a
// scalable one growing by the expansion, whose stages' sizes
// docs/sizing.md explains. A filter larger than max-filter-bytes is
// refused before anything is allocated, and a scalable one stops growing
// at it.
func (s *Server) newBloom(o bloomOptions) (*entry, error) {
	c := ohbloom.Config{Capacity: uint64(o.capacity), FPR: o.errorRate}
	var size uint64
	var err error
	if o.nonScaling {
		var blocks uint64
		blocks, _, err = ohbloom.Geometry(c.Capacity, c.FPR)
		size = blocks * ohbloom.BlockBytes
	} else {
		c.Growth = uint64(o.expansion)
		size, err = ohbloom.ScalableSizeBytes(c)
	}
	if err != nil {
		// An error rate so small that no filter of ohbloom's reaches it:
		// RedisBloom's reply to a filter it cannot size.
		return nil, errors.New(errCouldNotCreate)
	}
	if max := s.cfg.MaxFilterBytes; size > max {
		return nil, fmt.Errorf("ERR filter of %d bytes exceeds max-filter-bytes (%d)", size, max)
	}
	c.MaxBytes = s.cfg.MaxFilterBytes
	e := &entry{capacity: c.Capacity, errorRate: c.FPR}
	if o.nonScaling {
		e.kind = kindFixed
		e.fixed, err = ohbloom.NewAtomicWithConfig(c)
	} else {
		e.kind = kindScalable
		e.scalable, err = ohbloom.NewAtomicScalableWithConfig(c)
	}
	switch {
	case errors.Is(err, ohbloom.ErrTooLarge):
		return nil, errors.New(errNoMemoryToCreate)
	case err != nil:
		return nil, errors.New(errCouldNotCreate)
	}
	return e, nil
}

// cmdBFReserve is BFReserve_RedisCommand: the error rate, the capacity,
// then NONSCALING and EXPANSION found anywhere among the arguments (the
// key and the numbers included: a key named "nonscaling" makes a filter
// that does not grow, there and here), unknown arguments ignored, and the
// key looked at last.
func cmdBFReserve(s *Server, sess *session, w replier, args [][]byte) {
	if len(args) > 7 {
		w.WriteError(wrongArity(args[0]))
		return
	}
	o := bloomOptions{expansion: defaultExpansion}
	var ok bool
	if o.errorRate, ok = parseDouble(args[2]); !ok {
		w.WriteError(errBadErrorRate)
		return
	}
	if !(o.errorRate > 0 && o.errorRate < 1) {
		w.WriteError(errErrorRateRange)
		return
	}
	o.errorRate = min(o.errorRate, errorRateCap)
	if o.capacity, ok = parseLongLong(args[3]); !ok {
		w.WriteError(errBadCapacity)
		return
	}
	if o.capacity < 1 || o.capacity > maxBFCapacity {
		w.WriteError(errCapacityRange)
		return
	}
	o.nonScaling = argIndex(args, "NONSCALING") != -1
	at := argIndex(args, "EXPANSION")
	if at+1 == len(args) {
		w.WriteError(errNoExpansion)
		return
	}
	if at != -1 {
		if o.expansion, ok = parseLongLong(args[at+1]); !ok {
			w.WriteError(errBadExpansion)
			return
		}
		// EXPANSION 0 is NONSCALING; another with NONSCALING is refused,
		// and that before the range is checked.
		if o.expansion == 0 {
			o.nonScaling = true
		} else if o.nonScaling {
			w.WriteError(errCannotExpand)
			return
		}
		if o.expansion < 0 || o.expansion > maxExpansion {
			w.WriteError(errExpansionRange)
			return
		}
	}
	s.reserve(sess, w, args[1], false, func() (*entry, error) { return s.newBloom(o) })
}

// cmdBFInsert is BFInsert_RedisCommand. It reads its options by their
// first letters, as RedisBloom does: any word starting with I starts the
// items, E is ERROR when its second letter is R and EXPANSION otherwise,
// C is CAPACITY, N is NOCREATE when its third letter is C and NONSCALING
// otherwise. So "BF.INSERT k N ITEMS a" makes a NONSCALING filter there
// and here. EXPANSION 0 is NONSCALING; EXPANSION with NONSCALING is not
// refused (unlike BF.RESERVE): the filter does not grow.
func cmdBFInsert(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	o, create, items := bloomDefaults, true, -1
	for i := 2; i < len(args) && items < 0; {
		arg := args[i]
		switch lower(at(arg, 0)) {
		case 'i':
			i++
			items = i
		case 'e':
			if i++; i == len(args) {
				w.WriteError(wrongArity(args[0]))
				return
			}
			var ok bool
			if lower(at(arg, 1)) == 'r' {
				o.errorRate, ok = parseDouble(args[i])
				if !ok || !(o.errorRate > 0 && o.errorRate < 1) {
					w.WriteError(errInsertBadErrorRate)
					return
				}
				o.errorRate = min(o.errorRate, errorRateCap)
			} else {
				o.expansion, ok = parseLongLong(args[i])
				if !ok || o.expansion < 0 || o.expansion > maxExpansion {
					w.WriteError(errInsertBadExpansion)
					return
				}
			}
			i++
		case 'c':
			if i++; i == len(args) {
				w.WriteError(wrongArity(args[0]))
				return
			}
			var ok bool
			if o.capacity, ok = parseLongLong(args[i]); !ok || o.capacity < 1 || o.capacity > maxBFCapacity {
				w.WriteError(errInsertBadCapacity)
				return
			}
			i++
		case 'n':
			if lower(at(arg, 2)) == 'c' {
				create = false
			} else {
				o.nonScaling = true
			}
			i++
		default:
			w.WriteError(errUnknownArgument)
			return
		}
	}
	if o.expansion == 0 {
		o.nonScaling = true
	}
	if items < 0 || items == len(args) {
		w.WriteError(wrongArity(args[0]))
		return
	}
	e := s.bloomEntry(sess, w, args[1], create, o)
	if e == nil {
		return
	}
	s.addItems(sess, e, w, args[1], args[items:], true)
}

// cmdBFAdd is BF.ADD and BF.MADD (BFAdd_RedisCommand), told apart as
// RedisBloom tells them: by the fourth letter of the command's name.
func cmdBFAdd(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	e := s.bloomEntry(sess, w, args[1], true, bloomDefaults)
	if e == nil {
		return
	}
	s.addItems(sess, e, w, args[1], args[2:], lower(args[0][3]) == 'm')
}

// bloomEntry returns the BF key name, creating it with o when create is
// set; it writes RedisBloom's error reply and returns nil when there is
// none or it holds another type.
func (s *Server) bloomEntry(sess *session, w replier, name []byte, create bool, o bloomOptions) *entry {
	e := s.store.getBytes(sess.db, name) // no copy of the key unless it is created
	switch {
	case e == nil && !create:
		w.WriteError(errNotFound)
		return nil
	case e == nil:
		if len(name) > maxKeyBytes {
			w.WriteError(errKeyTooLong)
			return nil
		}
		var err error
		var pos uint64
		e, _, pos, err = s.store.getOrCreateLogged(sess.db, string(name), func() (*entry, error) { return s.newBloom(o) })
		if err != nil {
			w.WriteError(err.Error())
			return nil
		}
		noteLog(sess, pos)
	}
	if e.kind.isCF() {
		w.WriteError(wrongType)
		return nil
	}
	if e.kind == kindRedisBloom && !sess.holdOnLoop(e) {
		return nil
	}
	return e
}

// What adding one item to a BF key did.
const (
	addPresent int8 = iota // the filter already reported it: 0
	addNew                 // 1
	// addFull: a filter that does not grow holds its capacity
	// (SBChain_Add's -2). It ends a BF.MADD or BF.INSERT there: the
	// items after it are neither tried nor answered.
	addFull
	// addSizeLimit: the filter would grow past max-filter-bytes.
	addSizeLimit
	// addCannotGrow: its next stage cannot be built at all
	// (SBChain_Add's -1); the items after it are still tried.
	addCannotGrow
	// addLogFailed: the append-only log could not take the change.
	addLogFailed
)

// bloomAddHash adds the item whose hash is h to an ohbloom key. A change
// marks the key dirty before its caller logs it (persist.go says why).
func (s *Server) bloomAddHash(e *entry, h uint64) int8 {
	if e.kind == kindFixed {
		if e.fixed.TestHash(h) {
			return addPresent
		}
		// Reserve a place below the capacity before adding, so that
		// concurrent clients cannot overfill the filter between them.
		for {
			n := e.items.Load()
			if n >= e.capacity {
				return addFull
			}
			if e.items.CompareAndSwap(n, n+1) {
				break
			}
		}
		if e.fixed.TestAndAddHash(h) {
			e.items.Add(^uint64(0)) // another client added it first
			return addPresent
		}
		e.markDirty()
		return addNew
	}
	added, err := e.scalable.TryAddHash(h)
	switch {
	case err == nil && added:
		e.markDirty()
		return addNew
	case err == nil:
		return addPresent
	case errors.Is(err, ohbloom.ErrTooLarge) || errors.Is(err, ohbloom.ErrInvalidConfig):
		return addCannotGrow // the next stage cannot be built at all
	default:
		return addSizeLimit // it would take the filter past MaxBytes
	}
}

// bloomAdd adds one item to an ohbloom BF key, unlogged (for tests and
// tools that fill a key).
func (s *Server) bloomAdd(e *entry, item []byte) int8 { return s.bloomAddHash(e, e.hash(item)) }

// rbAddResult classifies a RedisBloom chain's add.
func rbAddResult(added bool, err error) int8 {
	switch {
	case err == nil && added:
		return addNew
	case err == nil:
		return addPresent
	case errors.Is(err, redisbloom.ErrFull):
		return addFull
	case errors.Is(err, ohbloom.ErrTooLarge):
		return addSizeLimit
	default:
		return addCannotGrow
	}
}

// addReply writes the reply of one add.
func (s *Server) addReply(w replier, r int8, logErr error) {
	switch r {
	case addPresent, addNew:
		w.WriteBool(r == addNew)
	case addFull:
		w.WriteError(errNonScalingIsFull)
	case addSizeLimit:
		w.WriteError(fmt.Sprintf("ERR filter reached max-filter-bytes (%d) and cannot grow", s.cfg.MaxFilterBytes))
	case addCannotGrow:
		w.WriteError(errProblemInserting)
	default:
		w.WriteError(logFailed(logErr))
	}
}

// stops reports whether a full filter ends a multi-add: one that does not
// grow.
func (e *entry) stops() bool {
	return e.kind == kindFixed || e.kind == kindRedisBloom && e.rb.Options()&redisbloom.NoScaling != 0
}

// addItems adds items to the BF key name, hashesPerRecord at a time: each
// group is applied, logged as one record, committed, and only then
// answered. With multi the replies are an array, which ends at the first
// item refused because the filter is full, as bfInsertCommon's does (its
// length set afterwards, RedisModule_ReplySetArrayLength); for a filter
// that grows the length is known at once and the replies stream.
func (s *Server) addItems(sess *session, e *entry, w replier, name []byte, items [][]byte, multi bool) {
	if !e.ordered() {
		// A save writing the key's record holds e.adding; a loop does
		// not wait for it, and runs the command again off the loop.
		if sess.holdsShard && !e.adding.TryRLock() {
			sess.wouldBlock = true
			return
		} else if !sess.holdsShard {
			e.adding.RLock()
		}
		defer e.adding.RUnlock()
	}
	stops := e.stops()
	if multi && !stops {
		w.WriteArray(len(items))
	}
	var stack [hashesPerRecord]int8
	var held []int8 // the replies of a multi-add that may stop, until its length is known
	var logErr error
	for len(items) > 0 {
		group := items[:min(len(items), hashesPerRecord)]
		items = items[len(group):]
		results := stack[:len(group)]
		n, pos := s.addGroup(sess, e, name, group, results)
		results = results[:n]
		if err := s.commit(sess, pos); err != nil {
			logErr = err
			for i := range results {
				results[i] = addLogFailed
			}
		}
		stopped := n < len(group) || n > 0 && results[n-1] == addFull
		switch {
		case !multi:
			s.addReply(w, results[0], logErr)
			return
		case !stops:
			for _, r := range results {
				s.addReply(w, r, logErr)
			}
			continue
		case held == nil && (stopped || len(items) == 0):
			// The whole reply is in this group: no copy.
			w.WriteArray(len(results))
			for _, r := range results {
				s.addReply(w, r, logErr)
			}
			return
		}
		held = append(held, results...)
		if stopped {
			break
		}
	}
	if stops && multi {
		w.WriteArray(len(held))
		for _, r := range held {
			s.addReply(w, r, logErr)
		}
	}
}

// addGroup adds at most hashesPerRecord items, sets their results, logs
// the changes as one record and returns how many it tried (fewer when a
// full filter ended them) and the log position the replies wait for.
func (s *Server) addGroup(sess *session, e *entry, name []byte, group [][]byte, results []int8) (int, uint64) {
	log := s.store.log
	if e.kind == kindRedisBloom {
		return s.rbAddGroup(sess, e, name, group, results)
	}
	var hs [hashesPerRecord]uint64
	for i, item := range group {
		hs[i] = e.hash(item)
	}
	if log == nil {
		for i := range group {
			results[i] = s.bloomAddHash(e, hs[i])
			if results[i] == addFull {
				return i + 1, 0
			}
		}
		return len(group), 0
	}
	// The adds and their record are one step (entry.order). An item
	// found present is not logged: the adds that set its bits are in the
	// log before it, and its reply waits for the log's tail.
	e.order.Lock()
	defer e.order.Unlock()
	n, tried := 0, len(group)
	for i := range group {
		r := s.bloomAddHash(e, hs[i])
		results[i] = r
		if r == addNew {
			hs[n] = hs[i]
			n++
		}
		if r == addFull {
			tried = i + 1
			break
		}
	}
	if n == 0 {
		return tried, log.tail.Load()
	}
	return tried, s.store.logChange(sess.db, name, e, func() uint64 {
		return log.appendHashes(recBloomAdd, sess.db, name, 0, hs[:n])
	})
}

// rbAddGroup is addGroup for a RedisBloom key: the adds, their numbers and
// their record are one step under the key's lock (entry.mu), so that a
// replay applies them in the order they were applied, which decides its
// growth and counts. An add that changed nothing is not logged; what it
// saw may be another client's add, which is in the log before the lock
// was released, so the reply waits for the log's tail.
func (s *Server) rbAddGroup(sess *session, e *entry, name []byte, group [][]byte, results []int8) (int, uint64) {
	log := s.store.log
	if log == nil {
		for i, item := range group {
			results[i] = rbAddResult(e.rb.Add(item))
			if results[i] == addNew {
				e.markDirty()
			}
			if results[i] == addFull {
				return i + 1, 0
			}
		}
		return len(group), 0
	}
	var pairs [hashesPerRecord][2]uint64
	n, tried := 0, len(group)
	sess.lockEntry(e)
	first := e.seq + 1
	for i, item := range group {
		a, b := e.rb.Hash(item)
		r := rbAddResult(e.rb.AddHash(a, b))
		results[i] = r
		if r == addNew {
			pairs[n] = [2]uint64{a, b}
			n++
		}
		if r == addFull {
			tried = i + 1
			break
		}
	}
	var pos uint64
	if n > 0 {
		e.seq += uint64(n)
		e.markDirty()
		pos = s.store.logChange(sess.db, name, e, func() uint64 {
			return log.appendRBAdds(sess.db, name, first, pairs[:n])
		})
	} else {
		pos = log.tail.Load()
	}
	sess.unlockEntry(e)
	return tried, pos
}

// bloomTest is BF.EXISTS of one item.
func (e *entry) bloomTest(item []byte) bool {
	switch e.kind {
	case kindFixed:
		return e.fixed.Test(item)
	case kindScalable:
		return e.scalable.Test(item)
	default:
		return e.rb.Test(item)
	}
}

// cmdBFExists is BF.EXISTS and BF.MEXISTS (BFCheck_RedisCommand): a key
// that is missing, or holds another type, answers 0 for every item; there
// is no WRONGTYPE here, as in RedisBloom.
func cmdBFExists(s *Server, sess *session, w replier, args [][]byte) {
	e := s.store.getBytes(sess.db, args[1])
	if e != nil && e.kind.isCF() {
		e = nil
	}
	if lower(args[0][3]) == 'm' {
		w.WriteArray(len(args) - 2)
	}
	for _, item := range args[2:] {
		w.WriteBool(e != nil && e.bloomTest(item))
	}
}

func cmdBFCard(s *Server, sess *session, w replier, args [][]byte) {
	e := s.store.getBytes(sess.db, args[1])
	switch {
	case e == nil:
		w.WriteInt64(0)
	case e.kind.isCF():
		w.WriteError(wrongType)
	default:
		w.WriteInt64(int64(e.card()))
	}
}

// bloomInfoFields are BF.INFO's fields, in its order, with the argument
// that asks for each alone.
var bloomInfoFields = [...]struct{ name, arg string }{
	{"Capacity", "capacity"},
	{"Size", "size"},
	{"Number of filters", "filters"},
	{"Number of items inserted", "items"},
	{"Expansion rate", "expansion"},
}

func (in bloomInfo) write(w replier, field int) {
	switch field {
	case 0:
		w.WriteInt64(int64(in.capacity))
	case 1:
		w.WriteInt64(int64(in.size))
	case 2:
		w.WriteInt64(int64(in.filters))
	case 3:
		w.WriteInt64(int64(in.items))
	default:
		if in.expansion == 0 {
			w.WriteNull() // a filter that does not grow
		} else {
			w.WriteInt64(int64(in.expansion))
		}
	}
}

// cmdBFInfo is BFInfo_RedisCommand: every field (a map in RESP3, pairs in
// RESP2), or one, named in any case: in RESP3 a map of that one field, in
// RESP2 an array of its value alone. The key is looked at before the
// field's name.
func cmdBFInfo(s *Server, sess *session, w replier, args [][]byte) {
	if len(args) > 3 {
		w.WriteError(wrongArity(args[0]))
		return
	}
	e := s.store.getBytes(sess.db, args[1])
	switch {
	case e == nil:
		w.WriteError(errNotFound)
		return
	case e.kind.isCF():
		w.WriteError(wrongType)
		return
	}
	in := e.bloomInfo()
	if len(args) == 3 {
		for i, f := range bloomInfoFields {
			if len(args[2]) == len(f.arg) && eq(args[2], f.arg) {
				if w.Proto() == 3 {
					w.WriteMap(1)
					w.WriteString(f.name)
				} else {
					w.WriteArray(1)
				}
				in.write(w, i)
				return
			}
		}
		w.WriteError(errInvalidInfo)
		return
	}
	w.WriteMap(len(bloomInfoFields))
	for i, f := range bloomInfoFields {
		w.WriteString(f.name)
		in.write(w, i)
	}
}
