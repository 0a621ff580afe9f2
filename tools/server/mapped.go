package server

// Serving a key's filter from its data file, mapped (restore.go): what a
// mapping is, who owns it, and when it goes.
//
// A start maps each data file private and copy-on-write, checks it whole,
// and lends the filter's decoder the mapped memory of its blocks (ohbloom's
// ReadFrom takes it from a reader with an InPlace method): the filter then
// reads the file's pages in the page cache, with nothing copied and no
// fresh memory to clear. Its pages are mapped as commands touch them, and
// a write copies the one page it lands in.
//
// Invariant: nothing writes to or truncates a data file in place. A save
// writes a new file and renames it over the old one (writeAtomic), a DEL
// removes it: the mapping keeps the old file's pages, unchanged, under a
// name no longer in the directory, until the mapping goes. Its disk space
// is freed then, not at the rename. Were a data file truncated under a
// mapping, a probe of a page past its new end would kill the process
// (SIGBUS); rewritten in place, the filter would answer from a mix of old
// and new bits. Only an operator can do either, and must not.
//
// Lifetime: the mapping stays for as long as any filter object whose
// blocks it holds is reachable. Each such object (a key's fixed or
// counting filter, each stage of a scalable one) gets a runtime cleanup;
// the last to run retires the mapping. A key deleted or replaced while a
// command still uses its filter keeps it reachable through that command,
// so the mapping outlives every use. Retiring does not unmap the
// addresses: it maps fresh anonymous memory over them (MAP_FIXED), which
// drops the file and every page copied from it at once, and leaves the
// addresses valid, so that even a use the cleanup could not see (code
// holding only a pointer into the blocks after its last use of the
// filter) reads zeros rather than faulting. What stays is address space
// only, at most what the start mapped, never memory.

import (
	"io"
	"runtime"
	"sync/atomic"
)

// mapping is one data file mapped at start.
type mapping struct {
	mem     []byte                      // the whole file, from its first byte
	owners  atomic.Int64                // filter objects holding blocks in it
	gone    atomic.Bool                 // retired
	account atomic.Pointer[mappedCount] // the store's count it is in
}

// mappedCount counts a store's data files that filters are served from
// (INFO's mapped_data_files and mapped_data_bytes; used_memory counts the
// bytes).
type mappedCount struct{ files, bytes atomic.Int64 }

// add counts m, until it is retired.
func (c *mappedCount) add(m *mapping) {
	c.files.Add(1)
	c.bytes.Add(int64(len(m.mem)))
	m.account.Store(c)
}

// uncount takes a retired m out of its store's count.
func (m *mapping) uncount() {
	if c := m.account.Swap(nil); c != nil {
		c.files.Add(-1)
		c.bytes.Add(-int64(len(m.mem)))
	}
}

// testRetire, set by tests, runs after each mapping is retired.
var testRetire atomic.Pointer[func(*mapping)]

// own gives the mapping to the filter objects of e, and retires it once
// none is reachable.
func (m *mapping) own(e *entry) {
	switch e.kind {
	case kindFixed:
		m.owners.Store(1)
		runtime.AddCleanup(e.fixed, (*mapping).release, m)
	case kindCounting:
		m.owners.Store(1)
		runtime.AddCleanup(e.counting, (*mapping).release, m)
	case kindScalable:
		n := e.scalable.Stages()
		m.owners.Store(int64(n))
		for i := range n {
			runtime.AddCleanup(e.scalable.Stage(i), (*mapping).release, m)
		}
	default:
		m.drop() // nothing holds blocks in it
		return
	}
	e.file = m
}

// release is the cleanup of one owner.
func (m *mapping) release() {
	if m.owners.Add(-1) == 0 {
		m.retire()
	}
}

// mappedReader reads a record from its file, and lends the decoders the
// mapping's memory of each block array that starts 64-byte aligned there
// (record_align.go; the mapping starts on a page): they read the blocks
// from the file, through a buffer that stays in the cache, to check them,
// and keep the mapped memory. Read that way, the checksums cost a fraction
// of reading the mapped pages themselves, which the hardware prefetches
// no further than a page and which would all be faulted in.
type mappedReader struct {
	r    io.Reader // the file, from its start
	mem  []byte    // the file, mapped
	pos  int
	lent bool
}

func (r *mappedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.pos += n
	return n, err
}

// Len is what is left of the file, by its size when it was mapped.
func (r *mappedReader) Len() int { return max(len(r.mem)-r.pos, 0) }

// InPlace lends the memory of the next n bytes, if they start 64-byte
// aligned.
func (r *mappedReader) InPlace(n int) []byte {
	if r.pos%64 != 0 || n <= 0 || n > len(r.mem)-r.pos {
		return nil
	}
	r.lent = true
	return r.mem[r.pos : r.pos+n : r.pos+n]
}
