package server

import (
	"errors"
	"fmt"

	"github.com/ohbloom/ohbloom"
)

// BF.* commands: Bloom filter keys.

// bloomOptions are what BF.RESERVE and BF.INSERT create a key with.
type bloomOptions struct {
	errorRate  float64
	capacity   int64
	expansion  int64
	nonScaling bool
}

// newBloom builds a BF key's filter, refusing what ohbloom cannot do as
// asked rather than doing something else: any growth but 2, and filters
// beyond the size limit.
func (s *Server) newBloom(o bloomOptions) (*entry, error) {
	if err := o.valid(); err != nil {
		return nil, err
	}
	if !o.nonScaling && o.expansion != defaultExpansion {
		return nil, fmt.Errorf("ERR ohbloom's scalable filters grow by %d: EXPANSION %d is not supported", defaultExpansion, o.expansion)
	}
	if err := s.checkSize(uint64(o.capacity), o.errorRate, ohbloom.Size); err != nil {
		return nil, err
	}
	c := ohbloom.Config{Capacity: uint64(o.capacity), FPR: o.errorRate}
	e := &entry{capacity: uint64(o.capacity), errorRate: o.errorRate}
	var err error
	if o.nonScaling {
		e.kind = kindFixed
		e.fixed, err = ohbloom.NewAtomicWithConfig(c)
	} else {
		e.kind = kindScalable
		e.scalable, err = ohbloom.NewAtomicScalableWithConfig(c)
	}
	if err != nil {
		return nil, errors.New("ERR " + oneLine(err.Error()))
	}
	return e, nil
}

func (s *Server) checkSize(n uint64, p float64, size func(uint64, float64) (uint64, int, error)) error {
	blocks, _, err := size(n, p)
	if err != nil {
		return errors.New("ERR " + oneLine(err.Error()))
	}
	if bytes := blocks * ohbloom.BlockBytes; bytes > s.cfg.MaxFilterBytes {
		return fmt.Errorf("ERR filter of %d bytes exceeds max-filter-bytes (%d)", bytes, s.cfg.MaxFilterBytes)
	}
	return nil
}

func cmdBFReserve(s *Server, sess *session, w replier, args [][]byte) {
	if len(args) > 7 {
		w.WriteError(wrongArity(args[0]))
		return
	}
	o := bloomOptions{expansion: defaultExpansion}
	var ok bool
	if o.errorRate, ok = parseRate(args[2]); !ok {
		w.WriteError("ERR bad error rate")
		return
	}
	if o.capacity, ok = parseInt(args[3]); !ok {
		w.WriteError("ERR bad capacity")
		return
	}
	for i := 4; i < len(args); i++ {
		switch {
		case eq(args[i], "NONSCALING"):
			o.nonScaling = true
		case eq(args[i], "EXPANSION"):
			if i+1 == len(args) {
				w.WriteError("ERR no expansion")
				return
			}
			i++
			if o.expansion, ok = parseInt(args[i]); !ok {
				w.WriteError("ERR bad expansion")
				return
			}
		default:
			w.WriteError(unknownArgument(args[i]))
			return
		}
	}
	s.reserve(sess, w, args[1], false, func() (*entry, error) { return s.newBloom(o) })
}

// bloomEntry returns the BF key name, creating it with o when create is
// set; it writes the error reply and returns nil when there is none.
func (s *Server) bloomEntry(sess *session, w replier, name []byte, create bool, o bloomOptions) *entry {
	if !create {
		e := s.store.get(string(name))
		switch {
		case e == nil:
			w.WriteError(errNotFound)
			return nil
		case e.kind == kindCounting:
			w.WriteError(wrongType)
			return nil
		}
		return e
	}
	e := s.store.getBytes(name) // no copy of the key unless it is created
	if e == nil {
		if len(name) > maxKeyBytes {
			w.WriteError(errKeyTooLong)
			return nil
		}
		var err error
		var pos uint64
		e, _, pos, err = s.store.getOrCreateLogged(string(name), func() (*entry, error) { return s.newBloom(o) })
		if err != nil {
			w.WriteError(err.Error())
			return nil
		}
		noteLog(sess, pos)
	}
	if e.kind == kindCounting {
		w.WriteError(wrongType)
		return nil
	}
	return e
}

