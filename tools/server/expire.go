package server

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Expiry, as Redis does it: lazily and actively.
//
// Lazily: every lookup (store.get) treats a key whose time is up as
// missing, so no command ever sees it again, and a command that creates
// the key removes the expired one first (a new key has no expiry). A
// command that only reads does not remove the key itself (it holds the
// store's read lock only): it asks the active cycle to run soon instead.
//
// Actively: ten times a second (Redis's hz 10) the cycle samples keys
// that have an expiry, in each database, keysPerSample at a time, and
// removes those whose time is up; it samples the database again while
// more than a tenth of a sample had expired (Redis's
// ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE), and stops when its time budget
// (a quarter of the period: Redis's 25% of CPU) is spent, going on from
// the next database at its next run. So expired keys that no client
// touches free their memory within about a second, and the cycle never
// holds the store's lock for more than one sample.
//
// Each removal is logged as a DEL is, and its data file removed by the
// next save; a key whose time is up when the server starts is dropped as
// it is read back.

const (
	expiryPeriod      = 100 * time.Millisecond
	expiryCycleBudget = expiryPeriod / 4
	keysPerSample     = 20
	acceptableStale   = 10 // percent
)

// expiryStats is what the expiry keeps between cycles, and counts.
type expiryStats struct {
	expired atomic.Int64  // keys removed because their time was up
	nextDB  int           // where the next cycle starts (its goroutine's)
	soon    chan struct{} // asks for a cycle now: a lookup found an expired key
}

// expiredSeen tells the active cycle that a lookup found an expired key.
func (s *store) expiredSeen() {
	select {
	case s.expiry.soon <- struct{}{}:
	default:
	}
}

// reapName removes the key if its time is up, and reports whether it did.
// Its log record needs no wait: the key was gone already to every command,
// and a start drops a key whose time is up. Its data file is left to the
// next save (which removes the files of keys that are gone) or to the
// next write of the key, for the same reason: so a removal costs no file
// operation, and an event loop that finds an expired key may remove it.
func (s *store) reapName(db int, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dbs[db]
	e := d.keys[name]
	if e == nil || !e.expiredAt(s.nowMs()) {
		return false
	}
	d.removeLocked(name)
	s.gen.Add(1)
	if s.log != nil {
		s.log.appendDelete(db, name)
	}
	s.expiry.expired.Add(1)
	return true
}

// expireCycle is one run of the active expiry: see the top of this file.
// It returns how many keys it removed.
func (s *Server) expireCycle(budget time.Duration) int {
	st := s.store
	start := time.Now()
	removed := 0
	for i := 0; i < len(st.dbs); i++ {
		db := (st.expiry.nextDB + i) % len(st.dbs)
		for {
			sampled, expired := s.expireSample(db)
			removed += expired
			if time.Since(start) >= budget {
				st.expiry.nextDB = db
				return removed
			}
			if sampled == 0 || expired*100 <= sampled*acceptableStale {
				break
			}
		}
	}
	return removed
}

// expireSample looks at up to keysPerSample keys of database db that have
// an expiry, and removes those whose time is up. Ranging over a Go map
// starts at a random place: the sample is random, as Redis's.
func (s *Server) expireSample(db int) (sampled, expired int) {
	st := s.store
	now := st.nowMs()
	var due [keysPerSample]string
	n := 0
	st.mu.RLock()
	for name, e := range st.dbs[db].expires {
		if sampled == keysPerSample {
			break
		}
		sampled++
		if e.expiredAt(now) {
			due[n] = name
			n++
		}
	}
	st.mu.RUnlock()
	if n == 0 {
		return sampled, 0
	}
	// A transaction that lists keys sees no key go while it runs.
	c := claim{change: true}
	s.iso.acquire(&c)
	defer s.iso.release(&c)
	for _, name := range due[:n] {
		if st.reapName(db, name) {
			expired++
		}
	}
	return sampled, expired
}

// avgTTLSample bounds the keys INFO looks at for a database's avg_ttl.
const avgTTLSample = 1024

// keyspaceLines are INFO keyspace's lines, one for each database that
// holds keys, as Redis 7.4 prints them: keys (expired ones not yet removed
// included, as Redis counts them), keys with an expiry, and the average
// time they have left in milliseconds (over a random sample of at most
// avgTTLSample of them; Redis keeps a running estimate from its expiry
// cycle's samples).
func (s *store) keyspaceLines() []string {
	now := s.nowMs()
	var lines []string
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i, d := range s.dbs {
		if len(d.keys) == 0 {
			continue
		}
		var sum, n int64
		for _, e := range d.expires {
			if n == avgTTLSample {
				break
			}
			if left := e.expireAt.Load() - now; left > 0 {
				sum += left
				n++
			}
		}
		avg := int64(0)
		if n > 0 {
			avg = sum / n
		}
		lines = append(lines, fmt.Sprintf("db%d:keys=%d,expires=%d,avg_ttl=%d,subexpiry=0", i, len(d.keys), len(d.expires), avg))
	}
	return lines
}
