package server

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/redisbloom"
	"github.com/zeebo/xxh3"
)

// kind is what a key holds, and how its filter answers.
type kind uint8

const (
	// kindScalable is a BF key that grows (RedisBloom's default).
	kindScalable kind = 1
	// kindFixed is a BF key made with NONSCALING: full at its capacity.
	kindFixed kind = 2
	// kindCounting is a CF key written by an ohbloom before CF keys were
	// cuckoo filters: a counting filter, kept as it is (cmd_cf_legacy.go).
	kindCounting kind = 3
	// kindRedisBloom is a BF key loaded from a RedisBloom dump
	// (BF.LOADCHUNK of its header chunk): RedisBloom's own scalable
	// classic filter, bit for bit, so that it answers, grows and dumps
	// back exactly as it did there.
	kindRedisBloom kind = 4
	// kindCuckoo is a CF key: RedisBloom's cuckoo filter, bit for bit
	// (cmd_cf.go).
	kindCuckoo kind = 5
)

// isCF reports whether the key is a CF key (MBbloomCF).
func (k kind) isCF() bool { return k == kindCuckoo || k == kindCounting }

// typeName is what TYPE answers, RedisBloom's module type names.
func (k kind) typeName() string {
	if k.isCF() {
		return "MBbloomCF"
	}
	return "MBbloom--"
}

// entry is one key: its filter and what RedisBloom reports about it.
type entry struct {
	kind      kind
	scalable  *ohbloom.AtomicScalableFilter
	fixed     *ohbloom.AtomicFilter
	counting  *ohbloom.AtomicCountingFilter
	rb        *redisbloom.AtomicFilter
	cf        *redisbloom.AtomicCuckooFilter
	capacity  uint64  // as reserved
	errorRate float64 // as reserved (CF keys: the counting filter's target)
	seed      uint64  // the filter's hash seed (every stage shares it)

	// items counts a NONSCALING key's items reported new (its filter
	// keeps no count) and a CF key's items added minus deleted, never
	// below 0. Scalable and RedisBloom keys count in their filters.
	items   atomic.Uint64
	deletes atomic.Uint64 // CF only
	dirty   atomic.Bool   // changed since it was last saved
	// access is when a command last named the key, in seconds since the
	// server's start (OBJECT IDLETIME); stored at most once a second.
	access atomic.Uint32

	// mu orders the changes of a CF key and of a RedisBloom key: a
	// change, its sequence number and its log record are one step under
	// mu, and a snapshot or a dump of the key is taken under mu, so that
	// it holds exactly the changes up to seq. Counters are not
	// idempotent, nor is a RedisBloom chain's growth and counts, nor a
	// LOADCHUNK's overwrite. Other BF keys do without: their log records
	// are idempotent.
	mu  sync.Mutex
	seq uint64 // number of the key's last change (guarded by mu)

	// order makes a group of adds to an ohbloom BF key and its log record
	// one step, while the log is on (addGroup), so that the log holds
	// them in the order they were applied. Their bits do not depend on
	// the order, but what each add found does: an item whose bits another
	// client's add had just set, logged before that add, counted as new
	// in the replay and not in the live server, and a growing filter
	// placed items in other stages than the live one did, so that an item
	// found present there, unlogged under everysec, could be absent after
	// a restart (TestConcurrentAddsReplayInTheirOrder). It is held only
	// for the adds and the append, never across a wait for the disk or
	// another key, so the loops take it where they run.
	order sync.Mutex

	// adding is held for reading while items are added to an ohbloom key
	// (addItems), and for writing while a save writes its record
	// (recordTo). Their bits are idempotent, but their counts are not: a
	// save that ran while an add was between its bits and its count held
	// the bits without the count, and the replay of the add, finding its
	// bits, did not count it (TestKeyspaceSurvivesKill under the race
	// detector: "Number of items inserted" 1 after a restart, 2 before).
	adding sync.RWMutex

	// onDisk says a save wrote this entry's file; guarded by the key's
	// stripe lock (store.stripe).
	onDisk bool
	// oldRecord says the key was read from a record of version 1 or 2,
	// whose blocks a start cannot map: the next save writes it again,
	// in the current version, whether it changed or not.
	oldRecord atomic.Bool
	// file is the data file the start mapped the filter's blocks from
	// (mapped.go), or nil. The mapping goes once the filter is
	// unreachable, not with the entry.
	file *mapping

	// expireAt is when the key expires, in Unix milliseconds; 0 never.
	// It is read without locks (every lookup checks it) and changed under
	// the store's write lock, which keeps the databases' expiry counts.
	expireAt atomic.Int64
}

