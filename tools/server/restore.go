package server

// Reading the snapshot back at start: what a restart costs in time and
// memory (docs/server.md, "What a restart costs").
//
// Each key's file is read straight into the filter's final memory, which
// is allocated once at its size: the decoders are told how much of the
// file is left (sizedFile.Len), where from a plain stream they grow the
// filter by doubling and leave every smaller copy to the garbage
// collector, about twice the filters' bytes after a restart. Pages that
// the file leaves all zero are not written, so a reserved, still empty
// filter costs no more after a restart than before it. The checksums are
// checked as the bytes pass, so a key answers only from bits that were
// verified, and the files are read on every core at once.
//
// Mapping the files instead (MAP_PRIVATE, copy-on-write) was measured and
// not chosen (docs/server.md, "What a restart costs"): checking a mapped
// file's checksum faults its pages in one by one, slower than reading it;
// a key's blocks do not sit 64-byte aligned in its record, as probing in
// place needs (the record's header and name come first, and a scalable
// filter's stages follow its own header and counts); a key written to
// would copy its pages one fault at a time; and a mapped file that a
// later save replaces keeps its disk space until the process exits.

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
)

// sizedFile reads a data file and tells the decoders how much of it is
// left (a Len method, which ohbloom's ReadFrom asks for), so that each
// filter is allocated once, at its size. It reads straight from the file:
// the decoders move blocks in 64 KiB reads, which a buffer would only copy
// once more.
type sizedFile struct {
	f    *os.File
	left int64
}

func (r *sizedFile) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	r.left -= int64(n)
	return n, err
}

// Len is what is left of the file by its size when it was opened.
func (r *sizedFile) Len() int { return int(min(max(r.left, 0), math.MaxInt)) }

// loaded is one data file read back.
type loaded struct {
	key string
	db  int
	e   *entry
	err error
}

// loadRecords reads the data files at paths into the keyspace, on every
// core at once. A file that does not decode, or that holds a key whose
// file is another, stops the start: the error names the first such file
// in the order of paths, whatever order the reads finished in.
func (s *store) loadRecords(paths []string) error {
	out := make([]loaded, len(paths))
	var next sync.Mutex
	i := 0
	var failed bool
	var wg sync.WaitGroup
	for range min(len(paths), runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				j, stop := i, failed
				i++
				next.Unlock()
				if j >= len(paths) || stop {
					return
				}
				r := &out[j]
				r.key, r.db, r.e, r.err = loadRecord(paths[j])
				if r.err != nil {
					r.err = fmt.Errorf("server: data file %s: %w", paths[j], r.err)
				} else if r.db >= len(s.dbs) {
					r.err = fmt.Errorf("server: data file %s holds key %q of database %d, but the server has %d databases: start it with --databases %d or more", paths[j], r.key, r.db, len(s.dbs), r.db+1)
				} else if want := s.pathOf(r.db, r.key); filepath.Base(want) != filepath.Base(paths[j]) {
					r.err = fmt.Errorf("server: data file %s holds key %q, whose file is %s", paths[j], r.key, want)
				}
				if r.err != nil {
					next.Lock()
					failed = true
					next.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, r := range out {
		if r.err != nil {
			return r.err
		}
	}
	grown := false
	// A file names its database's identity (store.ident): its keys are
	// in the database that has it now.
	index := make([]int, len(s.dbs))
	for db := range s.dbs {
		index[s.identOf(db)] = db
	}
	for _, r := range out {
		r.e.onDisk = true
		s.dbs[index[r.db]].keys[r.key] = r.e
		grown = grown || r.e.kind == kindRedisBloom || r.e.kind == kindCuckoo
	}
	if grown {
		// The decoders of RedisBloom and cuckoo keys grow their filters as the
		// bytes arrive: return what it left behind now rather than when
		// the runtime's scavenger gets to it.
		debug.FreeOSMemory()
	}
	return nil
}

// loadRecord reads one data file.
func loadRecord(path string) (string, int, *entry, error) {
	f, err := openRegular(path)
	if err != nil {
		return "", 0, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", 0, nil, err
	}
	r := &sizedFile{f: f, left: st.Size()}
	name, db, e, err := readRecord(r)
	if err != nil {
		return "", 0, nil, err
	}
	var one [1]byte
	if _, err := io.ReadFull(f, one[:]); err != io.EOF {
		return "", 0, nil, fmt.Errorf("%w: bytes after the filter", errCorrupt)
	}
	return name, db, e, nil
}
