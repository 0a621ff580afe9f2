package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// call runs one command as an authenticated client and returns the reply.
func call(s *Server, args ...string) string {
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	w := &replyWriter{proto: 2}
	s.exec(&session{authed: true, proto: 2}, w, a)
	return string(w.b)
}

func mustCall(t testing.TB, s *Server, want string, args ...string) {
	t.Helper()
	if got := call(s, args...); got != want {
		t.Fatalf("%q = %q, want %q", args, got, want)
	}
}

func newDirServer(t testing.TB, dir string) *Server {
	t.Helper()
	s, err := New(Config{DataDir: dir, Logger: discard(), SaveInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func copyDir(t testing.TB, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// v2Keys checks the keys of testdata/datadir-7e72778, which ohbloom serve of
// 7e72778 (record version 2) wrote: a scalable key of 4 stages holding
// s26..s1025, a NONSCALING key holding f1..f300, a CF key holding c2..c200,
// and a key with a long name holding k1.
func v2Keys(t *testing.T, s *Server) {
	t.Helper()
	for i := 26; i <= 1025; i += 7 {
		mustCall(t, s, ":1\r\n", "BF.EXISTS", "scalable", fmt.Sprint("s", i))
	}
	mustCall(t, s, ":1000\r\n", "BF.CARD", "scalable")
	for i := 1; i <= 300; i += 7 {
		mustCall(t, s, ":1\r\n", "BF.EXISTS", "fixed", fmt.Sprint("f", i))
	}
	for i := 2; i <= 200; i += 7 {
		mustCall(t, s, ":1\r\n", "CF.EXISTS", "counting", fmt.Sprint("c", i))
	}
	mustCall(t, s, ":1\r\n", "BF.EXISTS", "a key with a longer name, so that its record's header is of another length", "k1")
}

// recordVersions counts the data files of dir by record version.
func recordVersions(t *testing.T, dir string) map[byte]int {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+recordFileExt))
	out := map[byte]int{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[b[7]]++
	}
	return out
}

// A data directory written by the previous record version loads, its keys
// copied as before (their blocks do not sit aligned); the next save writes
// every key again in the current version, changed or not, and the start
// after maps them all.
func TestOlderRecordsLoadAndAreRewritten(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "datadir-7e72778"), dir)
	if got := recordVersions(t, dir); got[2] != 4 {
		t.Fatalf("record versions in the test data: %v", got)
	}
	s := newDirServer(t, dir)
	v2Keys(t, s)
	mustCall(t, s, "+OK\r\n", "SAVE")
	if got := recordVersions(t, dir); got[4] != 4 {
		t.Fatalf("record versions after a save: %v, want 4 of version 4", got)
	}
	s.Shutdown(t.Context())
	s = newDirServer(t, dir)
	defer s.Shutdown(t.Context())
	if mapsDataFiles {
		if got := s.store.mappedFiles; got != 4 {
			t.Errorf("%d data files mapped, want 4", got)
		}
	}
	v2Keys(t, s)
}

