package server

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/zeebo/xxh3"
)

// What keeps a transaction's commands together, without stopping the
// server while they run.
//
// Redis runs one command at a time, so EXEC's commands run with no other
// client's command in between. Here commands run at once on several event
// loops and goroutines, and EXEC used to stop all of them for its whole
// run: a MULTI with a KEYS over big keys held every client for seconds.
// What a client can observe of "no command in between" is narrower, and
// that is what is kept:
//   - no other client's command on a key the transaction names runs
//     between its commands: EXEC holds its keys' latches alone;
//   - if the transaction may create or delete keys, no other command
//     lists the keys (KEYS, SCAN, DBSIZE) until it ends, so none sees a
//     key it made and removed; if it lists keys, no other command creates
//     or deletes one until it ends, so its own listings agree;
//   - everything else runs beside it: PING, INFO (whose figures are
//     statistics, not the keys' contents), commands on other keys.
// So the transaction's effect is as if it ran alone at one instant, to
// every command that could tell.
//
// Latches are by stripe: a key's latch is one of latchStripes, by a hash of
// its name, so a command on another key waits for a transaction only when
// the two names share a stripe (1 in 4096 for a transaction of one key),
// and then it waits off its event loop. Where they do, the transaction's
// names decide (claim.exact): a transaction of many keys holds every
// stripe, and a command on a key it does not name would otherwise wait
// for all of it (100,000 BF.ADDs in one EXEC held a BF.EXISTS on another
// key 1.2 s; 250,000, 3 to 6 s).
//
// Who takes what:
//   - EXEC (off the loops, in a goroutine) claims its keys' stripes alone,
//     and the keyspace's list or change mode as above; it waits until no
//     command holds what it claims;
//   - a command that runs off the loops (slow or heavy, see dispatch)
//     claims its keys' stripes shared, and the modes it needs, waiting for
//     the transactions it meets;
//   - a command on a loop claims nothing: the loops are fast, and a
//     transaction, once its claim is registered, waits for every batch of
//     commands that was running on a loop then (barrier): it locks and
//     unlocks each shard of the exec lock, which a loop holds while it
//     runs a batch. While a transaction is registered or waiting (active),
//     a command on a loop first checks the claims; if it meets one, it is
//     run off its loop, where it waits without holding up other clients.
// A claim is taken whole or not at all, under one mutex, so two claims
// never wait for each other: no deadlock.

// latchStripes is the number of key latches.
const latchStripes = 4096

// stripeSet is a set of latch stripes.
type stripeSet [latchStripes / 64]uint64

func latchOf(key []byte) int { return int(xxh3.Hash(key) % latchStripes) }

func (s *stripeSet) add(key []byte) {
	i := latchOf(key)
	s[i/64] |= 1 << (i % 64)
}

// claim is what a command or a transaction holds while it runs.
type claim struct {
	stripes stripeSet
	tx      bool // a transaction: alone on its stripes
	// list: it reads which keys exist (KEYS, SCAN, DBSIZE); change: it may
	// create or delete a key.
	list, change bool
	// names are the keys behind the stripes (addClaim's), unless every:
	// it names every key.
	names [][]byte
	every bool
	// exact is a transaction's names, made when it is acquired; nil for a
	// transaction that holds its stripes whole (every, or named none).
	exact map[string]struct{}
}

func (c *claim) empty() bool { return c.stripes == stripeSet{} && !c.list && !c.change }

// isolation holds the claims of transactions and of commands off the
// loops.
type isolation struct {
	// active counts transactions registered or waiting: while it is 0 a
	// command on a loop checks nothing.
	active atomic.Int32

	mu   sync.Mutex
	cond sync.Cond
	// excl: stripes held by a transaction; shared: by how many other
	// commands each is held.
	excl   stripeSet
	shared [latchStripes]int32
	// The keyspace's modes, held by transactions and by other commands.
	txList, txChange, list, change int32
	// txs are the transactions' claims held.
	txs []*claim
}

func (is *isolation) init() { is.cond.L = &is.mu }

// fits reports whether c could be taken now. Under is.mu.
func (is *isolation) fits(c *claim) bool {
	switch {
	case c.list && (is.txChange > 0 || c.tx && is.change > 0):
		return false
	case c.change && (is.txList > 0 || c.tx && is.list > 0):
		return false
	}
	met := false // a stripe a transaction holds
	for w, word := range c.stripes {
		met = met || word&is.excl[w] != 0
		if !c.tx {
			continue
		}
		if met {
			return false
		}
		for ; word != 0; word &= word - 1 {
			if is.shared[w*64+trailingZeros(word)] > 0 {
				return false
			}
		}
	}
	return !met || is.unnamed(c)
}

