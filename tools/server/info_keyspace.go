package server

// What INFO and OBJECT read of the keyspace: its lines in INFO keyspace,
// its expiries, and each command's lookup of its keys for keyspace_hits
// and keyspace_misses and the keys' idle time.

// keyspaceLines are INFO keyspace's lines, one for each database that
// holds keys: "db0:keys=N,expires=E,avg_ttl=T,subexpiry=0" (expire.go).
func (s *Server) keyspaceLines() []string { return s.store.keyspaceLines() }

// expiredKeys is INFO's expired_keys: the keys removed because their time
// ran out (expire.go).
func (s *Server) expiredKeys() int64 { return s.store.expiry.expired.Load() }

// lookupKey finds a key a command names in the session's database, for
// the statistics: as Redis's lookupKey, it does not count as a use of the
// key for expiry.
func (s *Server) lookupKey(sess *session, key []byte) *entry { return s.store.getBytes(sess.db, key) }

// lookupCached is lookupKey through the session's cache of its last
// lookup, valid while no key was made or removed (store.gen) and until the
// end of the batch of commands the connection is running (endBatch): a
// pipeline of commands on one filter, the common case, then takes the
// store's lock once, not once a command more than it would without the
// statistics. Ending with the batch, the cache never keeps a deleted
// filter's memory for an idle client.
func (s *Server) lookupCached(sess *session, key []byte) *entry {
	gen := s.store.gen.Load()
	if c := &sess.lookup; c.valid && c.gen == gen && c.db == sess.db && string(key) == c.key {
		return c.e
	}
	e := s.lookupKey(sess, key)
	c := &sess.lookup
	c.valid, c.gen, c.db, c.e = true, gen, sess.db, e
	if string(key) != c.key {
		c.key = string(key)
	}
	return e
}

// lookupCache is a session's last key looked up for the statistics.
type lookupCache struct {
	valid bool
	gen   uint64
	db    int
	key   string // kept past endBatch: the next batch compares without allocating
	e     *entry
}

// endBatch forgets the entry at the end of a batch of commands.
func (c *lookupCache) endBatch() { c.valid, c.e = false, nil }

// touchKeys counts a command's lookups of its keys, as Redis's lookupKey
// counts them: a read-only command's as hits or misses, and any command's
// as a use of the key (OBJECT IDLETIME), unless the client asked CLIENT
// NO-TOUCH. Keys are those of the command's legacy range (COMMAND INFO's
// first, last and step).
func (s *Server) touchKeys(sess *session, c *command, args [][]byte) {
	look := c.lookup
	if look == lookupNone {
		return
	}
	m := c.meta
	last := m.last
	if last < 0 {
		last += len(args)
	}
	read := m.flags&cmdReadonly != 0
	noTouch := sess.info != nil && sess.info.flags.Load()&clientNoTouch != 0
	var hits, misses int64
	now := s.x.clock()
	for i := m.first; i <= last && i < len(args); i += max(m.step, 1) {
		e := s.lookupCached(sess, args[i])
		if e == nil {
			misses++
			continue
		}
		hits++
		if !noTouch && look != lookupNoTouch && e.access.Load() != now {
			e.access.Store(now)
		}
	}
	if read {
		sess.counts.hits += hits // added by call's flushCounts
		sess.counts.misses += misses
	}
}

// How a command's lookups count, where not as a use of the key
// (lookupTouch, the zero value): Redis's LOOKUP_NOTOUCH and commands that
// look nothing up this way (OBJECT counts its own, MEMORY USAGE none).
const (
	lookupTouch uint8 = iota
	lookupNoTouch
	lookupNone
)

var keyLookups = map[string]uint8{
	"type": lookupNoTouch, "exists": lookupNoTouch, "ttl": lookupNoTouch, "pttl": lookupNoTouch,
	"expiretime": lookupNoTouch, "pexpiretime": lookupNoTouch,
	"object|encoding": lookupNone, "object|freq": lookupNone, "object|idletime": lookupNone,
	"object|refcount": lookupNone, "memory|usage": lookupNone,
}
