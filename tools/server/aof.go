package server

// The append-only log: its format and its writer. persist.go says what it
// promises and why replaying it over the snapshot is exact.
//
// A segment is a file appendonly-<gen>.ohbl in --dir, gen in 16 hex digits:
//
//	0   magic "OHBLOG" and version 0x0001 (big-endian)
//	8   gen, little-endian uint64: the number in the file's name
//	16  records, back to back
//
// A record:
//
//	0    n, little-endian uint32: the length of the body, 1 to 2^32-1
//	4    ^n, n's complement: a damaged length reads as damage, not as a
//	     record that runs past the end of the file (a torn tail)
//	8    the body, n bytes
//	8+n  XXH3_64bits of the body, little-endian
//
// A body is a kind byte; then, for every kind but flush-all, the key: its
// length as a uvarint (at most 65536) and its bytes; then, by kind, with
// little-endian integers:
//
//	1 create-bloom     flags (bit 0: NONSCALING), capacity u64, error
//	                   rate (float64 bits) u64, expansion u32 (the
//	                   scalable filter's growth; 2 for NONSCALING), seed
//	                   u64
//	2 create-counting  capacity u64, error rate u64, seed u64
//	3 bloom-add        one or more hashes u64: the items' XXH3 with the
//	                   key's seed, what the filter sets bits from
//	4 counting-add     seq u64, one or more hashes u64; the first item is
//	                   the key's change seq, the next seq+1, and so on
//	5 counting-remove  seq u64, hash u64
//	6 delete           nothing more
//	7 flush-all        nothing (no key)
//	8 load             a key record (store.go's format), as LOADCHUNK
//	                   received it
//	9 create-redisbloom  a RedisBloom chain's header chunk, as BF.SCANDUMP
//	                   iterator 0 returns it: the key BF.LOADCHUNK made of
//	                   a RedisBloom dump, its filters' bits all clear
//	10 redisbloom-add  seq u64, then one or more pairs (a u64, b u64): the
//	                   chain's hashes of each item added as new, the first
//	                   the key's change seq, the next seq+1, and so on
//	11 redisbloom-chunk  seq u64, iterator u64, data: a BF.LOADCHUNK data
//	                   chunk, or a piece of one (at most rbChunkPiece
//	                   bytes, so that every record but a load stays small)
//	12-16              a cuckoo key's records (cuckoo_log.go)
//	17 in-database     not a kind of its own: the database, a uvarint from
//	                   1 to 2^20-1, then a body of any other kind but
//	                   flush-all and swap, which applies to that database
//	                   (a body without it applies to database 0, so that
//	                   the log of a server without databases reads as
//	                   database 0)
//	18 expire          when the key expires, Unix milliseconds u64; 0 for
//	                   never (PERSIST)
//	19 flush-database  nothing (no key): FLUSHDB
//	20 place           (RENAME, COPY, MOVE) when the key expires u64 (0
//	                   never), then the source database plus one, a
//	                   uvarint, 0 when the source stays (COPY); otherwise
//	                   the source's key (its length as a uvarint and its
//	                   bytes), removed; then a key record (store.go's
//	                   format) that becomes the key, replacing what it
//	                   held. The key's whole state, as a load's, so that
//	                   replaying it is exact whatever the snapshot holds
//	                   of either key.
//	21 swap-databases  (no key) two databases, uvarints: SWAPDB
//
// A RedisBloom key's changes are numbered as a CF key's (store.go's
// entry.mu): its growth and counts depend on the order of its adds, and a
// chunk overwrites bytes, so replay applies each change exactly once, in
// order, after the snapshot's. A reader refuses a kind it does not know
// rather than skip it.
//
// Writers append records to one buffer under a mutex (a copy, no I/O).
// Whoever flushes takes the buffer whole, writes it and, as the policy
// says, fsyncs it, holding no lock meanwhile. A background flusher writes
// (and under everysec syncs) every second, or sooner when a megabyte is
// waiting. Under always, a change's reply waits until its record is
// fsynced: a connection whose replies wait registers with the log and
// runs nothing more, its event loop serving the others meanwhile; the
// flusher writes and fsyncs everything appended for all the connections
// waiting at once (group commit), wakes those it made durable, and goes
// again for the ones that came during the fsync. (A caller that may block,
// outside the event loops, waits in await instead, and flushes itself if
// no flush runs.)

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"
)

const (
	segmentMagic  = "OHBLOG\x00\x01"
	segmentHeader = 16

	recCreateBloom    = 1
	recCreateCounting = 2
	recBloomAdd       = 3
	recCountingAdd    = 4
	recCountingRemove = 5
	recDelete         = 6
	recFlushAll       = 7
	recLoad           = 8
	recCreateRB       = 9
	recRBAdd          = 10
	recRBChunk        = 11
	// 12 to 16 are a cuckoo key's (cuckoo_log.go).
	recInDB    = 17
	recExpire  = 18
	recFlushDB = 19
	recPlace   = 20
	recSwapDB  = 21

	// maxDatabases bounds --databases, and the database a record names.
	maxDatabases = 1 << 20

	// rbChunkPiece is the most data one redisbloom-chunk record carries:
	// with the longest key it keeps the record under maxSmallBody.
	rbChunkPiece = 32 << 10
	// maxRBHeader bounds a RedisBloom header chunk. RedisBloom halves
	// each new filter's error rate, so a chain reaches the smallest
	// double after about 1,070 filters and cannot grow further: its
	// header is then 20 + 53·1,070 (+16) bytes, well under this.
	maxRBHeader = 64 << 10

	// hashesPerRecord is the most hashes one add record carries: a
	// BF.MADD of many items is logged as several records, so that every
	// record but a load is small and a reader needs no large buffer.
	hashesPerRecord = 64
	// maxSmallBody bounds the body of every record kind but load: a
	// kind byte, the longest key with its length, a seq and
	// hashesPerRecord hashes, with room to spare.
	maxSmallBody = 1 << 17
	// maxLoadBody bounds a load record, the largest a record's length
	// field says.
	maxLoadBody = math.MaxUint32

	// flushAhead wakes the flusher before its second is up once this many
	// bytes are waiting, so that the buffer stays small.
	flushAhead = 1 << 20
	// maxBuffered makes writers wait for the flusher past this many
	// bytes waiting to be written, whatever the policy.
	maxBuffered = 64 << 20
	// stallAfter makes writers wait, under everysec, while a record
	// older than this is not yet fsynced: Redis's 2 seconds.
	stallAfter = 2 * time.Second
	// maxSpare is the largest buffer kept for reuse after a flush.
	maxSpare = 4 << 20
)