// expiredAt reports whether the key's time is up at now (Unix ms).
func (e *entry) expiredAt(now int64) bool {
	at := e.expireAt.Load()
	return at != 0 && at <= now
}

// markDirty records a change. It loads before it stores so that a hot key
// re-added constantly does not write a shared line on every command.
func (e *entry) markDirty() {
	if !e.dirty.Load() {
		e.dirty.Store(true)
	}
}

// initSeed records the filter's seed, once it is built or decoded.
func (e *entry) initSeed() {
	switch e.kind {
	case kindScalable:
		e.seed = e.scalable.Stage(0).Seed()
	case kindFixed:
		e.seed = e.fixed.Seed()
	case kindCounting:
		e.seed = e.counting.Seed()
	}
}

// ordered reports whether the key's changes are numbered under mu (see
// entry.mu).
func (e *entry) ordered() bool { return e.kind != kindScalable && e.kind != kindFixed }

// hash is the filter's hash of item, what the log records.
func (e *entry) hash(item []byte) uint64 { return xxh3.HashSeed(item, e.seed) }

// sizeBytes is the memory of the key's filter: the bits (for a RedisBloom
// key, BF.INFO's Size, which counts RedisBloom's structures too).
func (e *entry) sizeBytes() uint64 {
	switch e.kind {
	case kindScalable:
		return e.scalable.SizeBytes()
	case kindFixed:
		return e.fixed.SizeBytes()
	case kindRedisBloom:
		return e.rb.Info().Size
	case kindCuckoo:
		return e.cf.Info().Size
	default:
		return e.counting.SizeBytes()
	}
}

// bloomInfo is what BF.INFO and BF.CARD report about a BF key. Expansion
// is 0 for a key that does not grow, whose "Expansion rate" is nil.
type bloomInfo struct {
	capacity, size, filters, items, expansion uint64
}

func (e *entry) bloomInfo() bloomInfo {
	switch e.kind {
	case kindScalable:
		return bloomInfo{e.scalable.Capacity(), e.scalable.SizeBytes(), uint64(e.scalable.Stages()), e.scalable.Count(), e.scalable.Config().Growth}
	case kindRedisBloom:
		in := e.rb.Info()
		x := uint64(in.Expansion)
		if in.NonScaling {
			x = 0
		}
		return bloomInfo{in.Capacity, in.Size, in.Filters, in.Items, x}
	default:
		return bloomInfo{e.capacity, e.fixed.SizeBytes(), 1, e.items.Load(), 0}
	}
}

// card is BF.CARD and BF.INFO's Number of items inserted.
func (e *entry) card() uint64 {
	switch e.kind {
	case kindScalable:
		return e.scalable.Count()
	case kindRedisBloom:
		return e.rb.Info().Items
	case kindCuckoo:
		return e.cf.Info().Items
	}
	return e.items.Load()
}

func (e *entry) writeFilter(w io.Writer) (int64, error) {
	switch e.kind {
	case kindScalable:
		return e.scalable.WriteTo(w)
	case kindFixed:
		return e.fixed.WriteTo(w)
	case kindRedisBloom:
		return e.rb.WriteTo(w)
	case kindCuckoo:
		return writeCuckoo(w, e.cf)
	default:
		return e.counting.WriteTo(w)
	}
}

// limit bounds the growth of the key's filter by max-filter-bytes: a
// filter read from a file or a dump keeps no bound of its own.
func (e *entry) limit(maxFilterBytes uint64) {
	switch e.kind {
	case kindScalable:
		e.scalable.SetMaxBytes(maxFilterBytes)
	case kindRedisBloom:
		e.rb.SetMaxBytes(maxFilterBytes)
	case kindCuckoo:
		e.cf.SetMaxBytes(maxFilterBytes)
	}
}

