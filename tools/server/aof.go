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
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
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

// appendLog is the writer of the log. Its methods are safe for concurrent
// use.
type appendLog struct {
	dir    string
	policy fsyncPolicy
	logger *slog.Logger
	epoch  time.Time
	// recover is called by the flusher while the log is failing, to save
	// every key and start a new segment.
	recover func() error

	mu       sync.Mutex
	cond     sync.Cond // on mu: a flush ended, or the log failed
	buf      []byte    // records not yet taken by a flush
	loads    []loadPiece
	spare    []byte
	appended uint64 // position: bytes of records appended since start
	written  uint64 // position handed to write(2)
	durable  uint64 // position fsynced (under no: written)
	// pendingSince and unsyncedSince are the ages (since epoch, +1 so
	// that 0 means none) of the oldest record in buf and of the oldest
	// written but not fsynced.
	pendingSince, unsyncedSince time.Duration
	flushing                    bool // the flush token: its holder owns f, gen, size
	woken                       bool
	err                         error  // sticky until a save clears it
	errGen                      uint64 // the segment the error hit

	f          *os.File
	gen        uint64
	size       int64 // bytes of f that hold whole records
	syncedSize int64

	// Mirrors of the state above for the lock-free checks of the command
	// path.
	oldest   atomic.Int64 // the older of pendingSince and unsyncedSince
	tail     atomic.Uint64
	buffered atomic.Int64
	failed   atomic.Bool
	genNow   atomic.Uint64

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

// loadPiece is a load record's dump, written from where LOADCHUNK keeps it
// rather than copied into the buffer: it goes after buf[:at].
type loadPiece struct {
	at   int
	data []byte
}

// openLog opens the newest segment for appending (after replay), or
// starts segment 1, and starts the flusher.
func openLog(dir string, policy fsyncPolicy, segs []segmentFile, logger *slog.Logger) (*appendLog, error) {
	l := &appendLog{dir: dir, policy: policy, logger: logger, epoch: time.Now(),
		wake: make(chan struct{}, 1), demand: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	l.cond.L = &l.mu
	if len(segs) == 0 {
		f, err := createSegment(dir, 1)
		if err != nil {
			return nil, fmt.Errorf("server: starting the append-only log: %w", err)
		}
		l.f, l.gen = f, 1
	} else {
		last := segs[len(segs)-1]
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
	go l.run()
	return l, nil
}

// createSegment makes segment gen durably: its header is written and
// synced in a temporary file, renamed into place, and the directory
// synced, so that a segment exists whole or not at all.
func createSegment(dir string, gen uint64) (*os.File, error) {
	path := segmentPath(dir, gen)
	if err := replaceable(path); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	head := make([]byte, segmentHeader)
	copy(head, segmentMagic)
	binary.LittleEndian.PutUint64(head[8:], gen)
	if _, err = tmp.Write(head); err == nil {
		if err = tmp.Sync(); err == nil {
			if err = os.Rename(tmp.Name(), path); err == nil {
				err = syncDir(dir)
			}
		}
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return tmp, nil
}

func (l *appendLog) clock() time.Duration {
	if now := l.testClock.Load(); now != nil {
		return (*now)()
	}
	return time.Since(l.epoch) + 1
}

// begin starts a record in buf and returns where.
func begin[K ~string | ~[]byte](l *appendLog, kind byte, key K) int {
	start := len(l.buf)
	l.buf = append(l.buf, 0, 0, 0, 0, 0, 0, 0, 0, kind)
	if kind != recFlushAll {
		l.buf = binary.AppendUvarint(l.buf, uint64(len(key)))
		l.buf = append(l.buf, key...)
	}
	return start
}

// seal writes the record's length and checksum and returns the position
// after it.
func (l *appendLog) seal(start int) uint64 {
	body := l.buf[start+8:]
	n := uint32(len(body))
	binary.LittleEndian.PutUint32(l.buf[start:], n)
	binary.LittleEndian.PutUint32(l.buf[start+4:], ^n)
	l.buf = binary.LittleEndian.AppendUint64(l.buf, xxh3.Hash(body))
	return l.appendedLocked(uint64(len(l.buf) - start))
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

// appendHashes logs adds (recBloomAdd; seq unused) or a CF key's adds
// (recCountingAdd, numbered from seq), at most hashesPerRecord of them.
func (l *appendLog) appendHashes(kind byte, key []byte, seq uint64, hs []uint64) uint64 {
	l.mu.Lock()
	start := begin(l, kind, key)
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

func (l *appendLog) appendRemove(key []byte, seq, h uint64) uint64 {
	l.mu.Lock()
	start := begin(l, recCountingRemove, key)
	l.buf = binary.LittleEndian.AppendUint64(l.buf, seq)
	l.buf = binary.LittleEndian.AppendUint64(l.buf, h)
	pos := l.seal(start)
	l.mu.Unlock()
	return pos
}

func (l *appendLog) appendCreate(key string, e *entry) uint64 {
	le := binary.LittleEndian
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.kind == kindCounting {
		start := begin(l, recCreateCounting, key)
		l.buf = le.AppendUint64(l.buf, e.capacity)
		l.buf = le.AppendUint64(l.buf, math.Float64bits(e.errorRate))
		l.buf = le.AppendUint64(l.buf, e.seed)
		return l.seal(start)
	}
	if e.kind == kindRedisBloom {
		start := begin(l, recCreateRB, key)
		_, l.buf = e.rb.ScanDump(0, l.buf)
		return l.seal(start)
	}
	start := begin(l, recCreateBloom, key)
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
func (l *appendLog) appendRBAdds(key []byte, seq uint64, pairs [][2]uint64) uint64 {
	le := binary.LittleEndian
	l.mu.Lock()
	start := begin(l, recRBAdd, key)
	l.buf = le.AppendUint64(l.buf, seq)
	for _, p := range pairs {
		l.buf = le.AppendUint64(l.buf, p[0])
		l.buf = le.AppendUint64(l.buf, p[1])
	}
	pos := l.seal(start)
	l.mu.Unlock()
	return pos
}

// appendRBChunk logs a BF.LOADCHUNK data chunk of a RedisBloom key as
// records of at most rbChunkPiece bytes, numbered from seq, and returns
// the position after the last and how many it wrote. A piece at bytes
// [p, p+n) of the chain is the chunk of iterator p + n + 1.
func (l *appendLog) appendRBChunk(key []byte, seq uint64, iter int64, data []byte) (uint64, uint64) {
	le := binary.LittleEndian
	start := uint64(iter) - uint64(len(data)) - 1 // the chunk's first byte; LoadChunk checked it
	var pos, n uint64
	l.mu.Lock()
	for off := 0; off < len(data); off += rbChunkPiece {
		piece := data[off:min(len(data), off+rbChunkPiece)]
		at := begin(l, recRBChunk, key)
		l.buf = le.AppendUint64(l.buf, seq+n)
		l.buf = le.AppendUint64(l.buf, start+uint64(off)+uint64(len(piece))+1)
		l.buf = append(l.buf, piece...)
		pos = l.seal(at)
		n++
	}
	l.mu.Unlock()
	return pos, n
}

func (l *appendLog) appendDelete(key string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seal(begin(l, recDelete, key))
}

func (l *appendLog) appendFlushAll() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seal(begin(l, recFlushAll, ""))
}

// appendLoad logs a LOADCHUNK'd key with its dump, which the log keeps (and
// the caller must not change) until it is written. The checksum is
// computed before the lock is taken.
func (l *appendLog) appendLoad(key string, dump []byte) (uint64, error) {
	var prefix [1 + binary.MaxVarintLen64]byte
	prefix[0] = recLoad
	np := 1 + binary.PutUvarint(prefix[1:], uint64(len(key)))
	body := uint64(np) + uint64(len(key)) + uint64(len(dump))
	if body > maxLoadBody {
		return 0, fmt.Errorf("a dump of %d bytes is too large for the append-only log (at most %d)", len(dump), maxLoadBody-uint64(np+len(key)))
	}
	sum := xxh3.New()
	sum.Write(prefix[:np])
	sum.WriteString(key)
	sum.Write(dump)
	le := binary.LittleEndian
	l.mu.Lock()
	defer l.mu.Unlock()
	start := len(l.buf)
	l.buf = le.AppendUint32(l.buf, uint32(body))
	l.buf = le.AppendUint32(l.buf, ^uint32(body))
	l.buf = append(l.buf, prefix[:np]...)
	l.buf = append(l.buf, key...)
	l.loads = append(l.loads, loadPiece{at: len(l.buf), data: dump})
	l.buf = le.AppendUint64(l.buf, sum.Sum64())
	return l.appendedLocked(uint64(len(l.buf)-start) + uint64(len(dump))), nil
}

// await returns once the change whose record ends at pos may be
// acknowledged: under always when the record is fsynced; under everysec
// at once, unless a record older than stallAfter is not yet fsynced or
// the buffer is over maxBuffered, and then when the flusher has caught up.
// It returns the log's error under always if the record may not be
// durable.
func (l *appendLog) await(pos uint64) error {
	if l.policy == fsyncAlways {
		return l.waitDurable(pos)
	}
	if l.buffered.Load() <= maxBuffered && !l.stalled() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.err == nil && (int64(len(l.buf)) > maxBuffered || l.stalledLocked()) {
		if !l.flushing {
			l.flushLocked(l.policy == fsyncEverysec)
			continue
		}
		l.stalledWriters.Add(1)
		l.cond.Wait()
		l.stalledWriters.Add(-1)
	}
	return nil
}

// logWaiter is a connection whose replies wait for the log: logDone
// tells it that they may go, or, with the log's error, that they must not.
// It is called from the flusher's goroutine and must not block.
type logWaiter interface{ logDone(err error) }

type pendingWait struct {
	pos uint64
	w   logWaiter
}

// awaitAsync is await for an event loop, which must not block. If the
// replies of the change ending at pos may go now it reports wait false
// (and, under always, the log's error if they must not go at all).
// Otherwise it registers w, which the flusher calls once they may go, or
// with the log's error.
func (l *appendLog) awaitAsync(pos uint64, w logWaiter) (wait bool, err error) {
	if l.policy != fsyncAlways && l.buffered.Load() <= maxBuffered && !l.stalled() {
		return false, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.policy == fsyncAlways {
		switch {
		case l.err != nil:
			return false, l.err
		case l.durable >= pos:
			return false, nil
		}
	} else if l.err != nil || !(int64(len(l.buf)) > maxBuffered || l.stalledLocked()) {
		return false, nil // as await: no wait once the log has failed
	} else {
		l.stalledWriters.Add(1)
	}
	l.waiters = append(l.waiters, pendingWait{pos, w})
	select {
	case l.demand <- struct{}{}:
	default:
	}
	return true, nil
}

// serveWaiters is the flusher's work for the waiting connections: it
// writes (and syncs) until they may be answered, and wakes them. Under
// always, each round fsyncs for every connection waiting, and wakes those
// whose records it made durable (group commit).
func (l *appendLog) serveWaiters() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.waiters) > 0 {
		if l.flushing {
			l.cond.Wait() // a save's rotation, or a blocking writer's flush
			continue
		}
		done := l.releasing[:0]
		var err error
		if l.policy == fsyncAlways {
			if err = l.err; err != nil {
				done = append(done, l.waiters...)
				clear(l.waiters)
				l.waiters = l.waiters[:0]
			} else {
				keep := l.waiters[:0]
				for _, pw := range l.waiters {
					if pw.pos <= l.durable {
						done = append(done, pw)
					} else {
						keep = append(keep, pw)
					}
				}
				clear(l.waiters[len(keep):])
				l.waiters = keep
			}
			if len(done) == 0 {
				l.flushLocked(true)
				continue
			}
		} else {
			if l.err == nil && (int64(len(l.buf)) > maxBuffered || l.stalledLocked()) {
				l.flushLocked(l.policy == fsyncEverysec)
				continue
			}
			done = append(done, l.waiters...)
			clear(l.waiters)
			l.waiters = l.waiters[:0]
		}
		l.mu.Unlock()
		for _, pw := range done {
			if l.policy != fsyncAlways {
				l.stalledWriters.Add(-1)
			}
			pw.w.logDone(err)
		}
		clear(done)
		l.mu.Lock()
		l.releasing = done[:0]
	}
}

func (l *appendLog) stalled() bool {
	if l.policy != fsyncEverysec {
		return false
	}
	o := time.Duration(l.oldest.Load())
	return o != 0 && l.clock()-o > stallAfter
}

func (l *appendLog) stalledLocked() bool {
	if l.policy != fsyncEverysec {
		return false
	}
	o := l.pendingSince
	if l.unsyncedSince != 0 && (o == 0 || l.unsyncedSince < o) {
		o = l.unsyncedSince
	}
	return o != 0 && l.clock()-o > stallAfter
}

// waitDurable is the group commit of always.
func (l *appendLog) waitDurable(pos uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		switch {
		case l.err != nil:
			return l.err
		case l.durable >= pos:
			return nil
		case !l.flushing:
			l.flushLocked(true)
		default:
			l.cond.Wait()
		}
	}
}

// flushLocked takes the flush token and the buffer, writes it (and syncs
// with sync) without the lock, and takes the lock back. l.mu is held and
// no flush is running.
func (l *appendLog) flushLocked(sync bool) {
	l.flushing = true
	buf, loads, end := l.takeLocked()
	failed := l.err != nil
	l.mu.Unlock()
	var err error
	if !failed {
		err = l.writeOut(buf, loads)
		if err == nil && sync && l.size > l.syncedSize {
			if err = l.f.Sync(); err == nil {
				l.syncedSize = l.size
				l.syncs.Add(1)
			}
		}
	}
	l.mu.Lock()
	l.flushing = false
	l.giveBackLocked(buf)
	switch {
	case failed:
	case err != nil:
		l.failLocked(err)
	default:
		l.written = end
		if sync {
			l.unsyncedSince = 0
		}
		if sync || l.policy == fsyncNo {
			l.durable = end
		}
	}
	l.mirrorLocked()
	l.cond.Broadcast()
}

func (l *appendLog) takeLocked() ([]byte, []loadPiece, uint64) {
	buf, loads := l.buf, l.loads
	l.buf, l.loads, l.spare, l.woken = l.spare[:0], nil, nil, false
	if l.pendingSince != 0 {
		if l.unsyncedSince == 0 {
			l.unsyncedSince = l.pendingSince
		}
		l.pendingSince = 0
	}
	l.buffered.Store(0)
	return buf, loads, l.appended
}

func (l *appendLog) giveBackLocked(buf []byte) {
	if cap(buf) <= maxSpare {
		l.spare = buf[:0]
	}
}

// writeOut writes records to the segment. After a failed write the log
// refuses changes and never writes this segment again (a save starts the
// next), so a partial record can only be its last: a torn tail.
func (l *appendLog) writeOut(buf []byte, loads []loadPiece) error {
	if fault := logFault.Load(); fault != nil {
		if err := (*fault)(); err != nil {
			return err
		}
	}
	write := func(b []byte) error {
		n, err := l.f.Write(b)
		l.size += int64(n)
		return err
	}
	at := 0
	for _, p := range loads {
		if err := write(buf[at:p.at]); err != nil {
			return err
		}
		if err := write(p.data); err != nil {
			return err
		}
		at = p.at
	}
	return write(buf[at:])
}

// logFault, set by tests, runs before the log's writes: it fails them as
// a full disk would, or holds them as a stalled disk would.
var logFault atomic.Pointer[func() error]

// failLocked makes the log refuse changes until a save succeeds.
func (l *appendLog) failLocked(err error) {
	if l.err == nil {
		l.logger.Error("append-only log write failed: changes are refused until a save succeeds", "segment", segmentPath(l.dir, l.gen), "err", err)
	}
	l.err, l.errGen = err, l.gen
	l.failed.Store(true)
}

func (l *appendLog) failure() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		return ""
	}
	return l.err.Error()
}

// rotate ends the current segment and starts the next: the records
// appended before it are written (and synced) to the old segment, those
// after go to the new one. It returns the new segment's number.
func (l *appendLog) rotate() (uint64, error) {
	l.mu.Lock()
	for l.flushing {
		l.cond.Wait()
	}
	l.flushing = true
	gen := l.gen + 1
	l.mu.Unlock()
	nf, err := createSegment(l.dir, gen)
	l.mu.Lock()
	if err != nil {
		l.flushing = false
		l.cond.Broadcast()
		l.mu.Unlock()
		return 0, err
	}
	buf, loads, end := l.takeLocked()
	failed := l.err != nil
	l.mu.Unlock()
	// While the log is failing the records are dropped: the save that
	// rotates writes every key they changed.
	var werr error
	if !failed {
		if werr = l.writeOut(buf, loads); werr == nil {
			werr = l.f.Sync()
		}
	}
	l.f.Close()
	l.f, l.gen, l.size, l.syncedSize = nf, gen, segmentHeader, segmentHeader
	l.genNow.Store(gen)
	l.mu.Lock()
	l.flushing = false
	l.giveBackLocked(buf)
	if werr != nil {
		l.failLocked(werr)
		l.errGen = gen - 1
	} else {
		l.written, l.durable, l.unsyncedSince = end, end, 0
	}
	l.mirrorLocked()
	l.cond.Broadcast()
	l.mu.Unlock()
	return gen, nil
}

// cleared ends a failure that hit a segment before gen, once a save that
// rotated to gen has written every key.
func (l *appendLog) cleared(gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil && l.errGen < gen {
		l.logger.Info("append-only log recovered by a save", "segment", segmentPath(l.dir, gen))
		l.err = nil
		l.failed.Store(false)
		l.cond.Broadcast()
	}
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
			l.flush(l.policy != fsyncNo)
			if l.failed.Load() && l.recover != nil && time.Since(lastRecovery) >= 10*time.Second {
				lastRecovery = time.Now()
				if err := l.recover(); err != nil {
					l.logger.Error("saving to recover the append-only log", "err", err)
				}
			}
		case <-l.wake:
			l.flush(false)
		case <-l.demand:
		}
		l.serveWaiters()
	}
}

// flush writes what is waiting, and syncs with sync.
func (l *appendLog) flush(sync bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.flushing {
		l.cond.Wait()
	}
	if len(l.buf) > 0 || len(l.loads) > 0 || (sync && l.size > l.syncedSize) {
		l.flushLocked(sync)
	}
	return l.err
}

// close flushes and syncs what is waiting and closes the segment.
// Connections still waiting (their loops have stopped) are told that the
// log closed.
func (l *appendLog) close() error {
	close(l.stop)
	<-l.done
	err := l.flush(l.policy != fsyncNo)
	l.mu.Lock()
	waiters := l.waiters
	l.waiters = nil
	l.mu.Unlock()
	for _, pw := range waiters {
		if l.policy != fsyncAlways {
			l.stalledWriters.Add(-1)
		}
		pw.w.logDone(errors.New("the append-only log was closed"))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
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
