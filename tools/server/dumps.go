package server

import (
	"container/list"
	"sync"
	"time"
)

// What SCANDUMP and LOADCHUNK hold between a client's calls, and its
// limits. Both are bounded in count and bytes, expire when left idle, and
// are shown in INFO; DEL and FLUSHALL drop uploads of their keys.
const (
	// maxUploads and maxUploadsPerClient bound the LOADCHUNK uploads in
	// progress, in all and started by one connection.
	maxUploads          = 32
	maxUploadsPerClient = 4
	// maxDumps bounds the SCANDUMPs in progress.
	maxDumps = 16
	// idleTimeout drops an upload or a dump not continued for this long.
	idleTimeout = time.Minute
)

// upload is one LOADCHUNK upload in progress: of ohbloom's dump, whose
// record is gathered in buf until it is whole, or of RedisBloom's
// (family "rb"), whose key exists from its header chunk on and takes the
// data chunks as they come; it holds the chain's bytes from the start.
type upload struct {
	name    string
	family  string // "bf" or "cf": the family that started it; "rb"
	total   uint64 // the record's length, from the first chunk; "rb": the chain's bytes
	buf     []byte // the record so far
	held    uint64 // bytes counted against the limits: cap(buf); "rb": total
	owner   *session
	touched time.Time
	elem    *list.Element
}

// uploads are the LOADCHUNK uploads in progress, by key. Their bytes are
// the capacity of their buffers. Past maxBytes in all, the least recently
// continued upload is dropped to make room; past a connection's share
// (half of maxBytes, at least one largest dump) or maxUploadsPerClient, the
// connection is refused.
type uploads struct {
	mu        sync.Mutex
	st        *store
	maxBytes  uint64
	perClient uint64
	byName    map[string]*upload
	lru       list.List // least recently continued first
	bytes     uint64
	owners    map[*session]*ownerUse
}

type ownerUse struct {
	count int
	bytes uint64
}

func (u *uploads) init(maxBytes uint64, st *store) {
	u.st, u.maxBytes = st, maxBytes
	u.perClient = max(maxBytes/2, min(maxBytes, dumpLimit(st.maxFilterBytes)))
	u.byName = map[string]*upload{}
	u.owners = map[*session]*ownerUse{}
}

// removeLocked drops p and returns its bytes to the budgets.
func (u *uploads) removeLocked(p *upload) {
	if u.byName[p.name] != p {
		return
	}
	delete(u.byName, p.name)
	u.lru.Remove(p.elem)
	u.bytes -= p.held
	o := u.owners[p.owner]
	o.count--
	o.bytes -= p.held
	if o.count == 0 {
		delete(u.owners, p.owner)
	}
}

func (u *uploads) expireLocked() {
	now := u.st.now()
	for el := u.lru.Front(); el != nil; {
		p := el.Value.(*upload)
		el = el.Next()
		if now.Sub(p.touched) >= idleTimeout {
			u.removeLocked(p)
		}
	}
}

func (u *uploads) expire() {
	u.mu.Lock()
	u.expireLocked()
	u.mu.Unlock()
}

func (u *uploads) drop(name string) {
	u.mu.Lock()
	if p := u.byName[name]; p != nil {
		u.removeLocked(p)
	}
	u.mu.Unlock()
}

func (u *uploads) dropAll() {
	u.mu.Lock()
	for _, p := range u.byName {
		u.removeLocked(p)
	}
	u.mu.Unlock()
}

func (u *uploads) usage() (int, uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expireLocked()
	return len(u.byName), u.bytes
}

// start begins an upload of total bytes under name for owner, replacing
// one in progress under the name. It returns an error reply or "".
func (u *uploads) start(name, family string, total uint64, owner *session) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expireLocked()
	if p := u.byName[name]; p != nil {
		u.removeLocked(p)
	}
	if o := u.owners[owner]; o != nil && o.count >= maxUploadsPerClient {
		return "ERR too many LOADCHUNK uploads in progress on this connection (at most 4): finish or abandon one"
	}
	for len(u.byName) >= maxUploads {
		u.removeLocked(u.lru.Front().Value.(*upload))
	}
	p := &upload{name: name, family: family, total: total, owner: owner, touched: u.st.now()}
	p.elem = u.lru.PushBack(p)
	u.byName[name] = p
	if u.owners[owner] == nil {
		u.owners[owner] = &ownerUse{}
	}
	u.owners[owner].count++
	return ""
}