var segmentName = regexp.MustCompile(`^appendonly-[0-9a-f]{16}\.ohbl$`)

type segmentFile struct {
	gen  uint64
	path string
}

func segmentPath(dir string, gen uint64) string {
	return filepath.Join(dir, fmt.Sprintf("appendonly-%016x.ohbl", gen))
}

// fsyncPolicy is --appendfsync.
type fsyncPolicy uint8

const (
	fsyncEverysec fsyncPolicy = iota
	fsyncAlways
	fsyncNo
)

func parseFsync(s string) (fsyncPolicy, error) {
	switch s {
	case "", "everysec":
		return fsyncEverysec, nil
	case "always":
		return fsyncAlways, nil
	case "no":
		return fsyncNo, nil
	}
	return 0, fmt.Errorf("server: appendfsync %q: want always, everysec or no", s)
}

func (p fsyncPolicy) String() string {
	return [...]string{"everysec", "always", "no"}[p]
}

// policy is the log's fsync policy now.
func (l *appendLog) policy() fsyncPolicy { return fsyncPolicy(l.pol.Load()) }

// setPolicy changes the fsync policy (CONFIG SET appendfsync). Under l.mu,
// so that no flush decides under one policy and syncs under another.
func (l *appendLog) setPolicy(p fsyncPolicy) {
	l.mu.Lock()
	l.pol.Store(uint32(p))
	l.mu.Unlock()
}