// unnamed reports whether no transaction held names a key of c, a command
// whose stripes meet theirs. Under is.mu.
func (is *isolation) unnamed(c *claim) bool {
	if c.every || len(c.names) == 0 {
		return false
	}
	for _, t := range is.txs {
		if t.exact == nil {
			for w, word := range c.stripes {
				if word&t.stripes[w] != 0 {
					return false
				}
			}
			continue
		}
		for _, k := range c.names {
			if _, ok := t.exact[string(k)]; ok {
				return false
			}
		}
	}
	return true
}

// makeExact makes a transaction's set of names, before it is held.
func (c *claim) makeExact() {
	if c.tx && c.exact == nil && !c.every && len(c.names) > 0 {
		c.exact = make(map[string]struct{}, len(c.names))
		for _, k := range c.names {
			c.exact[string(k)] = struct{}{}
		}
	}
}

// acquire waits until c fits and takes it.
func (is *isolation) acquire(c *claim) {
	if c.empty() {
		return
	}
	c.makeExact()
	is.mu.Lock()
	for !is.fits(c) {
		is.cond.Wait()
	}
	is.count(c, 1)
	is.mu.Unlock()
}

// tryAcquire takes c if it fits now, and reports whether it did.
func (is *isolation) tryAcquire(c *claim) bool {
	if c.empty() {
		return true
	}
	c.makeExact()
	is.mu.Lock()
	defer is.mu.Unlock()
	if !is.fits(c) {
		return false
	}
	is.count(c, 1)
	return true
}

// acquireBesideSave takes c and the save lock, waiting for either while
// holding neither: a SWAPDB must not fall inside a save, and one that
// waited for a save holding every key's latch held every other client's
// command on a key for the whole save (a BGSAVE of two 256 MB filters: a
// second, and 2 s for MULTI SWAPDB EXEC). It tries the save lock first,
// then c if it fits at once; else c, then the save lock if it is free at
// once. The caller releases both.
func (s *Server) acquireBesideSave(c *claim) {
	st := s.store
	for {
		st.saveMu.Lock()
		if s.iso.tryAcquire(c) {
			return
		}
		st.saveMu.Unlock()
		s.iso.acquire(c)
		if st.saveMu.TryLock() {
			return
		}
		s.iso.release(c)
	}
}

func (is *isolation) release(c *claim) {
	if c.empty() {
		return
	}
	is.mu.Lock()
	is.count(c, -1)
	is.mu.Unlock()
	is.cond.Broadcast()
}

// count adds (d = 1) or removes (d = -1) c's holds. Under is.mu.
func (is *isolation) count(c *claim, d int32) {
	if c.tx {
		is.txList += b2i(c.list) * d
		is.txChange += b2i(c.change) * d
		if d > 0 {
			is.txs = append(is.txs, c)
		} else if i := slices.Index(is.txs, c); i >= 0 {
			is.txs = slices.Delete(is.txs, i, i+1)
		}
		for w, word := range c.stripes {
			if d > 0 {
				is.excl[w] |= word
			} else {
				is.excl[w] &^= word
			}
		}
		return
	}
	is.list += b2i(c.list) * d
	is.change += b2i(c.change) * d
	for w, word := range c.stripes {
		for ; word != 0; word &= word - 1 {
			is.shared[w*64+trailingZeros(word)] += d
		}
	}
}