// add appends a chunk that starts at byte start of the record to the
// upload of name. It returns the whole record once the last chunk is in,
// or an error reply.
func (u *uploads) add(name, family string, start uint64, data []byte) (rec []byte, done bool, errMsg string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expireLocked()
	p := u.byName[name]
	if p == nil || p.family != family {
		return nil, false, "ERR no dump being loaded for this key: start with its first chunk"
	}
	if start != uint64(len(p.buf)) {
		return nil, false, "ERR chunk starts at byte " + itoa(8+start) + ", expected " + itoa(8+uint64(len(p.buf)))
	}
	need := uint64(len(p.buf)) + uint64(len(data))
	if need > p.total {
		u.removeLocked(p)
		return nil, false, "ERR chunk runs past the end of the dump"
	}
	if need > uint64(cap(p.buf)) {
		grown := min(p.total, max(need, 2*uint64(cap(p.buf))))
		delta := grown - uint64(cap(p.buf))
		o := u.owners[p.owner]
		if o.bytes+delta > u.perClient {
			u.removeLocked(p)
			return nil, false, "ERR LOADCHUNK uploads of this connection would hold more than " + itoa(u.perClient) + " bytes: finish or abandon one"
		}
		for el := u.lru.Front(); u.bytes+delta > u.maxBytes && el != nil; {
			q := el.Value.(*upload)
			el = el.Next()
			if q != p {
				u.removeLocked(q)
			}
		}
		if u.bytes+delta > u.maxBytes {
			u.removeLocked(p)
			return nil, false, "ERR LOADCHUNK uploads would hold more than max-upload-bytes (" + itoa(u.maxBytes) + ")"
		}
		p.buf = appendChunked(make([]byte, 0, grown), p.buf)
		p.held = grown
		u.bytes += delta
		o.bytes += delta
	}
	p.buf = appendChunked(p.buf, data)
	p.touched = u.st.now()
	u.lru.MoveToBack(p.elem)
	if uint64(len(p.buf)) < p.total {
		return nil, false, ""
	}
	rec = p.buf
	u.removeLocked(p)
	return rec, true, ""
}

// startRB counts the load of a RedisBloom dump whose header chunk made
// the key name, of total bytes of filters, against the limits, as the
// upload of an ohbloom dump of that size would be, until the chunk that
// ends at its last byte arrives (continued). Other uploads make room as
// start's and add's do. It returns an error reply or "".
func (u *uploads) startRB(name string, total uint64, owner *session) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expireLocked()
	if p := u.byName[name]; p != nil {
		u.removeLocked(p)
	}
	o := u.owners[owner]
	switch {
	case o != nil && o.count >= maxUploadsPerClient:
		return "ERR too many LOADCHUNK uploads in progress on this connection (at most 4): finish or abandon one"
	case o != nil && o.bytes+total > u.perClient || total > u.perClient:
		return "ERR LOADCHUNK uploads of this connection would hold more than " + itoa(u.perClient) + " bytes: finish or abandon one"
	case total > u.maxBytes:
		return "ERR LOADCHUNK uploads would hold more than max-upload-bytes (" + itoa(u.maxBytes) + ")"
	}
	for el := u.lru.Front(); el != nil && (len(u.byName) >= maxUploads || u.bytes+total > u.maxBytes); {
		q := el.Value.(*upload)
		el = el.Next()
		u.removeLocked(q)
	}
	p := &upload{name: name, family: "rb", total: total, held: total, owner: owner, touched: u.st.now()}
	p.elem = u.lru.PushBack(p)
	u.byName[name] = p
	if u.owners[owner] == nil {
		u.owners[owner] = &ownerUse{}
	}
	u.owners[owner].count++
	u.owners[owner].bytes += total
	u.bytes += total
	return ""
}

// continuedRB notes a data chunk of the RedisBloom load of name that ends
// before byte end of its filters, and ends the load's count at the last.
func (u *uploads) continuedRB(name string, end uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	p := u.byName[name]
	if p == nil || p.family != "rb" {
		return
	}
	if end >= p.total {
		u.removeLocked(p)
		return
	}
	p.touched = u.st.now()
	u.lru.MoveToBack(p.elem)
}