// appendLog is the writer of the log. Its methods are safe for concurrent
// use.
type appendLog struct {
	dir string
	// pol is the fsyncPolicy, which CONFIG SET appendfsync changes while
	// the log runs: a change applies to the records appended after it
	// (the ones waiting keep what they were promised).
	pol    atomic.Uint32
	logger *slog.Logger
	epoch  time.Time
	// man is the directory's manifest: the log records there the
	// segments it moves to and how far it fsynced.
	man *manifest
	// recover is called by the flusher while the log is failing, to save
	// every key and start a new segment.
	recover func() error

	mu       sync.Mutex
	cond     sync.Cond // on mu: a flush ended, or the log failed
	buf      []byte    // records not yet written (taken by no flush)
	loads    []loadPiece
	spare    []byte
	appended uint64 // position: bytes of records appended since start
	written  uint64 // position handed to write(2)
	// durable is the position up to which every record is safe: fsynced
	// (under no: written), or held by a save that completed after it.
	durable uint64
	// skip is how many bytes at the front of buf (loads counted) are in
	// the segment already: what a write that failed part-way wrote. The
	// next write goes on from there.
	skip int64
	// pendingSince and unsyncedSince are the ages (since epoch, +1 so
	// that 0 means none) of the oldest record in buf and of the oldest
	// written but not fsynced.
	pendingSince, unsyncedSince time.Duration
	flushing                    bool // the flush token: its holder owns f, gen, size
	woken                       bool
	// err is the failure that makes the log refuse changes (sticky until
	// the records are written, or a save clears it), errGen the segment it
	// hit. errLost says it may have lost records the kernel had taken (a
	// failed fsync): then only a save that completes ends it.
	err     error
	errGen  uint64
	errLost bool
	// sticky says the current segment is not written again (an fsync
	// failed, or the file is not as long as what was written): the records
	// wait for the next segment.
	sticky bool
	// rotatedAt is the position of the last rotation: once the save that
	// rotated completes, everything before it is in the snapshot.
	rotatedAt uint64

	f          *os.File
	gen        uint64
	size       int64 // bytes written to f (whole records, but for skip)
	syncedSize int64

	// Space reserved for the segment (reserve.go). reserveOn says the
	// file system reserves. resEnd is the offset up to which f's blocks
	// are reserved, base the offset where the first byte of the buffer
	// not yet in f goes (past a flush's batch in flight: l.size when no
	// flush runs). old is, during a rotation, the old segment's. growErr
	// says why the last extension fell short (nil: it did not). shortNow
	// is short's value.
	reserveOn bool
	resEnd    int64
	base      int64
	old       *oldReserve
	growErr   error
	shortNow  bool

	// Mirrors of the state above for the lock-free checks of the command
	// path.
	oldest   atomic.Int64 // the older of pendingSince and unsyncedSince
	tail     atomic.Uint64
	buffered atomic.Int64
	failed   atomic.Bool
	genNow   atomic.Uint64
	// fitPos is the position up to which every record is written or
	// fits in the reserved space; short says the reservation cannot grow
	// and less than reserveKeep is left: changes are refused.
	fitPos atomic.Uint64
	short  atomic.Bool

	// For tests: a clock to replace the real one, and the writers waiting
	// for the flusher to catch up.
	testClock      atomic.Pointer[func() time.Duration]
	stalledWriters atomic.Int32
	// syncs counts the fsyncs of flushes, for the tests of group commit.
	syncs atomic.Int64

	// waiters are the connections whose replies wait (awaitAsync); the
	// flusher, woken through demand, flushes for them and wakes them.
	waiters, releasing []pendingWait
	demand             chan struct{}

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

// oldReserve is the old segment's reservation during a rotation: the
// offset after the batch the rotation writes there, and its reserved end.
type oldReserve struct {
	base, resEnd int64
	growErr      error
}

// loadPiece is a load record's dump, written from where LOADCHUNK keeps it
// rather than copied into the buffer: it goes after buf[:at].
type loadPiece struct {
	at   int
	data []byte
}

// openLog opens the newest live segment for appending (after replay), or,
// with none, starts the next one the manifest allows, and starts the
// flusher.
func openLog(dir string, policy fsyncPolicy, last *segmentFile, man *manifest, logger *slog.Logger) (*appendLog, error) {
	l := &appendLog{dir: dir, logger: logger, epoch: time.Now(), man: man,
		wake: make(chan struct{}, 1), demand: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	l.pol.Store(uint32(policy))
	l.cond.L = &l.mu
	if last == nil {
		gen := man.state().last + 1
		f, err := createSegment(dir, gen)
		if err == nil {
			if err = man.moveTo(gen, 0); err != nil {
				f.Close()
				os.Remove(segmentPath(dir, gen))
			}
		}
		if err != nil {
			return nil, fmt.Errorf("server: starting the append-only log: %w", err)
		}
		l.f, l.gen = f, gen
	} else {
		f, err := os.OpenFile(last.path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return nil, fmt.Errorf("server: opening the append-only log: %w", err)
		}
		l.f, l.gen = f, last.gen
	}
	st, err := l.f.Stat()
	if err != nil {
		l.f.Close()
		return nil, err
	}
	l.size, l.syncedSize = st.Size(), st.Size()
	l.genNow.Store(l.gen)
	l.base, l.resEnd, l.reserveOn = l.size, l.size, true
	end, err := growReserve(l.f, l.size, l.size+reserveStep)
	if errors.Is(err, errNoReserve) {
		l.reserveOn = false
		l.fitPos.Store(math.MaxUint64)
		logger.Warn("the append-only log cannot reserve disk space here: on a full disk, kill -9 can lose the changes acknowledged in the second before the first error (see docs/server.md)", "err", err)
	} else {
		l.resEnd, l.growErr = end, err
		l.refitLocked(0)
	}
	go l.run()
	return l, nil
}

// createSegment makes segment gen durably: its header is written and
// synced in a temporary file, renamed into place, and the directory
// synced, so that a segment exists whole or not at all. The file returned
// is opened by the segment's name, so that errors name it.
func createSegment(dir string, gen uint64) (*os.File, error) {
	path := segmentPath(dir, gen)
	err := writeAtomic(path, func(w io.Writer) error {
		head := make([]byte, segmentHeader)
		copy(head, segmentMagic)
		binary.LittleEndian.PutUint64(head[8:], gen)
		_, err := w.Write(head)
		return err
	})
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
}

func (l *appendLog) clock() time.Duration {
	if now := l.testClock.Load(); now != nil {
		return (*now)()
	}
	return time.Since(l.epoch) + 1
}

// begin starts a record in buf, of the key of database db, and returns
// where.
func begin[K ~string | ~[]byte](l *appendLog, kind byte, db int, key K) int {
	start := len(l.buf)
	l.buf = beginRecord(l.buf, kind, db, key)
	return start
}

// beginRecord appends the start of a record of the key of database db to
// dst: room for its length, and its body up to the key.
func beginRecord[K ~string | ~[]byte](dst []byte, kind byte, db int, key K) []byte {
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	if db != 0 {
		dst = append(dst, recInDB)
		dst = binary.AppendUvarint(dst, uint64(db))
	}
	dst = append(dst, kind)
	if kind != recFlushAll && kind != recFlushDB && kind != recSwapDB {
		dst = binary.AppendUvarint(dst, uint64(len(key)))
		dst = append(dst, key...)
	}
	return dst
}

// seal writes the record's length and checksum and returns the position
// after it.
func (l *appendLog) seal(start int) uint64 {
	l.buf = sealRecord(l.buf, start)
	return l.appendedLocked(uint64(len(l.buf) - start))
}

// sealRecord writes the length of the record that starts at dst[start:]
// and appends its checksum.
func sealRecord(dst []byte, start int) []byte {
	body := dst[start+8:]
	n := uint32(len(body))
	binary.LittleEndian.PutUint32(dst[start:], n)
	binary.LittleEndian.PutUint32(dst[start+4:], ^n)
	return binary.LittleEndian.AppendUint64(dst, xxh3.Hash(body))
}

func (l *appendLog) appendedLocked(n uint64) uint64 {
	if l.pendingSince == 0 {
		l.pendingSince = l.clock()
		l.mirrorLocked()
	}
	l.appended += n
	l.tail.Store(l.appended)
	size := int64(len(l.buf))
	for _, p := range l.loads {
		size += int64(len(p.data))
	}
	l.buffered.Store(size)
	l.refitLocked(size)
	if !l.woken && size >= flushAhead {
		l.woken = true
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	return l.appended
}

func (l *appendLog) mirrorLocked() {
	o := l.pendingSince
	if l.unsyncedSince != 0 && (o == 0 || l.unsyncedSince < o) {
		o = l.unsyncedSince
	}
	l.oldest.Store(int64(o))
}

// changeRecordHook, set by tests, runs before the record of a change to a
// key that exists takes the log's lock: TestConcurrentClientsSurviveKill
// makes it pause now and then, so that the rare orders of a change, its
// record and other clients' commands become common.
var changeRecordHook func()

// appendHashes logs adds (recBloomAdd; seq unused) or a CF key's adds
// (recCountingAdd, numbered from seq), at most hashesPerRecord of them.
func (l *appendLog) appendHashes(kind byte, db int, key []byte, seq uint64, hs []uint64) uint64 {
	if changeRecordHook != nil {
		changeRecordHook()
	}
	l.mu.Lock()
	start := begin(l, kind, db, key)
	if kind == recCountingAdd {
		l.buf = binary.LittleEndian.AppendUint64(l.buf, seq)
	}
	for _, h := range hs {
		l.buf = binary.LittleEndian.AppendUint64(l.buf, h)
	}
	pos := l.seal(start)
	l.mu.Unlock()
	return pos
}

func (l *appendLog) appendRemove(db int, key []byte, seq, h uint64) uint64 {
	if changeRecordHook != nil {
		changeRecordHook()
	}
	l.mu.Lock()
	start := begin(l, recCountingRemove, db, key)
	l.buf = binary.LittleEndian.AppendUint64(l.buf, seq)
	l.buf = binary.LittleEndian.AppendUint64(l.buf, h)
	pos := l.seal(start)
	l.mu.Unlock()
	return pos
}

func (l *appendLog) appendCreate(db int, key string, e *entry) uint64 {
	le := binary.LittleEndian
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.kind == kindCounting {
		start := begin(l, recCreateCounting, db, key)
		l.buf = le.AppendUint64(l.buf, e.capacity)
		l.buf = le.AppendUint64(l.buf, math.Float64bits(e.errorRate))
		l.buf = le.AppendUint64(l.buf, e.seed)
		return l.seal(start)
	}
	if e.kind == kindCuckoo {
		start := begin(l, recCuckooCreate, db, key)
		l.buf = appendCuckooHeader(l.buf, e.cf.Info())
		return l.seal(start)
	}
	if e.kind == kindRedisBloom {
		start := begin(l, recCreateRB, db, key)
		_, l.buf = e.rb.ScanDump(0, l.buf)
		return l.seal(start)
	}
	start := begin(l, recCreateBloom, db, key)
	flags, growth := byte(0), uint64(defaultExpansion)
	if e.kind == kindFixed {
		flags = 1
	} else {
		growth = e.scalable.Config().Growth
	}
	l.buf = append(l.buf, flags)
	l.buf = le.AppendUint64(l.buf, e.capacity)
	l.buf = le.AppendUint64(l.buf, math.Float64bits(e.errorRate))
	l.buf = le.AppendUint32(l.buf, uint32(growth))
	l.buf = le.AppendUint64(l.buf, e.seed)
	return l.seal(start)
}

// appendRBAdds logs the adds of a RedisBloom key, numbered from seq: the
// hash pairs of the items it took as new, at most hashesPerRecord.
func (l *appendLog) appendRBAdds(db int, key []byte, seq uint64, pairs [][2]uint64) uint64 {
	if changeRecordHook != nil {
		changeRecordHook()
	}
	le := binary.LittleEndian
	l.mu.Lock()
	start := begin(l, recRBAdd, db, key)
	l.buf = le.AppendUint64(l.buf, seq)
	for _, p := range pairs {
		l.buf = le.AppendUint64(l.buf, p[0])
		l.buf = le.AppendUint64(l.buf, p[1])
	}
	pos := l.seal(start)
	l.mu.Unlock()
	return pos
}

// chunkRecords are the records of a LOADCHUNK data chunk, made,
// checksums and all, before the caller takes the store's lock and the
// log's to log them (appendChunk): copied into the log's buffer under its
// lock, a data chunk of 60 MB held every create and DEL, which wait for
// it holding the store's write lock, and so every lookup (a BF.LOADCHUNK
// beside a client making and removing keys: 378 ms).
type chunkRecords struct {
	b []byte
	n uint64 // how many records b holds
}

// newChunkRecords makes the records of kind (recRBChunk, recCuckooChunk)
// of a data chunk of the key of database db, numbered from seq: pieces
// of at most rbChunkPiece bytes. A piece at bytes [p, p+n) of the
// filter's dump is the chunk of iterator p + n + 1. The pieces are copied
// a copyChunk at a time, with a yield between (see appendChunked).
func newChunkRecords(kind byte, db int, key []byte, seq uint64, iter int64, data []byte) chunkRecords {
	le := binary.LittleEndian
	start := uint64(iter) - uint64(len(data)) - 1 // the chunk's first byte; LoadChunk checked it
	pieces := (len(data) + rbChunkPiece - 1) / rbChunkPiece
	// Each record: its length twice and its checksum, 16 bytes; the
	// in-database and kind bytes, the database and the key's length as
	// uvarints, the key; its seq and iterator, 16 bytes.
	each := 16 + 2 + 2*binary.MaxVarintLen64 + len(key) + 16
	r := chunkRecords{b: make([]byte, 0, len(data)+pieces*each)}
	copied := 0
	for off := 0; off < len(data); off += rbChunkPiece {
		piece := data[off:min(len(data), off+rbChunkPiece)]
		at := len(r.b)
		r.b = beginRecord(r.b, kind, db, key)
		r.b = le.AppendUint64(r.b, seq+r.n)
		r.b = le.AppendUint64(r.b, start+uint64(off)+uint64(len(piece))+1)
		r.b = append(r.b, piece...)
		r.b = sealRecord(r.b, at)
		r.n++
		if copied += len(piece); copied >= copyChunk {
			copied = 0
			runtime.Gosched()
		}
	}
	return r
}

// appendChunk logs the records of a data chunk that newChunkRecords made,
// which the log keeps (and the caller must not change) until they are
// written, and returns the position after them.
func (l *appendLog) appendChunk(r chunkRecords) uint64 {
	if changeRecordHook != nil {
		changeRecordHook()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loads = append(l.loads, loadPiece{at: len(l.buf), data: r.b})
	return l.appendedLocked(uint64(len(r.b)))
}

func (l *appendLog) appendDelete(db int, key string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seal(begin(l, recDelete, db, key))
}

func (l *appendLog) appendFlushAll() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seal(begin(l, recFlushAll, 0, ""))
}

func (l *appendLog) appendFlushDB(db int) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seal(begin(l, recFlushDB, db, ""))
}

// appendSwapDB logs a SWAPDB of databases a and b, and runs swap (which
// exchanges them) under the log's lock, so that a rotation falls wholly
// before or after it.
func (l *appendLog) appendSwapDB(a, b int, swap func()) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	start := begin(l, recSwapDB, 0, "")
	l.buf = binary.AppendUvarint(l.buf, uint64(a))
	l.buf = binary.AppendUvarint(l.buf, uint64(b))
	swap()
	return l.seal(start)
}

// appendExpire logs when a key expires (at, Unix ms; 0 never).
func (l *appendLog) appendExpire(db int, key string, at int64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	start := begin(l, recExpire, db, key)
	l.buf = binary.LittleEndian.AppendUint64(l.buf, uint64(at))
	return l.seal(start)
}

// wholeRecord is a log record that carries a key record whole (load,
// place), made, its checksum taken, before its caller takes the store's
// lock to log it: hashing a record of hundreds of MB under that lock held
// every other client's lookups (a COPY of a 256 MB filter, 174 ms). err
// says it is too large for the log.
type wholeRecord struct {
	prefix, head, dump []byte
	key                string
	sum                uint64
	err                error
}

// loadWhole is the record of a LOADCHUNK'd key with its dump, which the
// log keeps (and the caller must not change) until it is written.
func loadWhole(db int, key string, dump []byte) wholeRecord {
	return newWholeRecord(recLoad, db, key, nil, dump)
}

// placeWhole is the record of a RENAME, COPY or MOVE: key of database db
// becomes the key record rec, with expiry at; the key src of database
// srcDB goes, unless srcDB < 0.
func placeWhole(db int, key string, at int64, srcDB int, src string, rec []byte) wholeRecord {
	head := binary.LittleEndian.AppendUint64(nil, uint64(at))
	head = binary.AppendUvarint(head, uint64(srcDB+1))
	if srcDB >= 0 {
		head = binary.AppendUvarint(head, uint64(len(src)))
		head = append(head, src...)
	}
	return newWholeRecord(recPlace, db, key, head, rec)
}

// newWholeRecord makes a record whose key record dump goes after the key
// and head.
func newWholeRecord(kind byte, db int, key string, head, dump []byte) wholeRecord {
	prefix := make([]byte, 0, 2+2*binary.MaxVarintLen64)
	if db != 0 {
		prefix = append(prefix, recInDB)
		prefix = binary.AppendUvarint(prefix, uint64(db))
	}
	prefix = append(prefix, kind)
	prefix = binary.AppendUvarint(prefix, uint64(len(key)))
	r := wholeRecord{prefix: prefix, head: head, dump: dump, key: key}
	if np := uint64(len(prefix) + len(head) + len(key)); np+uint64(len(dump)) > maxLoadBody {
		r.err = fmt.Errorf("a dump of %d bytes is too large for the append-only log (at most %d)", len(dump), maxLoadBody-np)
		return r
	}
	sum := xxh3.New()
	sum.Write(prefix)
	sum.WriteString(key)
	sum.Write(head)
	sum.Write(dump)
	r.sum = sum.Sum64()
	return r
}

// appendWhole logs a record newWholeRecord made.
func (l *appendLog) appendWhole(r wholeRecord) (uint64, error) {
	if r.err != nil {
		return 0, r.err
	}
	body := uint64(len(r.prefix)+len(r.head)+len(r.key)) + uint64(len(r.dump))
	le := binary.LittleEndian
	l.mu.Lock()
	defer l.mu.Unlock()
	start := len(l.buf)
	l.buf = le.AppendUint32(l.buf, uint32(body))
	l.buf = le.AppendUint32(l.buf, ^uint32(body))
	l.buf = append(l.buf, r.prefix...)
	l.buf = append(l.buf, r.key...)
	l.buf = append(l.buf, r.head...)
	l.loads = append(l.loads, loadPiece{at: len(l.buf), data: r.dump})
	l.buf = le.AppendUint64(l.buf, r.sum)
	return l.appendedLocked(uint64(len(l.buf)-start) + uint64(len(r.dump))), nil
}

// await returns once the change whose record ends at pos may be
// acknowledged: under always when the record is durable; under everysec
// at once, unless a record older than stallAfter is not yet fsynced or
// the buffer is over maxBuffered, and then when the flusher has caught
// up; and if the record does not fit in the space reserved for the log
// (reserve.go), once it is durable. A change made while the log is
// failing, or has no space reserved left (a DEL, a FLUSHALL: the others
// are refused), waits, under every policy, until its record is durable:
// the log is written again, or a save completes, first (one try each).
// It returns the log's error if the record did not become durable (a
// write failed, or the try): the change must not be acknowledged.
func (l *appendLog) await(pos uint64) error {
	if l.policy() != fsyncAlways && !l.refusing() && pos <= l.fitPos.Load() && l.buffered.Load() <= maxBuffered && !l.stalled() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	strict, mayRecover := l.policy() == fsyncAlways || l.err != nil || l.shortNow, l.err != nil
	for {
		switch {
		case l.durable >= pos:
			return nil
		case !strict && l.err == nil && pos <= l.fitPos.Load() && int64(len(l.buf)) <= maxBuffered && !l.stalledLocked():
			return nil
		case l.flushing:
			counted := l.policy() != fsyncAlways
			if counted {
				l.stalledWriters.Add(1)
			}
			l.cond.Wait()
			if counted {
				l.stalledWriters.Add(-1)
			}
		case l.err != nil:
			if !mayRecover {
				return l.err
			}
			mayRecover = false
			l.mu.Unlock()
			l.tryRecover()
			l.mu.Lock()
		default:
			l.flushLocked(l.policy() != fsyncNo)
		}
	}
}

// logWaiter is a connection whose replies wait for the log: logDone
// tells it that they may go, or, with the log's error, that they must not.
// It is called from the flusher's goroutine and must not block.
type logWaiter interface{ logDone(err error) }

type pendingWait struct {
	pos uint64
	w   logWaiter
	// strict says the replies go only once pos is durable: under always,
	// and for every policy while the log is failing or has no space
	// reserved left (a record past the reservation waits so too, strict
	// or not). recover says the
	// change was made while it was failing: the flusher tries to end the
	// failure before it gives up on the replies. counted: it is counted in
	// stalledWriters (for the tests).
	strict, recover, counted bool
}

// awaitAsync is await for an event loop, which must not block. If the
// replies of the change ending at pos may go now it reports wait false.
// Otherwise it registers w, which the flusher calls once they may, or
// with the log's error if they must not go at all.
func (l *appendLog) awaitAsync(pos uint64, w logWaiter) (wait bool, err error) {
	if l.policy() != fsyncAlways && !l.refusing() && pos <= l.fitPos.Load() && l.buffered.Load() <= maxBuffered && !l.stalled() {
		return false, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.durable >= pos {
		return false, nil
	}
	strict := l.policy() == fsyncAlways || l.err != nil || l.shortNow
	if !strict && pos <= l.fitPos.Load() && int64(len(l.buf)) <= maxBuffered && !l.stalledLocked() {
		return false, nil
	}
	counted := l.policy() != fsyncAlways
	if counted {
		l.stalledWriters.Add(1)
	}
	l.waiters = append(l.waiters, pendingWait{pos, w, strict, l.err != nil, counted})
	select {
	case l.demand <- struct{}{}:
	default:
	}
	return true, nil
}

// serveWaiters is the flusher's work for the waiting connections: it
// writes (and syncs) until they may be answered, and wakes them. Under
// always, each round fsyncs for every connection waiting, and wakes those
// whose records it made durable (group commit). When the log fails, the
// ones waiting on it are woken with the error; those that made their
// change while it was failing first see one try to end the failure.
func (l *appendLog) serveWaiters() {
	l.mu.Lock()
	defer l.mu.Unlock()
	tried := false
	for len(l.waiters) > 0 {
		if l.flushing {
			l.cond.Wait() // a save's rotation, or a blocking writer's flush
			continue
		}
		stalled := int64(len(l.buf)) > maxBuffered || l.stalledLocked()
		var failed []pendingWait // woken with the error: rare
		done, keep := l.releasing[:0], l.waiters[:0]
		for _, pw := range l.waiters {
			switch {
			case pw.pos <= l.durable || !pw.strict && l.err == nil && !stalled && pw.pos <= l.fitPos.Load():
				done = append(done, pw)
			case l.err != nil && !(pw.recover && !tried):
				failed = append(failed, pw)
			default:
				keep = append(keep, pw)
			}
		}
		clear(l.waiters[len(keep):])
		l.waiters = keep
		if len(done) == 0 && len(failed) == 0 {
			if l.err == nil {
				l.flushLocked(l.policy() != fsyncNo)
				continue
			}
			tried = true
			l.mu.Unlock()
			l.tryRecover()
			l.mu.Lock()
			continue
		}
		err := l.err
		l.mu.Unlock()
		for _, pw := range done {
			if pw.counted {
				l.stalledWriters.Add(-1)
			}
			pw.w.logDone(nil)
		}
		for _, pw := range failed {
			if pw.counted {
				l.stalledWriters.Add(-1)
			}
			pw.w.logDone(err)
		}
		clear(done)
		l.mu.Lock()
		l.releasing = done[:0]
	}
}

// tryRecover is one attempt to end a failure: write what waits (the disk
// may have room again), and if that fails, save.
func (l *appendLog) tryRecover() {
	if l.flush(true) == nil || l.recover == nil {
		return
	}
	if err := l.recover(); err != nil {
		l.logger.Error("saving to recover the append-only log", "err", err)
	}
}

func (l *appendLog) stalled() bool {
	if l.policy() != fsyncEverysec {
		return false
	}
	o := time.Duration(l.oldest.Load())
	return o != 0 && l.clock()-o > stallAfter
}

func (l *appendLog) stalledLocked() bool {
	if l.policy() != fsyncEverysec {
		return false
	}
	o := l.pendingSince
	if l.unsyncedSince != 0 && (o == 0 || l.unsyncedSince < o) {
		o = l.unsyncedSince
	}
	return o != 0 && l.clock()-o > stallAfter
}

// batch is what a flush takes from the buffer: records, the dumps of
// loads among them, the position after them, how many of their bytes are
// in the segment already, and the age of the oldest.
type batch struct {
	buf   []byte
	loads []loadPiece
	end   uint64
	skip  int64
	since time.Duration
}

func (b *batch) size() int64 {
	n := int64(len(b.buf))
	for _, p := range b.loads {
		n += int64(len(p.data))
	}
	return n
}

// flushLocked is flushGrowLocked that tries again to extend the
// reservation if no space is reserved left: the change waiting for it may
// have freed some (a DEL, a FLUSHALL).
func (l *appendLog) flushLocked(sync bool) { l.flushGrowLocked(sync, l.shortNow) }

// flushGrowLocked takes the flush token and the buffer, extends the
// reservation if it runs low (retry: also if the last try fell short),
// writes the buffer (and syncs with sync) without the lock, and takes the
// lock back. l.mu is held and no flush is running. A write that fails
// keeps every record it took, to be written on the next try (which goes
// on where this one stopped) or, if the segment cannot be trusted, to go
// to the next segment.
func (l *appendLog) flushGrowLocked(sync, retry bool) {
	l.flushing = true
	b := l.takeLocked()
	sticky := l.sticky
	from, to := l.growWantedLocked(retry)
	l.mu.Unlock()
	var grown int64
	var gerr error
	if to > from {
		grown, gerr = growReserve(l.f, from, to)
	}
	var wrote int64
	var werr, serr error
	if !sticky {
		wrote, werr = l.writeOut(b.buf, b.loads, b.skip)
		if werr == nil && sync && l.size > l.syncedSize {
			if serr = l.f.Sync(); serr == nil {
				l.syncedSize = l.size
				l.syncs.Add(1)
				l.man.markSynced(l.gen, l.size)
			}
		}
	}
	// After a failed write the segment must hold exactly what was
	// written, for the next write to go on from it.
	resumable := werr == nil || l.sizeIs(l.size)
	l.mu.Lock()
	l.flushing = false
	if to > from {
		l.grownLocked(grown, gerr)
	}
	switch {
	case sticky:
		l.putBackLocked(b, 0)
	case werr != nil || serr != nil:
		l.putBackLocked(b, wrote)
		// A failed fsync may have dropped what it was to write: the
		// kernel can mark the pages clean. The segment is not trusted
		// again, and only a save ends the failure.
		lost := serr != nil || !resumable
		if lost {
			l.sticky = true
		}
		l.failLocked(errors.Join(werr, serr), lost)
	default:
		l.giveBackLocked(b.buf)
		l.written = b.end
		if sync {
			l.unsyncedSince = 0
		}
		if sync || l.policy() == fsyncNo {
			l.durable = max(l.durable, b.end)
		}
		l.recoveredLocked()
	}
	l.base, l.resEnd = l.size, max(l.resEnd, l.size)
	l.refitLocked(l.bufferedLocked())
	l.mirrorLocked()
	l.cond.Broadcast()
}

// sizeIs reports whether the segment's file is size bytes long. The flush
// token's holder calls it.
func (l *appendLog) sizeIs(size int64) bool {
	st, err := l.f.Stat()
	return err == nil && st.Size() == size
}

// recoveredLocked ends a failure once everything it held back is written,
// unless it may have lost records (then only a save ends it).
func (l *appendLog) recoveredLocked() {
	if l.err != nil && !l.errLost && !l.sticky {
		l.logger.Info("append-only log recovered: the records that waited are written", "segment", segmentPath(l.dir, l.gen))
		l.err = nil
		l.failed.Store(false)
	}
}

func (l *appendLog) takeLocked() batch {
	b := batch{buf: l.buf, loads: l.loads, end: l.appended, skip: l.skip, since: l.pendingSince}
	l.base = l.size + b.size() - b.skip
	l.buf, l.loads, l.spare, l.woken, l.skip = l.spare[:0], nil, nil, false, 0
	if l.pendingSince != 0 {
		if l.unsyncedSince == 0 {
			l.unsyncedSince = l.pendingSince
		}
		l.pendingSince = 0
	}
	l.buffered.Store(0)
	return b
}

// putBackLocked returns a batch that was not written, of which wrote more
// bytes are now in the segment, to the front of the buffer.
func (l *appendLog) putBackLocked(b batch, wrote int64) {
	shift := len(b.buf)
	for _, p := range l.loads {
		p.at += shift
		b.loads = append(b.loads, p)
	}
	l.buf, l.loads = append(b.buf, l.buf...), b.loads
	l.skip = b.skip + wrote
	if b.since != 0 && (l.pendingSince == 0 || b.since < l.pendingSince) {
		l.pendingSince = b.since
	}
	l.buffered.Store(l.bufferedLocked())
}

func (l *appendLog) bufferedLocked() int64 {
	b := batch{buf: l.buf, loads: l.loads}
	return b.size()
}

// dropFrontLocked drops the first n bytes of the buffer (loads counted),
// whole records that a completed save holds.
func (l *appendLog) dropFrontLocked(n int64) {
	consumed, prevAt, cut, first := int64(0), 0, -1, len(l.loads)
	for i, p := range l.loads {
		if bufBytes := int64(p.at - prevAt); consumed+bufBytes >= n {
			cut, first = prevAt+int(n-consumed), i
			break
		} else {
			consumed += bufBytes + int64(len(p.data))
		}
		prevAt = p.at
	}
	if cut < 0 {
		cut = prevAt + int(n-consumed)
	}
	loads := l.loads[:0]
	for _, p := range l.loads[first:] {
		p.at -= cut
		loads = append(loads, p)
	}
	l.buf = append(l.buf[:0], l.buf[cut:]...)
	l.loads = loads
	l.buffered.Store(l.bufferedLocked())
}

func (l *appendLog) giveBackLocked(buf []byte) {
	if cap(buf) <= maxSpare {
		l.spare = buf[:0]
	}
}

// writeOut writes records to the segment, leaving out the first skip
// bytes (written already), and returns how many bytes it wrote. A write
// that fails leaves the segment ending inside a record; the next write
// goes on from there, or, if the segment is given up, the manifest
// records where its whole records end (rotate).
func (l *appendLog) writeOut(buf []byte, loads []loadPiece, skip int64) (int64, error) {
	if fault := logFault.Load(); fault != nil {
		if err := (*fault)(); err != nil {
			return 0, err
		}
	}
	var wrote int64
	write := func(b []byte) error {
		if skip >= int64(len(b)) {
			skip -= int64(len(b))
			return nil
		}
		b, skip = b[skip:], 0
		n, err := fileWrite(l.f, b)
		l.size += int64(n)
		wrote += int64(n)
		return err
	}
	at := 0
	for _, p := range loads {
		if err := write(buf[at:p.at]); err != nil {
			return wrote, err
		}
		if err := write(p.data); err != nil {
			return wrote, err
		}
		at = p.at
	}
	return wrote, write(buf[at:])
}

// logFault, set by tests, runs before the log's writes: it fails them as
// a failing disk would, or holds them as a stalled disk would.
var logFault atomic.Pointer[func() error]

// failLocked makes the log refuse changes until the records it holds are
// written (lost false) or a save completes.
func (l *appendLog) failLocked(err error, lost bool) {
	if l.err == nil {
		l.logger.Error("append-only log write failed: changes are refused until it can be written again or a save succeeds; the records not yet written are kept", "segment", segmentPath(l.dir, l.gen), "err", err)
		l.errLost = false
	}
	l.err, l.errGen = err, l.gen
	l.errLost = l.errLost || lost
	l.failed.Store(true)
}

// rotate ends the current segment and starts the next: the records
// appended before it are written (and synced) to the old segment, those
// after go to the new one. The new segment, its space reserved, exists
// before any record is meant for it; the manifest records the move, and
// where the old segment ends, before any record goes there. If the old
// segment cannot take its records, they go to the new one, ahead of the
// others: the log stays one history in order. It returns the new
// segment's number. Saves rotate one at a time, and only they change the
// segment once the log is open.
func (l *appendLog) rotate() (uint64, error) {
	// The new segment is made before the flush token is taken: making it
	// durable costs two fsyncs, which flushes (and the commands waiting
	// on them under always) need not wait for. An empty segment past the
	// manifest's is what a start expects of a rotation cut short.
	gen := l.genNow.Load() + 1
	nf, err := createSegment(l.dir, gen)
	nres, nerr := int64(segmentHeader), error(nil)
	if err == nil && l.reserveOn {
		nres, nerr = growReserve(nf, segmentHeader, segmentHeader+reserveStep)
	}
	l.mu.Lock()
	for l.flushing {
		l.cond.Wait()
	}
	l.flushing = true
	b := l.takeLocked()
	sticky := l.sticky
	if err == nil && l.reserveOn {
		// Until the manifest records the move, a record must fit in
		// both segments: if the move fails, it goes to the old one.
		l.old = &oldReserve{base: l.base, resEnd: l.resEnd, growErr: l.growErr}
		l.base, l.resEnd, l.growErr = segmentHeader, nres, nerr
		l.refitLocked(0)
	}
	l.mu.Unlock()
	var wrote int64
	var werr, serr error
	if !sticky {
		wrote, werr = l.writeOut(b.buf, b.loads, b.skip)
		if werr == nil && l.size > l.syncedSize {
			if serr = l.f.Sync(); serr == nil {
				l.syncedSize = l.size
				l.man.markSynced(l.gen, l.size)
			}
		}
	}
	carry := sticky || werr != nil || serr != nil
	end := l.size // where the old segment's whole records end
	inFile := b.skip + wrote
	if carry {
		end -= inFile
	}
	if carry && !sticky && serr == nil {
		// The manifest is about to say where the old segment ends: the
		// records before that must be durable (a write failed, and those
		// written since the last fsync may not be), and the part of a
		// record after it goes.
		if l.size > end && l.f.Truncate(end) == nil {
			l.size, inFile = end, 0
		}
		if serr = l.f.Sync(); serr == nil {
			l.syncedSize = l.size
		}
	}
	if err == nil {
		if err = l.man.moveTo(gen, end); err != nil {
			nf.Close()
			os.Remove(segmentPath(l.dir, gen))
		}
	}
	if err != nil {
		l.mu.Lock()
		l.flushing = false
		if o := l.old; o != nil {
			l.resEnd, l.growErr, l.old = o.resEnd, o.growErr, nil
		}
		if carry {
			l.putBackLocked(b, inFile-b.skip)
			if !sticky {
				lost := serr != nil || !l.sizeIs(l.size)
				l.sticky = lost
				l.failLocked(errors.Join(werr, serr), lost)
			}
		} else {
			l.giveBackLocked(b.buf)
			l.written, l.durable, l.unsyncedSince = b.end, max(l.durable, b.end), 0
			l.recoveredLocked()
		}
		l.base, l.resEnd = l.size, max(l.resEnd, l.size)
		l.refitLocked(l.bufferedLocked())
		l.mirrorLocked()
		l.cond.Broadcast()
		l.mu.Unlock()
		return 0, err
	}
	if carry && l.size > end || l.reserveOn {
		// At best: the manifest says where it ends. The cut also drops
		// the blocks reserved past the end.
		releaseReserve(l.f, end)
	}
	if l.reserveOn && nerr != nil {
		// The blocks the old segment gave back may be what the new
		// one lacked.
		nres, nerr = growReserve(nf, nres, segmentHeader+reserveStep)
	}
	l.f.Close()
	l.f, l.gen, l.size, l.syncedSize = nf, gen, segmentHeader, segmentHeader
	l.genNow.Store(gen)
	l.mu.Lock()
	l.flushing, l.sticky, l.rotatedAt = false, false, b.end
	l.old, l.base = nil, segmentHeader
	if l.reserveOn {
		l.resEnd, l.growErr = max(l.resEnd, nres), nerr
	}
	if carry {
		l.putBackLocked(b, 0)
		l.skip = 0 // the new segment holds none of them
		if !sticky {
			l.failLocked(errors.Join(werr, serr), serr != nil)
			l.errGen = gen - 1
		}
	} else {
		l.giveBackLocked(b.buf)
		l.written, l.durable, l.unsyncedSince = b.end, max(l.durable, b.end), 0
		l.recoveredLocked()
	}
	l.refitLocked(l.bufferedLocked())
	l.mirrorLocked()
	l.cond.Broadcast()
	l.mu.Unlock()
	return gen, nil
}

// cleared is told that the save that rotated to gen completed: every
// change before the rotation is in the snapshot, so its records are
// durable whether written or not (those still waiting are dropped), and a
// failure that hit a segment before gen is over.
func (l *appendLog) cleared(gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.flushing {
		l.cond.Wait()
	}
	if l.gen != gen {
		return
	}
	if l.durable < l.rotatedAt {
		if start := l.appended - uint64(l.bufferedLocked()); l.skip == 0 && start < l.rotatedAt {
			l.dropFrontLocked(int64(l.rotatedAt - start))
		}
		l.durable = l.rotatedAt
		l.written = max(l.written, l.rotatedAt)
		l.refitLocked(l.bufferedLocked())
	}
	if l.err != nil && l.errGen < gen {
		l.logger.Info("append-only log recovered by a save", "segment", segmentPath(l.dir, gen))
		l.err = nil
		l.errLost = false
		l.failed.Store(false)
	}
	l.mirrorLocked()
	l.cond.Broadcast()
}

func (l *appendLog) currentGen() uint64 { return l.genNow.Load() }

// removeBefore removes the segments before gen, oldest first, so that the
// ones left are always a whole suffix of the history.
func (l *appendLog) removeBefore(gen uint64) error { return removeSegments(l.dir, gen) }

func removeSegments(dir string, before uint64) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	removed := false
	for _, ent := range ents { // ReadDir sorts by name: by gen
		name := ent.Name()
		if !segmentName.MatchString(name) {
			continue
		}
		var gen uint64
		fmt.Sscanf(name, "appendonly-%016x.ohbl", &gen)
		if gen >= before {
			break
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("removing a compacted log segment: %w", err)
		}
		removed = true
	}
	if removed {
		return syncDir(dir)
	}
	return nil
}

// run is the background flusher.
func (l *appendLog) run() {
	defer close(l.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastRecovery time.Time
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
			// A failed write is tried again here every second; a save,
			// the heavier way out (the only one after a failed fsync),
			// every 10 s from the failure on.
			l.flush(l.policy() != fsyncNo)
			switch {
			case !l.failed.Load():
				lastRecovery = time.Now()
			case l.recover != nil && time.Since(lastRecovery) >= 10*time.Second:
				lastRecovery = time.Now()
				if err := l.recover(); err != nil {
					l.logger.Error("saving to recover the append-only log", "err", err)
				}
			}
		case <-l.wake:
			l.flushWith(false, false)
		case <-l.demand:
		}
		l.serveWaiters()
	}
}