// Every block array of a version 3 record starts 64-byte aligned from the
// record's start, for every kind and any length of key: decoding from a
// reader that lends only aligned bytes lends every one, and the filter
// decodes as from the plain stream.
func TestRecordBlocksAligned(t *testing.T) {
	s, err := New(Config{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, s, "+OK\r\n", "BF.RESERVE", "sc", "0.01", "50")
	for i := range 400 {
		call(s, "BF.ADD", "sc", fmt.Sprint(i))
	}
	mustCall(t, s, "+OK\r\n", "BF.RESERVE", "fx", "0.01", "500", "NONSCALING")
	mustCall(t, s, "+OK\r\n", "CF.RESERVE", "cf", "500")
	call(s, "CF.ADD", "cf", "x")
	stages := s.store.get(0, "sc").scalable.Stages()
	if stages < 3 {
		t.Fatalf("%d stages", stages)
	}
	for _, k := range []struct {
		key   string
		lends int
	}{{"sc", stages}, {"fx", 1}, {"cf", 0}} { // a CF key is a cuckoo filter, read into memory
		e := s.store.get(0, k.key)
		for n := range 70 { // every length of name mod 64
			name := string(bytes.Repeat([]byte{'n'}, n))
			var b bytes.Buffer
			if _, err := writeRecordIn(&b, 0, name, e); err != nil {
				t.Fatal(err)
			}
			mem := alignedCopy(b.Bytes())
			r := &countingLender{mappedReader: mappedReader{r: bytes.NewReader(mem), mem: mem}}
			got, _, e2, err := readRecord(r)
			if err != nil || got != name || r.pos != len(mem) {
				t.Fatalf("%s, name of %d: %v, %q, read %d of %d", k.key, n, err, got, r.pos, len(mem))
			}
			if r.lends != k.lends {
				t.Fatalf("%s, name of %d: %d block arrays lent, want %d", k.key, n, r.lends, k.lends)
			}
			_, _, plain, err := readRecord(bytes.NewReader(b.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			var x, y bytes.Buffer
			e2.writeFilter(&x)
			plain.writeFilter(&y)
			if !bytes.Equal(x.Bytes(), y.Bytes()) {
				t.Fatalf("%s, name of %d: lent and read differ", k.key, n)
			}
		}
	}
	// The padding is checked: a byte of it changed is refused.
	var b bytes.Buffer
	writeRecordIn(&b, 0, "sc", s.store.get(0, "sc"))
	rec := b.Bytes()
	rec[recordFixed+2+8+1] = 1 // in the padding after the header
	if _, _, _, err := readRecord(bytes.NewReader(rec)); err == nil {
		t.Fatal("nonzero padding after the header read")
	}
}

// alignedCopy copies b to memory that starts 64-byte aligned.
func alignedCopy(b []byte) []byte {
	buf := make([]byte, len(b)+64)
	off := int(-uintptrOf(buf) & 63)
	out := buf[off : off+len(b)]
	copy(out, b)
	return out
}

type countingLender struct {
	mappedReader
	lends int
}

func (c *countingLender) InPlace(n int) []byte {
	b := c.mappedReader.InPlace(n)
	if b != nil {
		c.lends++
	}
	return b
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// Keys served from their mapped files stay right while commands read,
// add to, save, delete and replace them at once, and each mapping goes
// once no filter holds it (run it with -race).
func TestMappedKeysLifetime(t *testing.T) {
	if !mapsDataFiles {
		t.Skip("data files are mapped on little-endian Linux only")
	}
	dir := t.TempDir()
	s := newDirServer(t, dir)
	const churn = 6 // keys deleted and replaced while in use
	keys := []string{"stable-scalable", "stable-fixed", "stable-counting"}
	for i := range churn {
		keys = append(keys, fmt.Sprint("churn-", i))
	}
	for i, k := range keys {
		switch {
		case i == 1:
			mustCall(t, s, "+OK\r\n", "BF.RESERVE", k, "0.01", "2000", "NONSCALING")
		case i == 2:
			mustCall(t, s, "+OK\r\n", "CF.RESERVE", k, "2000")
		default:
			mustCall(t, s, "+OK\r\n", "BF.RESERVE", k, "0.01", "100")
		}
		for j := range 300 { // past the scalable keys' first stages
			if i == 2 {
				call(s, "CF.ADD", k, fmt.Sprint("known", j))
			} else {
				call(s, "BF.ADD", k, fmt.Sprint("known", j))
			}
		}
	}
	mustCall(t, s, "+OK\r\n", "SAVE")
	s.Shutdown(t.Context())

	done := make(chan *mapping, 64)
	hook := func(m *mapping) { done <- m }
	testRetire.Store(&hook)
	defer testRetire.Store(nil)
	s = newDirServer(t, dir)
	defer s.Shutdown(t.Context())
	// Every key but the CF key, a cuckoo filter, which is read into memory.
	if got := s.store.mappedFiles; got != len(keys)-1 {
		t.Fatalf("%d data files mapped, want %d", got, len(keys)-1)
	}
	files := map[string]*mapping{}
	for i, k := range keys {
		if files[k] = s.store.get(0, k).file; (files[k] == nil) != (i == 2) {
			t.Fatalf("key %s served mapped: %v", k, files[k] != nil)
		}
	}
	rounds := 300
	if testing.Short() {
		rounds = 100
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	// Readers and writers of the stable keys: every known item answers 1
	// throughout, while items are added beside them (pages copied).
	for g := range 2 {
		wg.Go(func() {
			for r := range rounds {
				for i, k := range keys[:3] {
					cmd, add := "BF.EXISTS", "BF.ADD"
					if i == 2 {
						cmd, add = "CF.EXISTS", "CF.ADD"
					}
					if got := call(s, cmd, k, fmt.Sprint("known", r%300)); got != ":1\r\n" {
						errs <- fmt.Errorf("%s %s known%d = %q", cmd, k, r%300, got)
						return
					}
					call(s, add, k, fmt.Sprint("new", g, "-", r))
				}
			}
		})
	}
	// Readers and writers of the churned keys: any answer of the right
	// type, never a crash.
	for range 2 {
		wg.Go(func() {
			for r := range rounds {
				for _, k := range keys[3:] {
					got := call(s, "BF.EXISTS", k, fmt.Sprint("known", r%300))
					if got != ":1\r\n" && got != ":0\r\n" {
						errs <- fmt.Errorf("BF.EXISTS %s = %q", k, got)
						return
					}
					call(s, "BF.ADD", k, fmt.Sprint("x", r))
				}
			}
		})
	}
	// Deletes and replacements, and saves, with collections in between so
	// that cleanups run while the others go on.
	wg.Go(func() {
		for r := range rounds / 10 {
			k := keys[3+r%churn]
			call(s, "DEL", k)
			call(s, "BF.RESERVE", k, "0.01", "100")
			call(s, "BF.ADD", k, "known0")
			if r%3 == 0 {
				call(s, "SAVE")
			}
			runtime.GC()
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Every churned key was replaced: each of their mappings goes once a
	// collection finds its filter unreachable.
	// (Cleanups run after a collection, on a goroutine of their own: a
	// collection again each 50 ms until they have, for at most a minute.)
	want := map[*mapping]bool{}
	for _, k := range keys[3:] {
		want[files[k]] = true
	}
	for tries := 0; len(want) > 0; {
		runtime.GC()
		select {
		case m := <-done:
			delete(want, m)
		case <-time.After(50 * time.Millisecond):
			if tries++; tries > 1200 {
				t.Fatalf("%d of %d replaced keys' mappings not retired", len(want), churn)
			}
		}
	}
	if got := s.store.mapped.files.Load(); got != 2 {
		t.Errorf("INFO counts %d data files mapped, want the 2 stable keys'", got)
	}
	for _, k := range keys[:2] {
		if files[k].gone.Load() {
			t.Errorf("the mapping of %s, still in use, was retired", k)
		}
	}
	// The stable keys were saved by rename over the files they map: a
	// restart reads what was added since.
	s.Shutdown(t.Context())
	s = newDirServer(t, dir)
	for _, k := range keys[:2] {
		mustCall(t, s, ":1\r\n", "BF.EXISTS", k, fmt.Sprint("new0-", rounds-1))
	}
	mustCall(t, s, ":1\r\n", "CF.EXISTS", keys[2], fmt.Sprint("new1-", rounds-1))
}

// FuzzRecord: a record decodes the same whether its blocks are read or
// lent from memory that holds it (as from a mapped file), never panics,
// and one that decodes writes back in the current version, which decodes
// to the same filter.
func FuzzRecord(f *testing.F) {
	s, err := New(Config{Logger: discard()})
	if err != nil {
		f.Fatal(err)
	}
	call(s, "BF.RESERVE", "sc", "0.01", "20")
	for i := range 120 {
		call(s, "BF.ADD", "sc", fmt.Sprint(i))
	}
	call(s, "BF.RESERVE", "fx", "0.01", "50", "NONSCALING")
	call(s, "BF.ADD", "fx", "a")
	call(s, "CF.RESERVE", "cf", "50")
	call(s, "CF.ADD", "cf", "a")
	for _, k := range []string{"sc", "fx", "cf"} {
		var b bytes.Buffer
		writeRecordIn(&b, 0, k, s.store.get(0, k))
		f.Add(b.Bytes())
	}
	paths, _ := filepath.Glob(filepath.Join("testdata", "datadir-7e72778", "*"+recordFileExt))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		name, db, e, err := readRecord(bytes.NewReader(data))
		mem := alignedCopy(data)
		lname, _, le, lerr := readRecord(&mappedReader{r: bytes.NewReader(mem), mem: mem})
		if (err == nil) != (lerr == nil) || err != nil && err.Error() != lerr.Error() {
			t.Fatalf("read: %v; lent: %v", err, lerr)
		}
		if err != nil {
			return
		}
		var a, b bytes.Buffer
		e.writeFilter(&a)
		le.writeFilter(&b)
		if name != lname || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatal("read and lent decode differently")
		}
		var again bytes.Buffer
		if _, err := writeRecordIn(&again, db, name, e); err != nil {
			t.Fatal(err)
		}
		name2, _, e2, err := readRecord(bytes.NewReader(again.Bytes()))
		if err != nil {
			t.Fatalf("a record written again does not read: %v", err)
		}
		b.Reset()
		e2.writeFilter(&b)
		if name2 != name || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatal("a record written again reads differently")
		}
	})
}

// mapsDataFiles is whether this platform lends data files' pages to the
// filters (mapped_linux.go on a little-endian CPU).
var mapsDataFiles = runtime.GOOS == "linux" && binary.NativeEndian.Uint16([]byte{1, 0}) == 1
