package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"
	"sync/atomic"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/redisbloom"
	"github.com/zeebo/xxh3"
)

// replayer applies the records of log segments to a keyspace being
// restored. It decodes bytes from a file, so it trusts none of them: every
// length is checked against its bound before use, a record is applied only
// once its checksum holds, and it allocates no more than the bytes read
// justify (a created filter is checked against maxFilterBytes first, as the
// command that created it was).
type replayer struct {
	dbs            []*database    // only their keys: load indexes them after
	ident          []atomic.Int64 // the store's: swaps exchange identities
	maxFilterBytes uint64
	body           []byte // reused for every record but loads
}

var errNotSegment = errors.New("not an ohbloom log segment (bad magic)")

// Why a segment's end is a torn tail (replay's torn).
const (
	tornCut      = "the file ends inside a record"
	tornChecksum = "the last record's checksum fails where the file ends"
	tornZeros    = "zeros from a record boundary to the end of the file"
	tornZeroCut  = "a record cut short by zeros that run to the end of the file"
)

// maybeTorn is damage in a record that a torn write explains if, from
// inside the record, the file is zeros to its end: a power loss leaves the
// blocks a write had reserved but not filled as zeros. The caller, which
// can see the whole file, decides (zeroTail).
type maybeTorn struct {
	start   int64 // the record's offset in the segment
	claimed int64 // the bytes the record claims, from start
	err     error
}

func (e *maybeTorn) Error() string { return e.err.Error() }
func (e *maybeTorn) Unwrap() error { return e.err }

// replay reads one segment, whose name says gen (0 for any), and applies
// its records. It returns the offset just past the last record applied and,
// if what follows is a torn tail, why (one of the torn constants): the last
// record cut short, or failing its checksum where the file ends, or zeros
// to the end. Any other damage is an error, and the caller stops; damage
// that zeros to the end would explain is a *maybeTorn.
func (rp *replayer) replay(r *bufio.Reader, gen uint64) (good int64, torn string, err error) {
	var head [segmentHeader]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		// Segments are made whole (createSegment), so a short header is
		// damage, not a crash.
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, "", fmt.Errorf("%w: truncated segment header", errCorrupt)
		}
		return 0, "", err
	}
	if string(head[:6]) != segmentMagic[:6] {
		return 0, "", errNotSegment
	}
	if string(head[6:8]) != segmentMagic[6:8] {
		return 0, "", fmt.Errorf("unsupported log version %d", binary.BigEndian.Uint16(head[6:8]))
	}
	if got := binary.LittleEndian.Uint64(head[8:]); gen != 0 && got != gen {
		return 0, "", fmt.Errorf("%w: the header says segment %d, the name %d", errCorrupt, got, gen)
	}
	off := int64(segmentHeader)
	for {
		n, torn, err := rp.record(r)
		if err != nil {
			var mt *maybeTorn
			if errors.As(err, &mt) {
				mt.start = off
			}
			return off, "", fmt.Errorf("record at offset %d: %w", off, err)
		}
		if torn != "" {
			return off, torn, nil
		}
		if n == 0 {
			return off, "", nil
		}
		off += n
	}
}