// dump is one SCANDUMP in progress: a copy of the key's record taken at
// its iterator 0, so that adds meanwhile cannot tear it and two dumps of a
// key never share a buffer.
type dump struct {
	id      uint32
	name    string
	data    []byte // the 8-byte length and the record; nil while copying
	held    uint64 // bytes counted against maxBytes: reserved, then cap(data)
	touched time.Time
	elem    *list.Element
}

// dumps are the SCANDUMPs in progress, by id. Room for a dump is reserved,
// and counted, before its copy is made: a new dump that would take the
// total past maxBytes, or the count past maxDumps, first drops the least
// recently continued whole ones; if the copies still being made leave no
// room, it is refused, so that many clients starting dumps at once (on
// several event loops) cannot each make a copy the budget has no room for.
// A dropped dump's next call is an error, never a silent end.
type dumps struct {
	mu       sync.Mutex
	st       *store
	maxBytes uint64
	byID     map[uint32]*dump
	lru      list.List
	bytes    uint64
	next     uint32
}

func (d *dumps) init(maxBytes uint64, st *store) {
	d.st, d.maxBytes = st, maxBytes
	d.byID = map[uint32]*dump{}
}

func (d *dumps) removeLocked(x *dump) {
	if d.byID[x.id] != x {
		return
	}
	delete(d.byID, x.id)
	d.lru.Remove(x.elem)
	d.bytes -= x.held
}

func (d *dumps) expireLocked() {
	now := d.st.now()
	for el := d.lru.Front(); el != nil; {
		x := el.Value.(*dump)
		el = el.Next()
		if now.Sub(x.touched) >= idleTimeout {
			d.removeLocked(x)
		}
	}
}

func (d *dumps) expire() {
	d.mu.Lock()
	d.expireLocked()
	d.mu.Unlock()
}

func (d *dumps) usage() (int, uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireLocked()
	return len(d.byID), d.bytes
}

// makeRoomLocked drops the least recently continued whole dumps, but
// keep, until want more bytes fit, and one more dump if slot.
func (d *dumps) makeRoomLocked(want uint64, slot bool, keep *dump) {
	for el := d.lru.Front(); el != nil && (slot && len(d.byID) >= maxDumps || d.bytes+want > d.maxBytes); {
		x := el.Value.(*dump)
		el = el.Next()
		if x.data != nil && x != keep {
			d.removeLocked(x)
		}
	}
}

// reserve holds room for a dump of name of size bytes and returns its id,
// or an error reply.
func (d *dumps) reserve(name string, size uint64) (uint32, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireLocked()
	if size > d.maxBytes {
		return 0, "ERR a dump of this key takes " + itoa(size) + " bytes, more than max-dump-bytes (" + itoa(d.maxBytes) + ")"
	}
	d.makeRoomLocked(size, true, nil)
	if len(d.byID) >= maxDumps || d.bytes+size > d.maxBytes {
		return 0, "ERR other SCANDUMPs being started take the room of max-dump-bytes (" + itoa(d.maxBytes) + "): retry"
	}
	for {
		d.next = (d.next + 1) & dumpIDMask
		if d.next != 0 && d.byID[d.next] == nil {
			break
		}
	}
	x := &dump{id: d.next, name: name, held: size, touched: d.st.now()}
	x.elem = d.lru.PushBack(x)
	d.byID[x.id] = x
	d.bytes += size
	return x.id, ""
}

// fill gives reserved dump id its data, counted by its capacity (a filter
// that grew since the reservation makes it larger: whole dumps make room).
// It reports false if the dump was dropped meanwhile (expired).
func (d *dumps) fill(id uint32, data []byte) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.byID[id]
	if x == nil {
		return false
	}
	d.bytes -= x.held
	x.data, x.held, x.touched = data, uint64(cap(data)), d.st.now()
	d.bytes += x.held
	d.makeRoomLocked(0, false, x)
	return true
}

// get returns dump id's data if it is a whole dump of name, and marks it
// used.
func (d *dumps) get(id uint32, name string) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireLocked()
	x := d.byID[id]
	if x == nil || x.name != name || x.data == nil {
		return nil
	}
	x.touched = d.st.now()
	d.lru.MoveToBack(x.elem)
	return x.data
}

func (d *dumps) done(id uint32) {
	d.mu.Lock()
	if x := d.byID[id]; x != nil {
		d.removeLocked(x)
	}
	d.mu.Unlock()
}
