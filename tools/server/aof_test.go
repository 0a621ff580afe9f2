package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"

	"github.com/ohbloom/ohbloom/redisbloom"
	"github.com/zeebo/xxh3"
)

// The log's bytes, as aof.go documents them, written out by hand: the
// format must not change silently, since old segments must replay.
func TestLogFormat(t *testing.T) {
	dir := t.TempDir()
	_, rdb := startOn(t, dir, Config{AppendFsync: "always"})
	ctx := context.Background()
	for _, err := range []error{
		rdb.BFReserve(ctx, "k", 0.01, 100).Err(),
		rdb.BFAdd(ctx, "k", "a").Err(),
		rdb.BFReserveNonScaling(ctx, "f", 0.5, 7).Err(),
		rdb.CFAdd(ctx, "c", "x").Err(),
		rdb.CFDel(ctx, "c", "x").Err(),
		rdb.CFDel(ctx, "c", "x").Err(), // absent: no record
		rdb.Do(ctx, "CF.COMPACT", "c").Err(),
		rdb.Del(ctx, "k").Err(),
		rdb.FlushAll(ctx).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	le := binary.LittleEndian
	want := []byte("OHBLOG\x00\x01")
	want = le.AppendUint64(want, 1)
	record := func(body ...[]byte) {
		b := bytes.Join(body, nil)
		want = le.AppendUint32(want, uint32(len(b)))
		want = le.AppendUint32(want, ^uint32(len(b)))
		want = append(want, b...)
		want = le.AppendUint64(want, xxh3.Hash(b))
	}
	u64 := func(v uint64) []byte { return le.AppendUint64(nil, v) }
	f64 := func(v float64) []byte { return u64(math.Float64bits(v)) }
	hash := func(s string) []byte { return u64(xxh3.HashSeed([]byte(s), 0)) }
	record([]byte{1, 1, 'k', 0}, u64(100), f64(0.01), le.AppendUint32(nil, 2), u64(0)) // create-bloom
	record([]byte{3, 1, 'k'}, hash("a"))                                               // bloom-add
	record([]byte{1, 1, 'f', 1}, u64(7), f64(0.25), le.AppendUint32(nil, 2), u64(0))   // create-bloom NONSCALING; 0.5 is capped, as RedisBloom caps it
	// cuckoo-create: the header of RedisBloom's default filter (1024 / 2
	// = 512 buckets of 2, 20 iterations, expansion 1), no items yet
	record([]byte{12, 1, 'c'}, u64(0), u64(512), u64(0), u64(1), []byte{2, 0, 20, 0, 1, 0})
	record([]byte{13, 1, 'c'}, u64(1), u64(redisbloom.CuckooHash([]byte("x")))) // cuckoo-add, seq 1
	record([]byte{14, 1, 'c'}, u64(2), u64(redisbloom.CuckooHash([]byte("x")))) // cuckoo-delete, seq 2
	record([]byte{15, 1, 'c'}, u64(3))                                          // cuckoo-compact, seq 3
	record([]byte{6, 1, 'k'})                                                   // delete
	record([]byte{7})                                                           // flush-all
	got, err := os.ReadFile(segmentPath(dir, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("segment\n%x\nwant\n%x", got, want)
	}
}

// FuzzLogReplay replays arbitrary bytes as a log segment: an error or a
// clean replay, never a panic; the keys it leaves answer; and it
// allocates no more than its records justify: a record is at least 17
// bytes, and none may cost more than a filter of maxFilterBytes (built
// from a create record) or the first MiB a filter decoder takes before its
// bytes arrive (a load record).
func FuzzLogReplay(f *testing.F) {
	dir := f.TempDir()
	s, err := New(Config{DataDir: dir, AppendFsync: "always", SaveInterval: -1, Logger: discard()})
	if err != nil {
		f.Fatal(err)
	}
	sess := &session{authed: true}
	run := func(args ...string) {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		s.exec(sess, nullReplier{}, b)
	}
	run("BF.RESERVE", "k", "0.01", "10")
	run("BF.MADD", "k", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l")
	run("BF.RESERVE", "f", "0.1", "5", "NONSCALING")
	run("BF.ADD", "f", "x")
	run("CF.INSERT", "c", "CAPACITY", "10", "ITEMS", "x", "y", "x")
	run("CF.DEL", "c", "x")
	run("CF.COMPACT", "c")
	cf, _ := redisbloom.NewCuckoo(redisbloom.DefaultCuckooConfig(8))
	for i := range 12 { // grows to 3 sub-filters
		cf.Add([]byte(itoa(i)))
	}
	for iter := int64(0); ; {
		next, data := cf.ScanDump(iter, nil)
		if next == 0 {
			break
		}
		run("CF.LOADCHUNK", "cl", itoa(next), string(data))
		iter = next
	}
	run("CF.ADD", "cl", "more")
	run("DEL", "k")
	dump := recordBytes("f", s.store.get(0, "f"))
	run("BF.LOADCHUNK", "loaded", itoa(ohbloomIterators|int64(len(dump))+1), string(dump))
	run("FLUSHALL")
	run("CF.ADD", "after", "z")
	rb := rbFuzzSeed // a RedisBloom chain: its header, a chunk, adds
	for _, c := range rb.chunks {
		run("BF.LOADCHUNK", "rb", itoa(c.iter), c.data)
	}
	run("BF.MADD", "rb", "m1", "m2", "m3")
	// Databases, expiries, renames, copies, moves.
	run("EXPIRE", "rb", "1000")
	run("SELECT", "1")
	run("BF.ADD", "d1", "a")
	run("CF.ADD", "dc", "a")
	run("EXPIRE", "d1", "1000")
	run("RENAME", "d1", "d2")
	run("COPY", "d2", "d3", "DB", "0")
	run("MOVE", "dc", "0")
	run("PERSIST", "d2")
	run("CF.ADD", "dc2", "b")
	run("FLUSHDB")
	run("SELECT", "0")
	run("CF.ADD", "dc", "b")
	run("PEXPIRE", "d3", "0")
	run("SWAPDB", "0", "1")
	seg, err := os.ReadFile(segmentPath(dir, 1)) // always: every record is in
	if err != nil {
		f.Fatal(err)
	}
	s.Shutdown(context.Background())
	f.Add(seg)
	f.Add(seg[:len(seg)-5])
	huge := []byte{0}
	huge = binary.LittleEndian.AppendUint64(huge, 1<<24)
	huge = binary.LittleEndian.AppendUint64(huge, math.Float64bits(0.01))
	huge = binary.LittleEndian.AppendUint32(huge, 2)
	huge = binary.LittleEndian.AppendUint64(huge, 0)
	f.Add(withRecord(seg[:segmentHeader], recCreateBloom, "huge", huge))
	f.Add(withRecord(seg[:segmentHeader], recLoad, "x", []byte("OHBSRV\x00\x02")))
	f.Add(withRecord(seg[:segmentHeader], recPlace, "x", []byte("\x00\x00\x00\x00\x00\x00\x00\x00\x01\x01yOHBSRV\x00\x02")))
	// The same records as bodies behind uvarint lengths: the target
	// frames them with right lengths and checksums, so that mutations
	// reach the decoding of records, past the checksums.
	var bodies []byte
	for at := segmentHeader; at+8 <= len(seg); {
		n := int(binary.LittleEndian.Uint32(seg[at:]))
		bodies = binary.AppendUvarint(bodies, uint64(n))
		bodies = append(bodies, seg[at+8:at+8+n]...)
		at += 8 + n + 8
	}
	f.Add(bodies)
	f.Fuzz(func(t *testing.T, data []byte) {
		replayChecked(t, data)
		framed := []byte(segmentMagic + "\x00\x00\x00\x00\x00\x00\x00\x00")
		for rest := data; len(rest) > 0; {
			n, k := binary.Uvarint(rest)
			if k <= 0 || n == 0 || n > uint64(len(rest)-k) {
				break
			}
			body := rest[k : k+int(n)]
			rest = rest[k+int(n):]
			framed = binary.LittleEndian.AppendUint32(framed, uint32(len(body)))
			framed = binary.LittleEndian.AppendUint32(framed, ^uint32(len(body)))
			framed = append(framed, body...)
			framed = binary.LittleEndian.AppendUint64(framed, xxh3.Hash(body))
		}
		replayChecked(t, framed)
	})
}

// allocated is the bytes the process has allocated so far, without
// stopping the world as runtime.ReadMemStats does.
func allocated() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// allKeys is every key of every database, by database and name.
func allKeys(dbs []*database) map[string]*entry {
	all := map[string]*entry{}
	for i, d := range dbs {
		for name, e := range d.keys {
			all[fmt.Sprint(i, "/", name)] = e
		}
	}
	return all
}

func replayChecked(t *testing.T, data []byte) {
	before := allocated()
	rp := &replayer{dbs: []*database{newDatabase(), newDatabase()}, maxFilterBytes: 64 << 10}
	good, torn, err := rp.replay(bufio.NewReader(bytes.NewReader(data)), 0)
	if n, limit := allocated()-before, uint64(len(data)/17+1)*(3<<20)+8*uint64(len(data)); n > limit {
		t.Fatalf("replaying %d bytes allocated %d", len(data), n)
	}
	if err != nil {
		return
	}
	if good > int64(len(data)) || (torn == "" && good != int64(len(data))) {
		t.Fatalf("replayed up to %d of %d bytes, torn %v", good, len(data), torn)
	}
	for name, e := range allKeys(rp.dbs) {
		e.sizeBytes()
		switch e.kind {
		case kindCounting:
			e.counting.Count([]byte(name))
		case kindCuckoo:
			e.cf.Count([]byte(name))
			e.cf.Test([]byte(name))
		default:
			e.bloomTest([]byte(name))
		}
	}
}

// rbFuzzSeed is a small RedisBloom dump (BF.RESERVE k 0.01 100, 20 items,
// as redisbloom.Filter makes it, RedisBloom's bytes), for the
// fuzzers' seeds.
var rbFuzzSeed = func() (d struct{ chunks []chunk }) {
	f, _ := redisbloom.New(redisbloom.Config{Capacity: 100, ErrorRate: 0.01, Expansion: 2})
	for i := range 20 {
		f.AddString(itoa(i))
	}
	for iter := int64(0); ; {
		next, data := f.ScanDump(iter, nil)
		if next == 0 {
			return d
		}
		d.chunks = append(d.chunks, chunk{next, string(data)})
		iter = next
	}
}()

// Under always, a save's rotation does not hold the log while it makes
// the next segment durable (a file, its fsync and the directory's): the
// commands of other clients get their replies meanwhile, fsynced to the
// old segment. With saves back to back on a busy machine, making the
// segment inside the rotation held the log for two thirds of it.
func TestRotationMakesTheNextSegmentWithoutHoldingTheLog(t *testing.T) {
	_, addr := start(t, Config{DataDir: t.TempDir(), AppendFsync: "always", SaveInterval: -1})
	making, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	testDisk.Store(&diskHook{fit: func(path string, n int) (int, error) {
		if strings.HasPrefix(filepath.Base(path), ".appendonly-") { // the next segment's temporary file
			once.Do(func() { close(making) })
			<-release
		}
		return n, nil
	}})
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(func() { free(); testDisk.Store(nil) }) // before the server's shutdown, which waits for the save
	saver := dial(t, addr)
	saver.Write([]byte("BF.ADD k x\r\nSAVE\r\n"))
	<-making
	other := dial(t, addr)
	expect(t, other, "BF.ADD k y\r\nBF.ADD j y\r\n", ":1\r\n:1\r\n")
	free()
	expect(t, saver, "", ":1\r\n+OK\r\n")
	expect(t, other, "BF.ADD k z\r\n", ":1\r\n")
}