// record reads and applies one record and returns its length; 0 at a clean
// end of the segment.
func (rp *replayer) record(r *bufio.Reader) (int64, string, error) {
	var rh [8]byte
	switch _, err := io.ReadFull(r, rh[:]); {
	case err == io.EOF:
		return 0, "", nil
	case err == io.ErrUnexpectedEOF:
		return 0, tornCut, nil
	case err != nil:
		return 0, "", err
	}
	n := binary.LittleEndian.Uint32(rh[:4])
	if n == 0 || binary.LittleEndian.Uint32(rh[4:]) != ^n {
		if allZero(rh[:]) {
			if zeros, err := zerosToEnd(r); err != nil {
				return 0, "", err
			} else if zeros {
				return 0, tornZeros, nil
			}
		}
		return 0, "", &maybeTorn{claimed: 8, err: fmt.Errorf("%w: damaged length", errCorrupt)}
	}
	total := 8 + int64(n) + 8
	kind, err := r.ReadByte()
	if err == io.EOF {
		return 0, tornCut, nil
	} else if err != nil {
		return 0, "", err
	}
	prefix := []byte{kind}
	if kind == recInDB {
		// The database, then the kind of the body it wraps: bytes of the
		// body, hashed with it.
		for len(prefix) < 1+binary.MaxVarintLen64+1 && uint32(len(prefix)) < n {
			c, err := r.ReadByte()
			if err == io.EOF {
				return 0, tornCut, nil
			} else if err != nil {
				return 0, "", err
			}
			prefix = append(prefix, c)
			if len(prefix) >= 3 && prefix[len(prefix)-2] < 0x80 {
				break // the varint ended at the byte before: c is the kind
			}
		}
		kind = prefix[len(prefix)-1]
	}
	if kind == recLoad || kind == recPlace {
		torn, err := rp.whole(r, n, prefix)
		return total, torn, err
	}
	if n > maxSmallBody {
		err := fmt.Errorf("%w: a record of kind %d claims %d bytes", errCorrupt, kind, n)
		if kind == 0 {
			// A load record's header, and zeros where its kind was?
			return 0, "", &maybeTorn{claimed: total, err: err}
		}
		return 0, "", err
	}
	if uint32(len(prefix)) > n {
		return 0, "", fmt.Errorf("%w: a record of %d bytes", errCorrupt, n)
	}
	rp.body = append(rp.body[:0], prefix...)
	rp.body, err = readN(r, rp.body, int(n)-len(prefix))
	if err != nil {
		return 0, tornIf(err), ignoreEOF(err)
	}
	var sum [8]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return 0, tornIf(err), ignoreEOF(err)
	}
	if xxh3.Hash(rp.body) != binary.LittleEndian.Uint64(sum[:]) {
		torn, err := checksumFailed(r, total)
		return 0, torn, err
	}
	if err := rp.apply(rp.body); err != nil {
		return 0, "", err
	}
	return total, "", nil
}

// checksumFailed judges a record of total bytes whose bytes do not match
// its checksum: at the end of the file a torn write; elsewhere damage,
// unless zeros run from inside it to the end (maybeTorn).
func checksumFailed(r *bufio.Reader, total int64) (string, error) {
	if _, err := r.Peek(1); err == io.EOF {
		return tornChecksum, nil
	}
	return "", &maybeTorn{claimed: total, err: fmt.Errorf("%w: checksum mismatch", errCorrupt)}
}

func tornIf(err error) string {
	if isEOF(err) {
		return tornCut
	}
	return ""
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }

func ignoreEOF(err error) error {
	if isEOF(err) {
		return nil
	}
	return err
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// zerosToEnd reports whether only zero bytes remain: the blocks of a write
// the file system had sized but not filled when the machine stopped.
func zerosToEnd(r *bufio.Reader) (bool, error) {
	for {
		b, err := r.ReadByte()
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if b != 0 {
			return false, nil
		}
	}
}

// zeroTail reports whether the damage mt found in a segment of size bytes
// is a torn tail: the file is zeros from a point inside the damaged record
// to its end, as a power loss during the record's write leaves it.
func zeroTail(f io.ReaderAt, size int64, mt *maybeTorn) (bool, error) {
	// Find where the trailing zeros begin, reading back from the end, but
	// never before the record.
	buf := make([]byte, 64<<10)
	zeroFrom := size
	for zeroFrom > mt.start {
		n := min(int64(len(buf)), zeroFrom-mt.start)
		chunk := buf[:n]
		if _, err := f.ReadAt(chunk, zeroFrom-n); err != nil {
			return false, err
		}
		i := len(chunk)
		for i > 0 && chunk[i-1] == 0 {
			i--
		}
		zeroFrom -= n - int64(i)
		if i > 0 {
			break
		}
	}
	return zeroFrom < mt.start+mt.claimed, nil
}

// readN appends n bytes from r to buf, growing it as they arrive, not by
// what n claims.
func readN(r io.Reader, buf []byte, n int) ([]byte, error) {
	for n > 0 {
		chunk := min(n, 32<<10)
		buf = slices.Grow(buf, chunk)
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+m]
		if err != nil {
			return buf, err
		}
		n -= chunk
	}
	return buf, nil
}