// Results of adding one item to a BF key.
const (
	addPresent int8 = iota // the filter already reported it
	addNew
	addFull      // a NONSCALING filter at its capacity
	addSizeLimit // a scalable filter at max-filter-bytes
)

// bloomAdd adds one item and returns 1 if it was new, 0 if the filter
// already reported it, or an error reply.
func (s *Server) bloomAdd(e *entry, item []byte) (int64, string) {
	switch r := s.bloomAddHash(e, e.hash(item)); r {
	case addPresent, addNew:
		return int64(r), ""
	default:
		return 0, s.addError(r)
	}
}

func (s *Server) addError(r int8) string {
	if r == addFull {
		return errNonScalingIsFull
	}
	return fmt.Sprintf("ERR filter reached max-filter-bytes (%d) and cannot grow", s.cfg.MaxFilterBytes)
}

// bloomAddHash adds the item whose hash is h. A change marks the key dirty
// before its caller logs it (persist.go says why).
func (s *Server) bloomAddHash(e *entry, h uint64) int8 {
	switch e.kind {
	case kindFixed:
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
	default:
		if e.scalable.SizeBytes() > s.cfg.MaxFilterBytes && !e.scalable.TestHash(h) {
			return addSizeLimit
		}
		if e.scalable.TestAndAddHash(h) {
			return addPresent
		}
		e.items.Add(1)
		e.markDirty()
		return addNew
	}
}

func cmdBFAdd(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	o := bloomOptions{errorRate: defaultErrorRate, capacity: defaultBFCapacity, expansion: defaultExpansion}
	e := s.bloomEntry(sess, w, args[1], true, o)
	if e == nil {
		return
	}
	multi := eq(args[0], "bf.madd")
	s.addItems(sess, e, w, args[1], args[2:], multi)
}

// addItems adds items to the BF key name, hashesPerRecord at a time: each
// group is applied, logged as one record of hashes, committed, and only
// then answered. An item found present is logged too under always: its
// bits may come from another client's add whose record is not yet
// written, and this reply must not outrun it.
func (s *Server) addItems(sess *session, e *entry, w replier, name []byte, items [][]byte, multi bool) {
	if multi {
		w.WriteArray(len(items))
	}
	log := s.store.log
	logPresent := log != nil && log.policy == fsyncAlways
	for len(items) > 0 {
		group := items[:min(len(items), hashesPerRecord)]
		items = items[len(group):]
		var results [hashesPerRecord]int8
		var hs [hashesPerRecord]uint64
		n := 0
		for i, item := range group {
			h := e.hash(item)
			results[i] = s.bloomAddHash(e, h)
			if log != nil && (results[i] == addNew || (results[i] == addPresent && logPresent)) {
				hs[n] = h
				n++
			}
		}
		var pos uint64
		if n > 0 {
			pos = log.appendHashes(recBloomAdd, name, 0, hs[:n])
		}
		err := s.commit(sess, pos)
		for _, r := range results[:len(group)] {
			switch {
			case err != nil:
				w.WriteError(logFailed(err))
			case r == addPresent || r == addNew:
				w.WriteInt64(int64(r))
			default:
				w.WriteError(s.addError(r))
			}
		}
	}
}

