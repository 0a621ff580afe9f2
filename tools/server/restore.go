package server

// Reading the snapshot back at start: what a restart costs in time and
// memory (docs/server.md, "What a restart costs").
//
// Each key's file is mapped, private and copy-on-write (mapped.go), and
// read once through a small buffer, which checks every checksum; the
// decoders keep the mapped memory of the blocks instead of copying them
// (record version 4 starts every block array 64-byte aligned,
// record_align.go). So a filter answers from the file's pages in the page
// cache, with no copy and no fresh memory for the kernel to clear, which
// was most of a start's time. A key answers only from bits that were
// verified: the server listens once every file is read and checked. The
// files are read on every core at once.
//
// Where a file cannot be mapped (not Linux, a big-endian CPU, a failed
// mmap) it is read into memory allocated once at the filter's size: the
// decoders are told how much of the file is left (sizedFile.Len), and
// pages that the file leaves all zero are not written. A record of an
// older version is read so too when its blocks do not happen to sit
// aligned, and the next save writes it in the current version.

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
	key    string
	db     int
	e      *entry
	mapped bool // the filter is served from the file, mapped
	err    error
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
				r.key, r.db, r.e, r.mapped, r.err = loadRecord(paths[j])
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
		if r.mapped {
			s.mappedFiles++
			s.mapped.add(r.e.file)
		}
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

// loadRecord reads one data file, mapped where it can be.
func loadRecord(path string) (string, int, *entry, bool, error) {
	f, err := openRegular(path)
	if err != nil {
		return "", 0, nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", 0, nil, false, err
	}
	if m := mapFile(f, st.Size()); m != nil {
		return loadMapped(f, m)
	}
	r := &sizedFile{f: f, left: st.Size()}
	name, db, e, err := readRecord(r)
	if err != nil {
		return "", 0, nil, false, err
	}
	var one [1]byte
	if _, err := io.ReadFull(f, one[:]); err != io.EOF {
		return "", 0, nil, false, fmt.Errorf("%w: bytes after the filter", errCorrupt)
	}
	return name, db, e, false, nil
}

// loadMapped decodes a mapped data file, and gives the mapping to the
// filter it lent blocks to, or unmaps it.
func loadMapped(f *os.File, m *mapping) (string, int, *entry, bool, error) {
	r := &mappedReader{r: f, mem: m.mem}
	name, db, e, err := readRecord(r)
	if err == nil {
		var one [1]byte
		if n, _ := io.ReadFull(f, one[:]); n > 0 || r.pos != len(m.mem) {
			err = fmt.Errorf("%w: bytes after the filter", errCorrupt)
		}
	}
	if err != nil {
		m.drop()
		return "", 0, nil, false, err
	}
	if !r.lent {
		m.drop() // an older record, copied
		return name, db, e, false, nil
	}
	m.own(e)
	return name, db, e, true, nil
}