// decrementItems takes one from a CF key's item count unless it is 0, and
// reports whether it did.
func (e *entry) decrementItems() bool {
	for {
		n := e.items.Load()
		if n == 0 {
			return false
		}
		if e.items.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// The record of one key, on disk and in BF.SCANDUMP's chunks:
//
//	0   magic "OHBSRV" and version (big-endian): 0x0004 in data files,
//	    0x0002 in SCANDUMP's chunks and the log's records (which say the
//	    database and expiry their own way); 0x0003 and 0x0001 are read
//	    too
//	8   kind (1 scalable, 2 fixed, 3 counting, 4 RedisBloom, 5 cuckoo),
//	    3 zero bytes
//	12  (versions 3 and 4) the key's database, little-endian uint32 (zero bytes
//	    before: a version 1 or 2 record is database 0)
//	16  items, little-endian uint64 (scalable and RedisBloom keys: written
//	    for a reader's information, read from the filter)
//	24  deletes
//	32  capacity
//	40  error rate, float64 bits
//	48  key length, uint32; 4 zero bytes
//	56  (version 2) seq: the number of the key's last change that the
//	    record holds, for CF and RedisBloom keys (0 for others); see
//	    persist.go
//	64  (versions 3 and 4) when the key expires, Unix milliseconds, uint64; 0
//	    never (versions 1 and 2: never)
//	72  the key (at 64 in version 2, 56 in version 1)
//	    XXH3_64bits of everything above
//	    (version 4) zero bytes up to the next multiple of 64
//	    the filter, as its WriteTo writes it (with its own checksum); for
//	    a RedisBloom key, redisbloom.Filter's MarshalBinary format; for a
//	    cuckoo key, writeCuckoo's (cmd_cf.go); in version 4, a scalable
//	    filter's encoding has zero bytes before each stage up to the next
//	    multiple of 64 from the record's start, so that every block array
//	    starts 64-byte aligned (record_align.go)
const (
	recordMagic   = "OHBSRV\x00\x04"
	recordMagicV3 = "OHBSRV\x00\x03"
	recordMagicV2 = "OHBSRV\x00\x02"
	recordMagicV1 = "OHBSRV\x00\x01"
	recordFixed   = 72
	recordFixedV2 = 64
	recordFixedV1 = 56
	maxKeyBytes   = 64 << 10
	recordFileExt = ".ohbs"
)

var (
	errNotRecord = errors.New("not an ohbloom server record (bad magic)")
	errCorrupt   = errors.New("corrupt record")
)

// writeRecord writes e's record under name, as version 2: without a
// database or expiry (SCANDUMP's chunks and the log's records). The caller
// holds e.mu for a CF or RedisBloom key, so that counts, seq and filter
// agree.
func writeRecord(w io.Writer, name string, e *entry) (int64, error) {
	return writeRecordIn(w, -1, name, e)
}

// writeRecordIn writes e's record under name in database db, as version 4
// with its expiry and its blocks aligned (data files, which a start maps);
// db < 0 writes version 2.
func writeRecordIn(w io.Writer, db int, name string, e *entry) (int64, error) {
	fixed := recordFixed
	if db < 0 {
		fixed = recordFixedV2
	}
	head := make([]byte, fixed, fixed+len(name)+8)
	if db < 0 {
		copy(head, recordMagicV2)
	} else {
		copy(head, recordMagic)
		binary.LittleEndian.PutUint32(head[12:], uint32(db))
		binary.LittleEndian.PutUint64(head[64:], uint64(e.expireAt.Load()))
	}
	head[8] = byte(e.kind)
	le := binary.LittleEndian
	le.PutUint64(head[16:], e.card())
	le.PutUint64(head[24:], e.deletes.Load())
	le.PutUint64(head[32:], e.capacity)
	le.PutUint64(head[40:], math.Float64bits(e.errorRate))
	le.PutUint32(head[48:], uint32(len(name)))
	le.PutUint64(head[56:], e.seq)
	head = append(head, name...)
	head = le.AppendUint64(head, xxh3.Hash(head))
	if db >= 0 {
		head = append(head, zeros[:pad(uint64(len(head)))]...)
	}
	n, err := w.Write(head)
	if err != nil {
		return int64(n), err
	}
	if db >= 0 && e.kind == kindScalable {
		p := &stagePadder{w: w, off: uint64(len(head)), layout: newStageLayout()}
		_, err := e.writeFilter(p)
		return int64(p.off), err
	}
	m, err := e.writeFilter(w)
	return int64(n) + m, err
}

// recordTo writes e's record (version 4 in database db, version 2 if db <
// 0), taking e.mu for a CF or RedisBloom key, and e.adding for another.
func recordTo(w io.Writer, db int, name string, e *entry) (int64, error) {
	if e.ordered() {
		e.mu.Lock()
		defer e.mu.Unlock()
	} else {
		e.adding.Lock()
		defer e.adding.Unlock()
	}
	return writeRecordIn(w, db, name, e)
}

// recordBytes is e's record in memory, behind an 8-byte little-endian
// length: a SCANDUMP's bytes.
func recordBytes(name string, e *entry) []byte {
	if e.ordered() {
		e.mu.Lock()
		defer e.mu.Unlock()
	}
	return recordBytesLocked(name, e)
}

// recordBytesLocked is recordBytes for a caller that holds e.mu of a CF or
// RedisBloom key.
func recordBytesLocked(name string, e *entry) []byte {
	b := bytes.NewBuffer(make([]byte, 8, 8+recordFixed+len(name)+8+int(min(e.sizeBytes()+4096, 1<<40))))
	writeRecord(chunkedWriter{b}, name, e) // a bytes.Buffer never fails a write
	out := b.Bytes()
	binary.LittleEndian.PutUint64(out, uint64(len(out)-8))
	return out
}

// readRecord decodes one record, and says the database it names (0 before
// version 3). It allocates only what the input holds: the key length is
// bounded, and the filter decoders grow their blocks as the bytes arrive.
func readRecord(r io.Reader) (string, int, *entry, error) {
	name, db, e, err := readRecordDB(r)
	return name, int(db), e, err
}

func readRecordDB(r io.Reader) (string, uint32, *entry, error) {
	var head [recordFixed]byte
	if _, err := io.ReadFull(r, head[:recordFixedV1]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return "", 0, nil, fmt.Errorf("%w: truncated header", errCorrupt)
		}
		return "", 0, nil, err
	}
	if string(head[:6]) != recordMagic[:6] {
		return "", 0, nil, errNotRecord
	}
	fixed, aligned := recordFixedV1, false
	switch string(head[:8]) {
	case recordMagic:
		fixed, aligned = recordFixed, true
	case recordMagicV3:
		fixed = recordFixed
	case recordMagicV2:
		fixed = recordFixedV2
	case recordMagicV1:
	default:
		return "", 0, nil, fmt.Errorf("unsupported record version %d", binary.BigEndian.Uint16(head[6:8]))
	}
	if _, err := io.ReadFull(r, head[recordFixedV1:fixed]); err != nil {
		return "", 0, nil, fmt.Errorf("%w: truncated header", errCorrupt)
	}
	le := binary.LittleEndian
	var db uint32
	var expireAt int64
	if fixed == recordFixed {
		db = le.Uint32(head[12:])
		if expireAt = int64(le.Uint64(head[64:])); expireAt < 0 {
			return "", 0, nil, fmt.Errorf("%w: expiry %d", errCorrupt, expireAt)
		}
	}
	nameLen := le.Uint32(head[48:])
	if nameLen > maxKeyBytes {
		return "", 0, nil, fmt.Errorf("%w: key of %d bytes", errCorrupt, nameLen)
	}
	rest := make([]byte, nameLen+8)
	if _, err := io.ReadFull(r, rest); err != nil {
		return "", 0, nil, fmt.Errorf("%w: truncated key", errCorrupt)
	}
	sum := xxh3.New()
	sum.Write(head[:fixed])
	sum.Write(rest[:nameLen])
	if got, rec := sum.Sum64(), le.Uint64(rest[nameLen:]); got != rec {
		return "", 0, nil, fmt.Errorf("%w: header hashes to %#x, recorded %#x", errCorrupt, got, rec)
	}
	start := uint64(fixed) + uint64(nameLen) + 8 // where the filter starts
	if aligned {
		n := pad(start)
		var z [64]byte
		if _, err := io.ReadFull(r, z[:n]); err != nil {
			return "", 0, nil, fmt.Errorf("%w: truncated header", errCorrupt)
		}
		start += n
		if z != ([64]byte{}) {
			return "", 0, nil, fmt.Errorf("%w: the padding after the header is not zero", errCorrupt)
		}
	}
	e := &entry{kind: kind(head[8]), capacity: le.Uint64(head[32:]), errorRate: math.Float64frombits(le.Uint64(head[40:]))}
	e.oldRecord.Store(!aligned)
	e.items.Store(le.Uint64(head[16:]))
	e.deletes.Store(le.Uint64(head[24:]))
	if fixed >= recordFixedV2 {
		e.seq = le.Uint64(head[56:])
	}
	e.expireAt.Store(expireAt)
	var err error
	switch e.kind {
	case kindScalable:
		e.scalable = new(ohbloom.AtomicScalableFilter)
		if aligned {
			_, err = e.scalable.ReadFrom(&stageUnpadder{r: r, off: start, layout: newStageLayout()})
		} else {
			_, err = e.scalable.ReadFrom(r)
		}
	case kindFixed:
		e.fixed = new(ohbloom.AtomicFilter)
		_, err = e.fixed.ReadFrom(r)
	case kindCounting:
		e.counting = new(ohbloom.AtomicCountingFilter)
		_, err = e.counting.ReadFrom(r)
	case kindRedisBloom:
		// Its memory grows with the bytes that arrive, never with what
		// its header claims.
		e.rb = new(redisbloom.AtomicFilter)
		_, err = e.rb.ReadFrom(r)
	case kindCuckoo:
		e.cf, err = readCuckoo(r)
	default:
		return "", 0, nil, fmt.Errorf("%w: unknown kind %d", errCorrupt, e.kind)
	}
	if err != nil {
		return "", 0, nil, err
	}
	e.initSeed()
	return string(rest[:nameLen]), db, e, nil
}

// stripes is how many locks order the files of keys: a save of a key's file
// and a DEL or FLUSHALL removing it take the lock of its stripe, so that a
// removal never races a rename, without one lock for the whole directory.
const stripes = 64

// database is one of the numbered keyspaces SELECT chooses between.
// Guarded by the store's mu.
type database struct {
	keys map[string]*entry
	// index is the keys in SCAN's order; nil until the database has held
	// a key (it is 128 KiB): see idx.
	index *keyIndex
	// expires holds the keys that have an expiry, for the active expiry
	// cycle's samples and INFO's counts.
	expires map[string]*entry
}

func newDatabase() *database {
	return &database{keys: map[string]*entry{}, expires: map[string]*entry{}}
}

// noKeys is the index of a database that never held a key.
var noKeys keyIndex

// idx is the database's index, to read.
func (d *database) idx() *keyIndex {
	if d.index == nil {
		return &noKeys
	}
	return d.index
}

// setLocked installs e under name, replacing whatever was there. Under
// the store's write lock.
func (d *database) setLocked(name string, e *entry) {
	if _, ok := d.keys[name]; !ok {
		if d.index == nil {
			d.index = new(keyIndex)
		}
		d.index.add(name)
	}
	d.keys[name] = e
	if e.expireAt.Load() != 0 {
		d.expires[name] = e
	} else {
		delete(d.expires, name)
	}
}

// removeLocked removes name. Under the store's write lock.
func (d *database) removeLocked(name string) {
	if _, ok := d.keys[name]; ok {
		delete(d.keys, name)
		delete(d.expires, name)
		d.index.remove(name)
	}
}

// setExpiryLocked sets when e, under name, expires (0: never). Under the
// store's write lock.
func (d *database) setExpiryLocked(name string, e *entry, at int64) {
	e.expireAt.Store(at)
	if at != 0 {
		d.expires[name] = e
	} else {
		delete(d.expires, name)
	}
}

// DefaultDatabases is how many databases a server has unless told: as
// Redis.
const DefaultDatabases = 16

// store is the keyspace: its databases. The maps are guarded by mu; the
// filters are lock-free, so commands on existing keys only take the read
// lock. Persistence (saves, the log, the start) is in persist.go and
// aof.go; expiry in expire.go.
type store struct {
	mu  sync.RWMutex
	dbs []*database
	// ident[i] is which database's files database i's keys are in: i
	// itself until a SWAPDB exchanges two databases, which exchanges their
	// identities and so moves no file. The data files say their keys'
	// identity, the manifest the map as of the last save, and the log
	// every swap since. It changes only under saveMu, in a SWAPDB that
	// holds every key's latch.
	ident []atomic.Int64

	dir            string // "" keeps everything in memory
	log            *appendLog
	man            *manifest // the data directory's manifest (manifest.go)
	logger         *slog.Logger
	maxFilterBytes uint64
	stripe         [stripes]sync.Mutex

	saveMu      sync.Mutex // one save at a time
	bgsave      atomic.Bool
	lastSave    atomic.Int64
	oldSegments bool   // log segments on disk that a save must remove (the log is off)
	persist     Config // the settings load and the limits read

	mappedFiles int         // data files the start served mapped (restore.go)
	mapped      mappedCount // those still served so (mapped.go)

	uploads uploads
	dumps   dumps
	now     func() time.Time // the clock of expiries, replaced by tests
	expiry  expiryStats
	// testSkew, set by tests, moves the clock of expiries this many
	// milliseconds ahead.
	testSkew atomic.Int64
	// gen counts the changes of which keys exist (a key made or
	// removed), so that a lookup cached for statistics (info_keyspace.go)
	// knows when it may be stale.
	gen atomic.Uint64
}

// nowMs is the time expiries are compared with, in Unix milliseconds.
func (s *store) nowMs() int64 { return s.now().UnixMilli() + s.testSkew.Load() }

// fileHash names a key's file: its XXH3-128 (seeded with its database, but
// for database 0, whose files keep the names they had before there were
// databases), so that any key, however long or strange, makes a valid file
// name; the key itself is in the file.
func fileHash(db int, name string) [16]byte {
	if db == 0 {
		return xxh3.HashString128(name).Bytes()
	}
	return xxh3.HashString128Seed(name, uint64(db)).Bytes()
}

// identOf is the identity of database db: whose files its keys are in.
func (s *store) identOf(db int) int { return int(s.ident[db].Load()) }

// path is the data file of the key of database db.
func (s *store) path(db int, name string) string { return s.pathOf(s.identOf(db), name) }

// pathOf is the data file of the key of the database of identity id.
func (s *store) pathOf(id int, name string) string {
	h := fileHash(id, name)
	return filepath.Join(s.dir, hex.EncodeToString(h[:])+recordFileExt)
}

// stripeOf is the lock of the key's file.
func (s *store) stripeOf(db int, name string) *sync.Mutex {
	return &s.stripe[s.stripeIndex(db, name)]
}

func (s *store) stripeIndex(db int, name string) int {
	h := fileHash(s.identOf(db), name)
	return int(h[0] % stripes)
}

// uploadKey names a key of a database among the LOADCHUNK uploads and
// SCANDUMP dumps in progress, which are kept by name: the database's
// number, then the name.
func uploadKey(db int, name string) string {
	return string(binary.AppendUvarint(nil, uint64(db))) + name
}

// get returns the key's entry, nil if it is missing or expired (expire.go
// removes expired keys).
func (s *store) get(db int, name string) *entry {
	s.mu.RLock()
	e := s.dbs[db].keys[name]
	s.mu.RUnlock()
	if e != nil && e.expireAt.Load() != 0 && e.expiredAt(s.nowMs()) {
		s.expiredSeen()
		return nil
	}
	return e
}

// getBytes is get for a key straight from a command's arguments; indexing
// the map by string(name) does not copy it.
func (s *store) getBytes(db int, name []byte) *entry {
	s.mu.RLock()
	e := s.dbs[db].keys[string(name)]
	s.mu.RUnlock()
	if e != nil && e.expireAt.Load() != 0 && e.expiredAt(s.nowMs()) {
		s.expiredSeen()
		return nil
	}
	return e
}

// logChange logs, with add, a change just made to e, found as the key
// name of database db, if e still is that key, and returns the log
// position the change's reply waits for.
//
// A command finds its key, changes it, then logs the change, holding
// nothing that a removal of the key waits for: another client's DEL,
// FLUSHDB, RESTORE REPLACE or expiry runs meanwhile on another event loop
// or goroutine, also while the command waits off its loop for the key's
// lock (a save copying it). A removal and a new key of the same name
// logged in between put the change's record after the new key's
// creation, and the replay after a crash gave the change to the new key
// (TestChangeRacingItsKeysReplacement). Whatever changes which key a name
// holds does it and logs it under the keyspace's write lock; under its
// read lock the record goes before the removal, or the key is gone and so
// is the change, which then needs no record; the reply waits for the
// log's tail, the removal's record included. (RENAME, MOVE, COPY and
// SWAPDB need no such check: they run alone on their keys, once every
// command on them has ended. They are also all that takes a key's e.mu
// under the keyspace's lock, which a caller here may hold.)
func (s *store) logChange(db int, name []byte, e *entry, add func() uint64) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.dbs[db].keys[string(name)] != e {
		return s.log.tail.Load()
	}
	return add()
}