func cmdBFInsert(s *Server, sess *session, w replier, args [][]byte) {
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	o := bloomOptions{errorRate: defaultErrorRate, capacity: defaultBFCapacity, expansion: defaultExpansion}
	create, items := true, -1
	var ok bool
	for i := 2; i < len(args) && items < 0; i++ {
		switch {
		case eq(args[i], "ITEMS"):
			items = i + 1
		case eq(args[i], "NOCREATE"):
			create = false
		case eq(args[i], "NONSCALING"):
			o.nonScaling = true
		case eq(args[i], "CAPACITY") || eq(args[i], "ERROR") || eq(args[i], "EXPANSION"):
			if i+1 == len(args) {
				w.WriteError(wrongArity(args[0]))
				return
			}
			switch i++; {
			case eq(args[i-1], "CAPACITY"):
				if o.capacity, ok = parseInt(args[i]); !ok {
					w.WriteError("ERR bad capacity")
					return
				}
			case eq(args[i-1], "ERROR"):
				if o.errorRate, ok = parseRate(args[i]); !ok {
					w.WriteError("ERR bad error rate")
					return
				}
			default:
				if o.expansion, ok = parseInt(args[i]); !ok {
					w.WriteError("ERR bad expansion")
					return
				}
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
	if create {
		// Options are checked even when the key exists, as RedisBloom does.
		if err := o.valid(); err != nil {
			w.WriteError(err.Error())
			return
		}
	}
	e := s.bloomEntry(sess, w, args[1], create, o)
	if e == nil {
		return
	}
	s.addItems(sess, e, w, args[1], args[items:], true)
}

// valid checks the options with RedisBloom's messages, before any filter
// is built.
func (o bloomOptions) valid() error {
	switch {
	case o.errorRate <= 0 || o.errorRate >= 1:
		return errors.New("ERR (0 < error rate range < 1)")
	case o.capacity < 1:
		return errors.New("ERR (capacity should be larger than 0)")
	case o.expansion < 1:
		return errors.New("ERR expansion should be greater or equal to 1")
	}
	return nil
}

func (e *entry) bloomTest(item []byte) bool {
	if e.kind == kindFixed {
		return e.fixed.Test(item)
	}
	return e.scalable.Test(item)
}

func cmdBFExists(s *Server, _ *session, w replier, args [][]byte) {
	e := s.store.getBytes(args[1])
	if e != nil && e.kind == kindCounting {
		w.WriteError(wrongType)
		return
	}
	multi := eq(args[0], "bf.mexists")
	if multi {
		w.WriteArray(len(args) - 2)
	}
	for _, item := range args[2:] {
		if e != nil && e.bloomTest(item) {
			w.WriteInt64(1)
		} else {
			w.WriteInt64(0)
		}
	}
}

func cmdBFCard(s *Server, _ *session, w replier, args [][]byte) {
	e := s.store.getBytes(args[1])
	switch {
	case e == nil:
		w.WriteInt64(0)
	case e.kind == kindCounting:
		w.WriteError(wrongType)
	default:
		w.WriteInt64(int64(e.items.Load()))
	}
}

func cmdBFInfo(s *Server, _ *session, w replier, args [][]byte) {
	if len(args) > 3 {
		w.WriteError(wrongArity(args[0]))
		return
	}
	e := s.bloomEntry(nil, w, args[1], false, bloomOptions{})
	if e == nil {
		return
	}
	fields := []struct {
		name, arg string
		value     func()
	}{
		{"Capacity", "CAPACITY", func() { w.WriteInt64(int64(e.capacityNow())) }},
		{"Size", "SIZE", func() { w.WriteInt64(int64(e.sizeBytes())) }},
		{"Number of filters", "FILTERS", func() { w.WriteInt64(int64(e.stages())) }},
		{"Number of items inserted", "ITEMS", func() { w.WriteInt64(int64(e.items.Load())) }},
		{"Expansion rate", "EXPANSION", func() {
			if e.kind == kindFixed {
				w.WriteNull()
			} else {
				w.WriteInt64(defaultExpansion)
			}
		}},
	}
	if len(args) == 3 {
		for _, f := range fields {
			if eq(args[2], f.arg) {
				w.WriteArray(1)
				f.value()
				return
			}
		}
		w.WriteError("ERR Invalid information value")
		return
	}
	w.WriteArray(2 * len(fields))
	for _, f := range fields {
		w.WriteString(f.name)
		f.value()
	}
}
