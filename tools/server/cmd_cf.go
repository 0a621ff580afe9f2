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

func cmdCFReserve(s *Server, _ *session, w replier, args [][]byte) {
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
	s.reserve(w, args[1], true, func() (*entry, error) { return s.newCounting(capacity) })
}

// reserve creates the key with build and answers BF.RESERVE or CF.RESERVE:
// OK, or RedisBloom's error for a key that exists, of either type.
func (s *Server) reserve(w replier, name []byte, counting bool, build func() (*entry, error)) {
	if len(name) > maxKeyBytes {
		w.WriteError(errKeyTooLong)
		return
	}
	e, created, err := s.store.getOrCreate(string(name), build)
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

func (s *Server) countingEntry(w replier, name []byte, create bool, capacity int64) *entry {
	e := s.store.getBytes(name)
	if e == nil && create {
		if len(name) > maxKeyBytes {
			w.WriteError(errKeyTooLong)
			return nil
		}
		var err error
		e, _, err = s.store.getOrCreate(string(name), func() (*entry, error) { return s.newCounting(capacity) })
		if err != nil {
			w.WriteError(err.Error())
			return nil
		}
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

// countingAdd adds item (only if absent with nx) and returns 1 if it was
// added.
func countingAdd(e *entry, item []byte, nx bool) int64 {
	if nx && e.counting.Test(item) {
		return 0
	}
	e.counting.Add(item)
	e.items.Add(1)
	e.markDirty()
	return 1
}

func cmdCFAdd(s *Server, _ *session, w replier, args [][]byte) {
	e := s.countingEntry(w, args[1], true, defaultCFCapacity)
	if e == nil {
		return
	}
	w.WriteInt64(countingAdd(e, args[2], eq(args[0], "cf.addnx")))
}

func cmdCFInsert(s *Server, _ *session, w replier, args [][]byte) {
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
	e := s.countingEntry(w, args[1], create, capacity)
	if e == nil {
		return
	}
	nx := eq(args[0], "cf.insertnx")
	w.WriteArray(len(args) - items)
	for _, item := range args[items:] {
		w.WriteInt64(countingAdd(e, item, nx))
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

func cmdCFDel(s *Server, _ *session, w replier, args [][]byte) {
	e := s.countingEntry(w, args[1], false, 0)
	if e == nil {
		return
	}
	if err := e.counting.Remove(args[2]); err != nil {
		w.WriteInt64(0)
		return
	}
	e.items.Add(^uint64(0))
	e.deletes.Add(1)
	e.markDirty()
	w.WriteInt64(1)
}

func cmdCFInfo(s *Server, _ *session, w replier, args [][]byte) {
	e := s.countingEntry(w, args[1], false, 0)
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