// bodyReader reads the rest of a load record's body, hashing it.
type bodyReader struct {
	r    *bufio.Reader
	sum  hash.Hash64
	left uint64
	eof  bool // the file ended inside the body
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if uint64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.sum.Write(p[:n])
	b.left -= uint64(n)
	if err == io.EOF {
		b.eof = true
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *bodyReader) ReadByte() (byte, error) {
	var c [1]byte
	if _, err := io.ReadFull(b, c[:]); err != nil {
		return 0, err
	}
	return c[0], nil
}

// inDB splits a body's database (recInDB) from the body it wraps; a body
// without one is database 0's.
func inDB(body []byte) (int, []byte, error) {
	if body[0] != recInDB {
		return 0, body, nil
	}
	db, k := binary.Uvarint(body[1:])
	if k <= 0 || db == 0 || db >= maxDatabases || len(body) <= 1+k {
		return 0, nil, fmt.Errorf("%w: bad database", errCorrupt)
	}
	switch body[1+k] {
	case recInDB, recFlushAll, recSwapDB:
		return 0, nil, fmt.Errorf("%w: a record of kind %d in a database", errCorrupt, body[1+k])
	}
	return int(db), body[1+k:], nil
}

// swap exchanges databases a and b, and their identities.
func (rp *replayer) swap(a, b int) {
	rp.dbs[a], rp.dbs[b] = rp.dbs[b], rp.dbs[a]
	if rp.ident != nil {
		ia, ib := rp.ident[a].Load(), rp.ident[b].Load()
		rp.ident[a].Store(ib)
		rp.ident[b].Store(ia)
	}
}

// database is the keys of database db, or an error if the server has not
// as many databases as the log names.
func (rp *replayer) database(db int) (map[string]*entry, error) {
	if db >= len(rp.dbs) {
		return nil, fmt.Errorf("the log names database %d, but the server has %d databases: start it with --databases %d or more", db, len(rp.dbs), db+1)
	}
	return rp.dbs[db].keys, nil
}

// whole replays a load or place record, whose body (n bytes) begins with
// prefix (its kind, after its database if it has one, read already): the
// key, for a place its expiry and source, then a key record decoded as it
// streams (it may be as large as a filter), applied only once the checksum
// over the whole body holds.
func (rp *replayer) whole(r *bufio.Reader, n uint32, prefix []byte) (string, error) {
	sum := xxh3.New()
	sum.Write(prefix)
	if uint32(len(prefix)) > n {
		return "", fmt.Errorf("%w: a record of %d bytes", errCorrupt, n)
	}
	br := &bodyReader{r: r, sum: sum, left: uint64(n) - uint64(len(prefix))}
	kind := prefix[len(prefix)-1]
	db, _, err := inDB(append(prefix[:len(prefix):len(prefix)], 0))
	keyLen, rerr := binary.ReadUvarint(br)
	if err == nil {
		err = rerr
	}
	var key, src []byte
	var e *entry
	var at int64
	srcDB := -1
	if err == nil && keyLen > maxKeyBytes {
		err = fmt.Errorf("%w: key of %d bytes", errCorrupt, keyLen)
	}
	if err == nil {
		key, err = readN(br, nil, int(keyLen))
	}
	if err == nil && kind == recPlace {
		var b [8]byte
		if _, err = io.ReadFull(br, b[:]); err == nil {
			if at = int64(binary.LittleEndian.Uint64(b[:])); at < 0 {
				err = fmt.Errorf("%w: expiry %d", errCorrupt, at)
			}
		}
		var v uint64
		if err == nil {
			v, err = binary.ReadUvarint(br)
		}
		if err == nil && v > maxDatabases {
			err = fmt.Errorf("%w: bad source database", errCorrupt)
		}
		if srcDB = int(v) - 1; err == nil && srcDB >= 0 {
			var srcLen uint64
			if srcLen, err = binary.ReadUvarint(br); err == nil && srcLen > maxKeyBytes {
				err = fmt.Errorf("%w: key of %d bytes", errCorrupt, srcLen)
			}
			if err == nil {
				src, err = readN(br, nil, int(srcLen))
			}
		}
	}
	if err == nil {
		_, _, e, err = readRecord(br)
	}
	if err == nil && br.left != 0 {
		err = fmt.Errorf("%w: %d bytes after the key record", errCorrupt, br.left)
	}
	// Whatever went wrong, the checksum decides between a torn tail and
	// damage: read to the end of the body first.
	if _, cerr := io.Copy(io.Discard, br); cerr != nil && !isEOF(cerr) {
		return "", cerr
	}
	if br.eof {
		return tornCut, nil
	}
	var rec [8]byte
	if _, err := io.ReadFull(r, rec[:]); err != nil {
		return tornIf(err), ignoreEOF(err)
	}
	if sum.Sum64() != binary.LittleEndian.Uint64(rec[:]) {
		return checksumFailed(r, 8+int64(n)+8)
	}
	if err != nil {
		return "", fmt.Errorf("%s record: %w", map[byte]string{recLoad: "load", recPlace: "place"}[kind], err)
	}
	keys, err := rp.database(db)
	if err != nil {
		return "", err
	}
	if srcDB >= 0 {
		from, err := rp.database(srcDB)
		if err != nil {
			return "", err
		}
		delete(from, string(src))
	}
	e.seq = 0
	e.expireAt.Store(at)
	e.dirty.Store(true)
	e.limit(rp.maxFilterBytes)
	keys[string(key)] = e
	return "", nil
}

// apply applies one record whose checksum holds.
func (rp *replayer) apply(body []byte) error {
	db, body, err := inDB(body)
	if err != nil {
		return err
	}
	keys, err := rp.database(db)
	if err != nil {
		return err
	}
	kind, rest := body[0], body[1:]
	switch kind {
	case recSwapDB:
		a, k1 := binary.Uvarint(rest)
		if k1 <= 0 {
			return fmt.Errorf("%w: swap record", errCorrupt)
		}
		b, k2 := binary.Uvarint(rest[k1:])
		if k2 <= 0 || k1+k2 != len(rest) || a >= maxDatabases || b >= maxDatabases {
			return fmt.Errorf("%w: swap record", errCorrupt)
		}
		if _, err := rp.database(int(max(a, b))); err != nil {
			return err
		}
		rp.swap(int(a), int(b))
		return nil
	case recFlushAll, recFlushDB:
		if len(rest) != 0 {
			return fmt.Errorf("%w: flush record with %d bytes", errCorrupt, len(rest))
		}
		if kind == recFlushDB {
			clear(keys)
			return nil
		}
		for _, d := range rp.dbs {
			clear(d.keys)
		}
		return nil
	}
	keyLen, k := binary.Uvarint(rest)
	if k <= 0 || keyLen > maxKeyBytes || keyLen > uint64(len(rest)-k) {
		return fmt.Errorf("%w: bad key length", errCorrupt)
	}
	key, rest := rest[k:k+int(keyLen)], rest[k+int(keyLen):]
	le := binary.LittleEndian
	e := keys[string(key)]
	switch kind {
	case recExpire:
		if len(rest) != 8 || int64(le.Uint64(rest)) < 0 {
			return fmt.Errorf("%w: expire record of %d bytes", errCorrupt, len(rest))
		}
		if e != nil {
			e.expireAt.Store(int64(le.Uint64(rest)))
			e.dirty.Store(true)
		}
	case recCreateBloom, recCreateCounting:
		want := 29
		if kind == recCreateCounting {
			want = 24
		}
		if len(rest) != want {
			return fmt.Errorf("%w: create record of %d bytes", errCorrupt, len(rest))
		}
		var ne *entry
		var err error
		if kind == recCreateBloom {
			growth := le.Uint32(rest[17:])
			if rest[0] > 1 || growth < 1 || growth > maxExpansion {
				return fmt.Errorf("%w: create record flags %#x, expansion %d", errCorrupt, rest[0], growth)
			}
			k := kindScalable
			if rest[0] == 1 {
				k = kindFixed
			}
			ne, err = rp.build(k, le.Uint64(rest[1:]), math.Float64frombits(le.Uint64(rest[9:])), uint64(growth), le.Uint64(rest[21:]))
		} else {
			ne, err = rp.build(kindCounting, le.Uint64(rest), math.Float64frombits(le.Uint64(rest[8:])), 0, le.Uint64(rest[16:]))
		}
		if err != nil {
			return fmt.Errorf("create record of key %q: %w", clip(key), err)
		}
		ne.dirty.Store(true)
		keys[string(key)] = ne
	case recBloomAdd:
		if len(rest) == 0 || len(rest)%8 != 0 || len(rest) > 8*hashesPerRecord {
			return fmt.Errorf("%w: add record of %d bytes", errCorrupt, len(rest))
		}
		if e == nil || e.kind != kindScalable && e.kind != kindFixed {
			return nil // a gone incarnation of the key (persist.go)
		}
		for ; len(rest) > 0; rest = rest[8:] {
			if !e.addHashReplay(le.Uint64(rest)) && e.kind == kindFixed {
				e.items.Add(1) // a scalable filter counts its own
			}
		}
		e.dirty.Store(true)
	case recCountingAdd, recCountingRemove:
		if len(rest) < 16 || len(rest)%8 != 0 || len(rest) > 8+8*hashesPerRecord || (kind == recCountingRemove && len(rest) != 16) {
			return fmt.Errorf("%w: counting record of %d bytes", errCorrupt, len(rest))
		}
		if e == nil || e.kind != kindCounting {
			return nil
		}
		seq := le.Uint64(rest)
		for rest = rest[8:]; len(rest) > 0; rest, seq = rest[8:], seq+1 {
			if seq <= e.seq {
				continue // the snapshot holds it
			}
			h := le.Uint64(rest)
			if kind == recCountingAdd {
				e.counting.AddHash(h)
				e.items.Add(1)
			} else {
				e.counting.RemoveHash(h)
				e.decrementItems()
				e.deletes.Add(1)
			}
			e.seq = seq
		}
		e.dirty.Store(true)
	case recCreateRB:
		if len(rest) > maxRBHeader {
			return fmt.Errorf("%w: a RedisBloom header of %d bytes", errCorrupt, len(rest))
		}
		// The filters' bits are allocated as chunks and adds reach
		// them, and all of them together are bounded as BF.LOADCHUNK
		// bounded them.
		f, err := redisbloom.NewAtomicFromHeader(rest, rp.maxFilterBytes)
		if err != nil {
			return fmt.Errorf("create record of key %q: %w", clip(key), err)
		}
		ne := &entry{kind: kindRedisBloom, rb: f}
		ne.dirty.Store(true)
		keys[string(key)] = ne
	case recRBAdd, recRBChunk:
		if len(rest) < 8 {
			return fmt.Errorf("%w: RedisBloom record of %d bytes", errCorrupt, len(rest))
		}
		seq, rest := le.Uint64(rest), rest[8:]
		if kind == recRBAdd && (len(rest) == 0 || len(rest)%16 != 0 || len(rest) > 16*hashesPerRecord) ||
			kind == recRBChunk && (len(rest) < 8 || len(rest) > 8+rbChunkPiece) {
			return fmt.Errorf("%w: RedisBloom record of %d bytes", errCorrupt, len(rest)+8)
		}
		if e == nil || e.kind != kindRedisBloom {
			return nil
		}
		if kind == recRBChunk {
			if seq > e.seq {
				if err := e.rb.LoadChunk(int64(le.Uint64(rest)), rest[8:]); err != nil {
					return fmt.Errorf("%w: chunk record of key %q: %w", errCorrupt, clip(key), err)
				}
				e.seq = seq
			}
		} else {
			for ; len(rest) > 0; rest, seq = rest[16:], seq+1 {
				if seq <= e.seq {
					continue // the snapshot holds it
				}
				// The add was new when logged; what it did then it does
				// again: the same filter, growth and count.
				if _, err := e.rb.AddHash(le.Uint64(rest), le.Uint64(rest[8:])); err != nil {
					return fmt.Errorf("add record of key %q: %w; start with a larger --max-filter-bytes if it was lowered", clip(key), err)
				}
				e.seq = seq
			}
		}
		e.dirty.Store(true)
	case recDelete:
		if len(rest) != 0 {
			return fmt.Errorf("%w: delete record with %d bytes", errCorrupt, len(rest))
		}
		delete(keys, string(key))
	default:
		if ok, err := rp.applyCuckoo(keys, kind, key, rest, e); ok {
			return err
		}
		return fmt.Errorf("%w: unknown record kind %d (written by a newer ohbloom?)", errCorrupt, kind)
	}
	return nil
}

// addHashReplay adds a logged hash to a BF key, without the limits a live
// add checks (it passed them when logged), and reports whether it was
// present.
func (e *entry) addHashReplay(h uint64) bool {
	if e.kind == kindFixed {
		return e.fixed.TestAndAddHash(h)
	}
	return e.scalable.TestOrAddHash(h)
}

// build makes the filter of a create record, refusing what the command
// that logged it would have refused before it allocates.
func (rp *replayer) build(k kind, capacity uint64, rate float64, growth, seed uint64) (*entry, error) {
	if capacity < 1 || !(rate > 0 && rate < 1) {
		return nil, fmt.Errorf("%w: capacity %d, error rate %g", errCorrupt, capacity, rate)
	}
	var bytes uint64
	var err error
	switch k {
	case kindScalable:
		bytes, err = ohbloom.ScalableSizeBytes(ohbloom.Config{Capacity: capacity, FPR: rate, Growth: growth})
	default:
		size := ohbloom.Geometry
		if k == kindCounting {
			size = ohbloom.CountingGeometry
		}
		var blocks uint64
		blocks, _, err = size(capacity, rate)
		bytes = blocks * ohbloom.BlockBytes
	}
	if err != nil {
		return nil, err
	}
	if bytes > rp.maxFilterBytes {
		return nil, fmt.Errorf("a filter of %d bytes exceeds max-filter-bytes (%d); start with a larger --max-filter-bytes", bytes, rp.maxFilterBytes)
	}
	c := ohbloom.Config{Capacity: capacity, FPR: rate, Seed: seed}
	e := &entry{kind: k, capacity: capacity, errorRate: rate}
	switch k {
	case kindScalable:
		c.Growth, c.MaxBytes = growth, rp.maxFilterBytes
		e.scalable, err = ohbloom.NewAtomicScalableWithConfig(c)
	case kindFixed:
		e.fixed, err = ohbloom.NewAtomicWithConfig(c)
	default:
		e.counting, err = ohbloom.NewAtomicCountingWithConfig(c)
	}
	if err != nil {
		return nil, err
	}
	e.initSeed()
	return e, nil
}

// clip shortens a key for an error message.
func clip(key []byte) string {
	if len(key) > 64 {
		return string(key[:64]) + "…"
	}
	return string(key)
}