// flush writes what is waiting, and syncs with sync; it also tries to
// extend the reservation if the last try fell short (the flusher's
// second).
func (l *appendLog) flush(sync bool) error { return l.flushWith(sync, true) }

func (l *appendLog) flushWith(sync, retry bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.flushing {
		l.cond.Wait()
	}
	if len(l.buf) > 0 || len(l.loads) > 0 || (sync && l.size > l.syncedSize) || retry && l.growErr != nil {
		l.flushGrowLocked(sync, retry)
	}
	return l.err
}

// close flushes and syncs what is waiting and closes the segment.
// Connections still waiting (their loops have stopped) are told that the
// log closed.
func (l *appendLog) close() error {
	close(l.stop)
	<-l.done
	err := l.flush(l.policy() != fsyncNo)
	l.mu.Lock()
	waiters := l.waiters
	l.waiters = nil
	l.mu.Unlock()
	for _, pw := range waiters {
		if pw.counted {
			l.stalledWriters.Add(-1)
		}
		pw.w.logDone(errors.New("the append-only log was closed"))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.flushing {
		l.cond.Wait()
	}
	if l.reserveOn && !l.sticky {
		// The blocks reserved past the end are not needed while the
		// server is down.
		err = errors.Join(err, releaseReserve(l.f, l.size))
	}
	return errors.Join(err, l.f.Close())
}

// logWait is what a connection's pending replies wait for in the log.
type logWait struct {
	// pos is the log position the replies not yet sent depend on.
	pos uint64
	// deferred is set by a network layer that calls Server.syncLog
	// before it writes replies: pipelined changes then share one wait.
	// Otherwise each command waits before it replies.
	deferred bool
}

// commit makes the replies of a change whose record ends at pos wait for
// it, as the fsync policy says: at once (and an error if the log failed),
// or, on a deferred connection, at its next syncLog.
func (s *Server) commit(sess *session, pos uint64) error {
	if s.store.log == nil {
		return nil
	}
	sess.log.pos = max(sess.log.pos, pos)
	if sess.log.pos == 0 || sess.log.deferred {
		return nil
	}
	return s.syncLog(sess)
}

// commitOK is commit, then the reply of a command that says OK once its
// change is as durable as the policy asks, or the log's error.
func (s *Server) commitOK(sess *session, w replier, pos uint64) {
	if err := s.commit(sess, pos); err != nil {
		w.WriteError(logFailed(err))
		return
	}
	w.WriteString("OK")
}

// noteLog records a position the connection's replies depend on, to be
// waited for by the command's commit.
func noteLog(sess *session, pos uint64) { sess.log.pos = max(sess.log.pos, pos) }

// awaitLog is syncLog for an event loop, which must not block: wait
// false means the replies may go now (unless err), wait true that w is
// woken once they may.
func (s *Server) awaitLog(sess *session, w logWaiter) (wait bool, err error) {
	pos := sess.log.pos
	sess.log.pos = 0
	if pos == 0 || s.store.log == nil {
		return false, nil
	}
	return s.store.log.awaitAsync(pos, w)
}

// syncLog waits until the changes of the connection's pending replies may
// be acknowledged. The network layer calls it, on a deferred connection,
// after a batch of commands and before it writes their replies; on an
// error it must close the connection without writing them: under always,
// their changes may not be durable.
func (s *Server) syncLog(sess *session) error {
	pos := sess.log.pos
	sess.log.pos = 0
	if pos == 0 || s.store.log == nil {
		return nil
	}
	return s.store.log.await(pos)
}

// logFailed is the reply to a change the log could not make durable.
func logFailed(err error) string {
	return "ERR the append-only log could not be written, so this change may not survive a restart: " + oneLine(err.Error())
}
