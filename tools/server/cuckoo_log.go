package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/ohbloom/ohbloom/redisbloom"
	"github.com/zeebo/xxh3"
)

// The persistence of cuckoo keys (kindCuckoo): their records in the
// append-only log and their filter in a key record.
//
// A cuckoo key's changes are not idempotent (an add stores one more
// fingerprint, a delete removes one, either may move others, grow or
// compact the filter), so they are numbered as a RedisBloom key's are
// (store.go's entry.mu): each change takes the key's next seq and its
// record under the key's lock, and replay applies a record only when its
// number is above the snapshot's. Only changes are logged: an add that
// found no room, a CF.ADDNX of an item present and a delete of an item
// absent change nothing. Replay repeats each change exactly, since the
// filter is deterministic: the same adds in the same order give the same
// bytes, growth and counts.
//
// The records (aof.go's list, little-endian):
//
//	12 cuckoo-create   the key's header chunk, as CF.SCANDUMP iterator 0
//	                   gives it (38 bytes; cuckooHeader): the key that
//	                   CF.RESERVE, an add or a CF.LOADCHUNK header made,
//	                   its slots empty
//	13 cuckoo-add      seq u64, one or more hashes u64 (CuckooHash of each
//	                   item stored), numbered from seq
//	14 cuckoo-delete   seq u64, hash u64: a delete that removed one
//	15 cuckoo-compact  seq u64: CF.COMPACT
//	16 cuckoo-chunk    seq u64, iterator u64, data: a CF.LOADCHUNK data
//	                   chunk, or a piece of one (at most rbChunkPiece
//	                   bytes), placed as its iterator says
const (
	recCuckooCreate  = 12
	recCuckooAdd     = 13
	recCuckooDelete  = 14
	recCuckooCompact = 15
	recCuckooChunk   = 16
)

// appendCuckooHeader appends the header chunk of a filter that in
// describes (redisbloom's CuckooHeaderSize layout): CF.SCANDUMP's first
// chunk, which it gives only for a filter with items.
func appendCuckooHeader(dst []byte, in redisbloom.CuckooInfo) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint64(dst, in.Items)
	dst = le.AppendUint64(dst, in.Buckets)
	dst = le.AppendUint64(dst, in.Deleted)
	dst = le.AppendUint64(dst, in.Filters)
	dst = le.AppendUint16(dst, uint16(in.BucketSize))
	dst = le.AppendUint16(dst, uint16(in.MaxIterations))
	return le.AppendUint16(dst, uint16(in.Expansion))
}

// appendCuckoo logs a numbered change of a cuckoo key: adds of hs
// (recCuckooAdd), the delete of hs[0] (recCuckooDelete) or a compaction
// (recCuckooCompact, hs empty).
func (l *appendLog) appendCuckoo(kind byte, db int, key []byte, seq uint64, hs []uint64) uint64 {
	if changeRecordHook != nil {
		changeRecordHook()
	}
	le := binary.LittleEndian
	l.mu.Lock()
	start := begin(l, kind, db, key)
	l.buf = le.AppendUint64(l.buf, seq)
	for _, h := range hs {
		l.buf = le.AppendUint64(l.buf, h)
	}
	pos := l.seal(start)
	l.mu.Unlock()
	return pos
}

// applyCuckoo replays one cuckoo record of key, whose entry is e (nil when
// missing). It reports false for a kind that is not a cuckoo record.
func (rp *replayer) applyCuckoo(keys map[string]*entry, kind byte, key, rest []byte, e *entry) (bool, error) {
	le := binary.LittleEndian
	switch kind {
	case recCuckooCreate:
		if len(rest) != redisbloom.CuckooHeaderSize {
			return true, fmt.Errorf("%w: cuckoo create record of %d bytes", errCorrupt, len(rest))
		}
		// Its slots are allocated as chunks and adds reach them.
		f, err := redisbloom.NewAtomicCuckooFromHeader(rest, rp.maxFilterBytes)
		if err != nil {
			return true, fmt.Errorf("create record of key %q: %w; start with a larger --max-filter-bytes if it was lowered", clip(key), err)
		}
		ne := &entry{kind: kindCuckoo, cf: f}
		ne.dirty.Store(true)
		keys[string(key)] = ne
		return true, nil
	case recCuckooAdd, recCuckooDelete, recCuckooCompact, recCuckooChunk:
	default:
		return false, nil
	}
	if len(rest) < 8 {
		return true, fmt.Errorf("%w: cuckoo record of %d bytes", errCorrupt, len(rest))
	}
	seq, rest := le.Uint64(rest), rest[8:]
	if kind == recCuckooAdd && (len(rest) == 0 || len(rest)%8 != 0 || len(rest) > 8*hashesPerRecord) ||
		kind == recCuckooDelete && len(rest) != 8 || kind == recCuckooCompact && len(rest) != 0 ||
		kind == recCuckooChunk && (len(rest) < 9 || len(rest) > 8+rbChunkPiece) {
		return true, fmt.Errorf("%w: cuckoo record of %d bytes", errCorrupt, len(rest)+8)
	}
	if e == nil || e.kind != kindCuckoo {
		return true, nil // a gone incarnation of the key (persist.go)
	}
	switch kind {
	case recCuckooAdd:
		for ; len(rest) > 0; rest, seq = rest[8:], seq+1 {
			if seq <= e.seq {
				continue // the snapshot holds it
			}
			if err := e.cf.AddHash(le.Uint64(rest)); err != nil {
				return true, fmt.Errorf("add record of key %q: %w; start with a larger --max-filter-bytes if it was lowered", clip(key), err)
			}
			e.seq = seq
		}
	default:
		if seq <= e.seq {
			return true, nil
		}
		switch kind {
		case recCuckooDelete:
			// It removed a copy when logged, so it does again, but for the
			// one race persist.go's replay rule leaves open (a CF.DEL of
			// a key that a DEL and a re-creation replace meanwhile): then,
			// as a live delete of an absent item, it changes nothing.
			e.cf.DeleteHash(le.Uint64(rest))
		case recCuckooCompact:
			e.cf.Compact()
		default:
			if err := e.cf.LoadChunk(int64(le.Uint64(rest)), rest[8:]); err != nil {
				return true, fmt.Errorf("%w: chunk record of key %q: %w", errCorrupt, clip(key), err)
			}
		}
		e.seq = seq
	}
	e.dirty.Store(true)
	return true, nil
}