// getOrCreate returns the key's entry, creating it with build if it is
// missing; see getOrCreateLogged.
func (s *store) getOrCreate(db int, name string, build func() (*entry, error)) (*entry, bool, error) {
	e, created, _, err := s.getOrCreateLogged(db, name, build)
	return e, created, err
}

// getOrCreateLogged returns the key's entry, creating it with build if it
// is missing, and the log position of its creation (0 if it existed). build
// runs before the write lock is taken: a filter of a GiB takes a while to
// allocate and clear, and every reader waits for a writer; two clients
// creating the same key at once each build one, and the second is dropped.
// The creation is logged under the lock, so that no record of the key can
// precede it in the log. An expired key is removed first, and the new one
// has no expiry, as in Redis.
func (s *store) getOrCreateLogged(db int, name string, build func() (*entry, error)) (*entry, bool, uint64, error) {
	if e := s.get(db, name); e != nil {
		return e, false, 0, nil
	}
	s.reapName(db, name)
	e, err := build()
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dbs[db]
	if old := d.keys[name]; old != nil && !old.expiredAt(s.nowMs()) {
		return old, false, 0, nil
	}
	if err != nil {
		return nil, false, 0, err
	}
	e.initSeed()
	e.dirty.Store(true)
	var pos uint64
	if s.log != nil {
		pos = s.log.appendCreate(db, name, e)
	}
	d.setLocked(name, e)
	s.gen.Add(1)
	return e, true, pos, nil
}