// free reports whether a command on a loop with claim c may run there:
// no transaction holds what it needs.
func (is *isolation) free(c *claim) bool {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.fits(c)
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// What each command touches, for its claim.
type keySpec struct {
	keys   uint8 // keysNone, keysFirst (args[1]), keysAll (args[1:]) or keysEvery (every key)
	list   bool  // reads which keys exist
	create bool  // creates its key if missing
	delete bool  // deletes keys
	// own: it takes its keys' latches alone itself (cmd_move.go's
	// alone), off the loop, rather than shared.
	own bool
}

const (
	keysNone = iota
	keysFirst
	keysAll
	keysEvery
)

var keySpecs = map[string]keySpec{
	"exists": {keys: keysAll}, "type": {keys: keysFirst},
	"del": {keys: keysAll, delete: true}, "unlink": {keys: keysAll, delete: true},
	"flushall": {keys: keysEvery, delete: true}, "flushdb": {keys: keysEvery, delete: true},
	"dump": {keys: keysFirst}, "restore": {keys: keysFirst, create: true, delete: true},
	"keys": {list: true}, "scan": {list: true}, "dbsize": {list: true},

	"expire": {keys: keysFirst, delete: true}, "pexpire": {keys: keysFirst, delete: true},
	"expireat": {keys: keysFirst, delete: true}, "pexpireat": {keys: keysFirst, delete: true},
	"ttl": {keys: keysFirst}, "pttl": {keys: keysFirst}, "expiretime": {keys: keysFirst},
	"pexpiretime": {keys: keysFirst}, "persist": {keys: keysFirst},
	"rename":   {keys: keysAll, create: true, delete: true, own: true},
	"renamenx": {keys: keysAll, create: true, delete: true, own: true},
	"copy":     {keys: keysAll, create: true, delete: true, own: true},
	"move":     {keys: keysFirst, create: true, delete: true, own: true},
	"swapdb":   {keys: keysEvery, list: true, delete: true, own: true},

	"bf.reserve": {keys: keysFirst, create: true}, "bf.add": {keys: keysFirst, create: true},
	"bf.madd": {keys: keysFirst, create: true}, "bf.insert": {keys: keysFirst, create: true},
	"bf.loadchunk": {keys: keysFirst, create: true},
	"bf.exists":    {keys: keysFirst}, "bf.mexists": {keys: keysFirst}, "bf.info": {keys: keysFirst},
	"bf.card": {keys: keysFirst}, "bf.scandump": {keys: keysFirst},

	"cf.reserve": {keys: keysFirst, create: true}, "cf.add": {keys: keysFirst, create: true},
	"cf.addnx": {keys: keysFirst, create: true}, "cf.insert": {keys: keysFirst, create: true},
	"cf.insertnx": {keys: keysFirst, create: true}, "cf.loadchunk": {keys: keysFirst, create: true},
	"cf.exists": {keys: keysFirst}, "cf.mexists": {keys: keysFirst}, "cf.count": {keys: keysFirst},
	"cf.del": {keys: keysFirst}, "cf.info": {keys: keysFirst}, "cf.scandump": {keys: keysFirst},
	"cf.compact": {keys: keysFirst}, "cf.debug": {keys: keysFirst},
}

// addClaim adds what the command args (name already looked up) touches to
// c. A creator counts as a change only if its key is missing now: the
// caller either holds the key's stripe alone (a transaction, which checks
// again once it holds it) or runs while no transaction holds the list
// mode (see the top of this file).
func (s *Server) addClaim(c *claim, db int, name string, args [][]byte) {
	spec := keySpecs[name]
	var keys [][]byte
	switch spec.keys {
	case keysFirst:
		keys = args[1:2:2]
	case keysAll:
		keys = args[1:len(args):len(args)]
	case keysEvery:
		for w := range c.stripes {
			c.stripes[w] = ^uint64(0)
		}
		c.every = true
	}
	for _, k := range keys {
		c.stripes.add(k)
	}
	if c.names == nil {
		c.names = keys // no copy: a command's claim lives while its arguments do
	} else {
		c.names = append(c.names, keys...) // (a transaction's: keys has no room)
	}
	c.list = c.list || spec.list
	c.change = c.change || spec.delete || spec.create && s.store.getBytes(db, args[1]) == nil
}

// loopMayRun reports whether a command may run on its loop while
// transactions are active: it needs nothing they hold.
func (s *Server) loopMayRun(db int, name string, args [][]byte) bool {
	if _, ok := keySpecs[name]; !ok {
		return true
	}
	var c claim
	s.addClaim(&c, db, name, args)
	return s.iso.free(&c)
}

// barrier returns once every batch of commands that was running on an
// event loop when it was called has ended.
func (s *Server) barrier() {
	for i := range s.execLock.shards {
		s.execLock.shards[i].Lock()
		s.execLock.shards[i].Unlock()
	}
}

// holdOnLoop, on an event loop, takes e.mu for the rest of the command
// without waiting for it: a CF or RedisBloom key's lock can be held long
// by a save or a SCANDUMP copying a large filter. If it is taken, it
// reports false and sets sess.wouldBlock: the command must have written
// nothing and changed nothing that a second run would do again, and it is
// run again off the loop (dispatch). Off a loop it does nothing: the
// command takes the lock where it needs it (lockEntry).
func (sess *session) holdOnLoop(e *entry) bool {
	if !sess.holdsShard || sess.held == e {
		return true
	}
	if sess.held != nil || !e.mu.TryLock() { // (no command locks two keys)
		sess.wouldBlock = true
		return false
	}
	sess.held = e
	return true
}

// lockEntry and unlockEntry take and release e.mu, unless the command
// holds it for its whole run (holdOnLoop).
func (sess *session) lockEntry(e *entry) {
	if sess.held != e {
		e.mu.Lock()
	}
}

func (sess *session) unlockEntry(e *entry) {
	if sess.held != e {
		e.mu.Unlock()
	}
}

// releaseHeld ends a hold of holdOnLoop, once the command is done.
func (sess *session) releaseHeld() {
	if sess.held != nil {
		sess.held.mu.Unlock()
		sess.held = nil
	}
}
