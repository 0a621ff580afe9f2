package server

import (
	"sync"
	"testing"
	"time"
)

// offLoop records the commands that start to run off their loops.
func offLoop(t *testing.T) <-chan string {
	started := make(chan string, 100)
	restoreAfterShutdown(t, &offLoopHook)
	offLoopHook = func(name string) { started <- name }
	return started
}

// awaitOffLoop waits until the command name starts to run off its loop.
func awaitOffLoop(t *testing.T, started <-chan string, name string) {
	t.Helper()
	deadline := time.After(30 * time.Second) // only a server that never does it meets this
	for {
		select {
		case got := <-started:
			if got == name {
				return
			}
		case <-deadline:
			t.Fatalf("%s never started off its loop", name)
		}
	}
}

// A command that must wait for a key's lock waits off its event loop: a
// CF key's lock is held (here by the test, as a save or a SCANDUMP holds
// it while it copies a large filter), a CF.ADD to it waits, and the other
// clients of the same loop are answered meanwhile. The loop used to wait
// in the lock, and every client of it with it.
func TestKeyLockWaitsOffTheLoop(t *testing.T) {
	started := offLoop(t)
	s, addr := start(t, Config{EventLoops: 1})
	adder, other := dial(t, addr), dial(t, addr)
	expect(t, adder, "CF.RESERVE c 1000\r\nBF.ADD b x\r\n", "+OK\r\n:1\r\n")
	unlock := holdKeyLock(t, s, "c")
	adder.Write([]byte("CF.ADD c x\r\nCF.COUNT c x\r\n"))
	awaitOffLoop(t, started, "cf.add")
	expect(t, other, "PING\r\nBF.EXISTS b x\r\nCF.COUNT c y\r\n", "+PONG\r\n:1\r\n:0\r\n")
	noReplyYet(t, adder, "a CF.ADD to a locked key")
	unlock()
	expect(t, adder, "", ":1\r\n:1\r\n")
}

// EXEC holds the keys its commands name, not the server: while a
// transaction waits in the middle of its run (for a key's lock the test
// holds), other clients' commands on other keys, PING and INFO are
// answered, a command on its key waits until it ends, and so does a KEYS
// while it may have created a key. It used to hold every client.
func TestExecHoldsOnlyItsKeys(t *testing.T) {
	started := offLoop(t)
	s, addr := start(t, Config{EventLoops: 1})
	tx, other, onKey, lister := dial(t, addr), dial(t, addr), dial(t, addr), dial(t, addr)
	expect(t, tx, "CF.RESERVE c 1000\r\nBF.ADD b x\r\n", "+OK\r\n:1\r\n")
	if latchOf([]byte("c")) == latchOf([]byte("b")) || latchOf([]byte("c")) == latchOf([]byte("new")) {
		t.Fatal("the keys share a latch: pick other names")
	}
	unlock := holdKeyLock(t, s, "c")
	// BF.ADD new creates a key: the transaction takes the change mode.
	expect(t, tx, "MULTI\r\nBF.ADD new x\r\nCF.ADD c x\r\nCF.COUNT c x\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n")
	tx.Write([]byte("EXEC\r\n"))
	waitFor(t, "the transaction to hold its keys", func() bool {
		s.iso.mu.Lock()
		defer s.iso.mu.Unlock()
		return s.iso.txChange == 1
	})
	expect(t, other, "PING\r\nBF.EXISTS b x\r\nBF.ADD b y\r\nCONFIG GET dir\r\n", "+PONG\r\n:1\r\n:1\r\n*2\r\n$3\r\ndir\r\n$0\r\n\r\n")
	if got := other.do(t, "INFO"); got[0] != '$' {
		t.Fatalf("INFO during a transaction: %q", got)
	}
	onKey.Write([]byte("CF.COUNT c x\r\n"))
	awaitOffLoop(t, started, "cf.count")
	lister.Write([]byte("KEYS *\r\n"))
	awaitOffLoop(t, started, "keys")
	noReplyYet(t, onKey, "a command on the transaction's key")
	noReplyYet(t, lister, "KEYS while a transaction may create keys")
	unlock()
	expect(t, tx, "", "*3\r\n:1\r\n:1\r\n:1\r\n")
	expect(t, onKey, "", ":1\r\n")
	expect(t, lister, "", "*3\r\n$1\r\nb\r\n$1\r\nc\r\n$3\r\nnew\r\n")
}

// A transaction that lists keys sees them as at one instant: a key
// created by another client cannot land between two of its listings.
func TestExecListingsAgree(t *testing.T) {
	started := offLoop(t)
	s, addr := start(t, Config{EventLoops: 1})
	tx, creator := dial(t, addr), dial(t, addr)
	expect(t, tx, "CF.RESERVE c 1000\r\n", "+OK\r\n")
	unlock := holdKeyLock(t, s, "c")
	expect(t, tx, "MULTI\r\nDBSIZE\r\nCF.ADD c x\r\nKEYS *\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n")
	tx.Write([]byte("EXEC\r\n"))
	waitFor(t, "the transaction to hold the list mode", func() bool {
		s.iso.mu.Lock()
		defer s.iso.mu.Unlock()
		return s.iso.txList == 1
	})
	creator.Write([]byte("BF.ADD made x\r\n"))
	awaitOffLoop(t, started, "bf.add")
	expect(t, dial(t, addr), "BF.EXISTS made x\r\nPING\r\n", ":0\r\n+PONG\r\n")
	unlock()
	expect(t, tx, "", "*3\r\n:1\r\n:1\r\n*1\r\n$1\r\nc\r\n")
	expect(t, creator, "", ":1\r\n")
}

// holdKeyLock takes a key's lock, as a save or a SCANDUMP holds it, until
// the returned function (or the test's end, so that its server can shut
// down) releases it.
func holdKeyLock(t *testing.T, s *Server, key string) (unlock func()) {
	e := s.store.get(0, key)
	e.mu.Lock()
	var once sync.Once
	unlock = func() { once.Do(e.mu.Unlock) }
	t.Cleanup(unlock) // before the server's shutdown, which waits for the commands
	return unlock
}