// put installs e, decoded from dump (a record, as LOADCHUNK received it),
// under name unless the key exists, and returns the log position of the
// load. The record goes into the log whole, since the key's state is in no
// other record.
func (s *store) put(db int, name string, e *entry, dump []byte) (bool, uint64, error) {
	s.reapName(db, name)
	var logged wholeRecord
	if s.log != nil {
		logged = loadWhole(db, name, dump)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dbs[db]
	if old := d.keys[name]; old != nil && !old.expiredAt(s.nowMs()) {
		return false, 0, nil
	}
	e.seq = 0 // a loaded key's changes are numbered afresh, here and in replay
	e.expireAt.Store(0)
	e.dirty.Store(true)
	var pos uint64
	if s.log != nil {
		var err error
		if pos, err = s.log.appendWhole(logged); err != nil {
			return false, 0, err
		}
	}
	d.setLocked(name, e)
	s.gen.Add(1)
	return true, pos, nil
}

// errRemove is a data file that could not be removed, so that its key
// would come back at the next start: the key is kept.
type errRemove struct {
	name string
	err  error
}

func (e *errRemove) Error() string {
	return fmt.Sprintf("could not remove the data file of key '%s' (the key is kept): %v", quoteArg([]byte(e.name)), e.err)
}

// del removes keys of database db and their files, and returns how many
// existed (expired keys are removed, not counted) and the log position of
// the last removal. With the log, the removal is its record, and a file
// that cannot be removed now is removed by the next save. Without it, a
// key whose file cannot be removed is kept, and the error says so: a DEL
// must not report what a restart would undo.
func (s *store) del(db int, names ...string) (int, uint64, error) {
	n, pos := 0, uint64(0)
	var errs []error
	for _, name := range names {
		s.uploads.drop(uploadKey(db, name))
		_, ok, p, err := s.delOne(db, name, nil)
		if ok {
			n++
		}
		pos = max(pos, p)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return n, pos, errors.Join(errs...)
}

// delOne removes the key if only (when not nil) says so of its entry, and
// reports whether it removed it, whether the key had not expired, and the
// log position of the removal.
func (s *store) delOne(db int, name string, only func(*entry) bool) (removed, live bool, pos uint64, err error) {
	s.mu.RLock()
	e := s.dbs[db].keys[name]
	s.mu.RUnlock()
	if e == nil || only != nil && !only(e) {
		return false, false, 0, nil
	}
	lock := s.stripeOf(db, name)
	lock.Lock()
	defer lock.Unlock()
	if s.log == nil && s.dir != "" {
		// No record can make the removal durable: the file goes first,
		// and the key only if it went.
		if err := s.removeDataFile(db, name); err != nil {
			return false, false, 0, &errRemove{name, err}
		}
	}
	s.mu.Lock()
	d := s.dbs[db]
	e = d.keys[name]
	if e == nil || only != nil && !only(e) {
		s.mu.Unlock()
		return false, false, 0, nil
	}
	live = !e.expiredAt(s.nowMs())
	d.removeLocked(name)
	s.gen.Add(1)
	if s.log != nil {
		pos = s.log.appendDelete(db, name)
	}
	s.mu.Unlock()
	if s.log != nil {
		if err := s.removeDataFile(db, name); err != nil {
			s.logger.Warn("DEL: the data file stays until the next save removes it; the log records the deletion", "key", name, "err", err)
		}
	}
	if !live {
		s.expiry.expired.Add(1)
	}
	return true, live, pos, nil
}

// flush removes every key of the databases dbs (FLUSHDB: one; FLUSHALL:
// none named, all) and their LOADCHUNK uploads in progress, and returns
// the log position of the flush. Without the log, keys whose files cannot
// be removed are kept, as del keeps them.
func (s *store) flush(dbs ...int) (uint64, error) {
	all := len(dbs) == 0
	if all {
		dbs = s.allDBs()
	}
	if all {
		s.uploads.dropAll()
	}
	if s.log == nil {
		var errs []error
		for _, db := range dbs {
			_, _, err := s.del(db, s.names(db)...)
			errs = append(errs, err)
		}
		return 0, errors.Join(errs...)
	}
	s.mu.Lock()
	var pos uint64
	if all {
		pos = s.log.appendFlushAll()
	} else {
		for _, db := range dbs {
			pos = s.log.appendFlushDB(db)
		}
	}
	old := make([]map[string]*entry, len(dbs))
	for i, db := range dbs {
		old[i] = s.dbs[db].keys
		s.dbs[db] = newDatabase()
	}
	s.gen.Add(1)
	s.mu.Unlock()
	for i, db := range dbs {
		for name := range old[i] {
			if !all {
				s.uploads.drop(uploadKey(db, name))
			}
			lock := s.stripeOf(db, name)
			lock.Lock()
			// A key created again since the flush and saved already owns
			// the file; otherwise the file is the flushed key's.
			s.mu.RLock()
			now := s.dbs[db].keys[name]
			s.mu.RUnlock()
			if now == nil || !now.onDisk {
				if err := s.removeDataFile(db, name); err != nil {
					s.logger.Warn("FLUSHALL: the data file stays until the next save removes it; the log records the flush", "key", name, "err", err)
				}
			}
			lock.Unlock()
		}
	}
	return pos, nil
}

// allDBs is every database's number.
func (s *store) allDBs() []int {
	dbs := make([]int, len(s.dbs))
	for i := range dbs {
		dbs[i] = i
	}
	return dbs
}

// limitAll bounds the growth of every key's filter by max-filter-bytes,
// once the keys are read back at start: the files keep no bound.
func (s *store) limitAll() {
	for _, d := range s.dbs {
		for _, e := range d.keys {
			e.limit(s.maxFilterBytes)
		}
	}
}

// sizeBytes is the memory of every key's filter, for INFO: a walk of the
// index in chunks, so that the store's lock is never held for the whole
// keyspace, and no copy of the names. Keys come and go during the walk:
// the figure is a statistic, not a snapshot.
func (s *store) sizeBytes() uint64 {
	var n uint64
	for db := range s.dbs {
		for cursor := uint64(0); ; {
			s.mu.RLock()
			d := s.dbs[db]
			cursor = d.idx().scan(cursor, walkChunk, func(name string) {
				if e := d.keys[name]; e != nil {
					n += e.sizeBytes()
				}
			})
			s.mu.RUnlock()
			if cursor == 0 {
				break
			}
		}
	}
	return n
}

// indexAll puts the keys read back at start into SCAN's index, and those
// with an expiry among the expiries, and drops those whose time is up.
func (s *store) indexAll() {
	now := s.nowMs()
	for _, d := range s.dbs {
		for name, e := range d.keys {
			if e.expiredAt(now) {
				delete(d.keys, name)
				continue
			}
			if d.index == nil {
				d.index = new(keyIndex)
			}
			d.index.add(name)
			if e.expireAt.Load() != 0 {
				d.expires[name] = e
			}
		}
	}
}

// names returns the keys of database db, sorted: those of one instant,
// from a snapshot of the index, so that the store's lock is held for a copy
// of its 4096 buckets' slices, not of every name.
func (s *store) names(db int) []string {
	s.mu.RLock()
	snap := s.dbs[db].idx().snapshot()
	s.mu.RUnlock()
	names := make([]string, 0, snap.n)
	snap.each(func(name string) { names = append(names, name) })
	sort.Strings(names)
	return names
}

// len is the number of keys of database db, those expired but not yet
// removed included, as Redis's DBSIZE counts them.
func (s *store) len(db int) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.dbs[db].keys)
}

// lenAll is the number of keys of every database.
func (s *store) lenAll() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, d := range s.dbs {
		n += len(d.keys)
	}
	return n
}