// A cuckoo key's filter in its record: the MBbloomCF RDB value
// (redisbloom.CuckooFilter.MarshalRDB, RedisBloom's own persistence of
// it, encoding version 4) behind its length as a little-endian uint64,
// then the value's XXH3_64bits.
//
// maxCuckooRDB bounds the length a record may claim; the value is read as
// its bytes arrive, never allocated from the claim.
const maxCuckooRDB = 1 << 40

func writeCuckoo(w io.Writer, f *redisbloom.AtomicCuckooFilter) (int64, error) {
	v := f.MarshalRDB()
	out := binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(len(v)))
	n, err := w.Write(out)
	if err != nil {
		return int64(n), err
	}
	m, err := w.Write(v)
	if err != nil {
		return int64(n + m), err
	}
	k, err := w.Write(binary.LittleEndian.AppendUint64(nil, hashLarge(v)))
	return int64(n + m + k), err
}

// hashLarge is xxh3.Hash(b) through the streaming hasher, whose loop the
// scheduler may stop between blocks: xxh3.Hash of a large b is one call
// into assembly that it cannot (see appendChunked).
func hashLarge(b []byte) uint64 {
	h := xxh3.New()
	h.Write(b)
	return h.Sum64()
}

// readChunked reads n bytes of r, copyChunk at a time with a yield between
// (see appendChunked): into a buffer made at once if sized (r holds them),
// else one that grows as they arrive. bytes.Buffer's Grow clears its room
// in one call, and its ReadFrom copies a bytes.Reader's whole rest in
// another: for a 256 MB cuckoo filter, 0.4 to 0.9 s of first touches of
// memory in which no garbage collection could end (a runtime trace of
// TestAuthenticatedAttacks, COPY of a large CF key).
func readChunked(r io.Reader, n int64, sized bool) ([]byte, error) {
	var b []byte
	if sized {
		b = make([]byte, 0, n)
	}
	for int64(len(b)) < n {
		m := int(min(n-int64(len(b)), copyChunk))
		if !sized {
			// Room for no more than has arrived: a record that claims a
			// large value and ends makes the reader allocate little.
			m = min(m, max(len(b), 32<<10))
		}
		b = growChunked(b, m)
		k, err := io.ReadFull(r, b[len(b):len(b)+m])
		b = b[:len(b)+k]
		if err != nil {
			return b, err
		}
		runtime.Gosched()
	}
	return b, nil
}

func readCuckoo(r io.Reader) (*redisbloom.AtomicCuckooFilter, error) {
	var head [8]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, fmt.Errorf("%w: truncated cuckoo filter", errCorrupt)
	}
	n := binary.LittleEndian.Uint64(head[:])
	if n > maxCuckooRDB {
		return nil, fmt.Errorf("%w: a cuckoo filter of %d bytes", errCorrupt, n)
	}
	// A reader that says how many bytes it holds (a data file, a dump in
	// memory) gets one buffer of the value's size; any other, one that
	// grows as the bytes arrive.
	l, ok := r.(interface{ Len() int })
	v, err := readChunked(r, int64(n)+8, ok && n+8 <= uint64(l.Len()))
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%w: truncated cuckoo filter", errCorrupt)
		}
		return nil, err
	}
	v, sum := v[:n], binary.LittleEndian.Uint64(v[n:])
	if got := hashLarge(v); got != sum {
		return nil, fmt.Errorf("%w: cuckoo filter hashes to %#x, recorded %#x", errCorrupt, got, sum)
	}
	f := new(redisbloom.AtomicCuckooFilter)
	used, err := f.UnmarshalRDB(v, redisbloom.CuckooRDBEncVer, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	if used != len(v) {
		return nil, fmt.Errorf("%w: %d bytes after the cuckoo filter", errCorrupt, len(v)-used)
	}
	return f, nil
}

// NewCuckooEntry and the entry's cuckooFilter are for DUMP and RESTORE:
// a key holding f, which the entry takes over (f must not be used
// afterwards), and a copy of a cuckoo key's filter.
func newCuckooEntry(f *redisbloom.CuckooFilter) *entry {
	return &entry{kind: kindCuckoo, cf: redisbloom.NewAtomicCuckooFromFilter(f)}
}

// cuckooFilter returns a copy of the key's filter, taken under its lock so
// that it holds exactly the changes up to e.seq; nil for a key that is not
// a cuckoo key.
func (e *entry) cuckooFilter() *redisbloom.CuckooFilter {
	if e.kind != kindCuckoo {
		return nil
	}
	e.mu.Lock()
	v := e.cf.MarshalRDB()
	e.mu.Unlock()
	f := new(redisbloom.CuckooFilter)
	if _, err := f.UnmarshalRDB(v, redisbloom.CuckooRDBEncVer, 0); err != nil {
		panic("server: a cuckoo filter's own RDB value does not decode: " + err.Error())
	}
	return f
}
