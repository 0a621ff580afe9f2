package server

import (
	"strconv"
	"testing"
)

// A transaction that names more keys than there are latches holds every
// stripe; a command on a key it does not name still fits beside it, and
// one on a key it names, or on every key, does not. A transaction that
// holds its stripes whole (RENAME's, no names) keeps every key of them.
func TestClaimsMeetByName(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	is := &s.iso
	command := func(name string, args ...string) *claim {
		c := &claim{}
		b := make([][]byte, len(args)+1)
		b[0] = []byte(name)
		for i, a := range args {
			b[i+1] = []byte(a)
		}
		s.addClaim(c, 0, name, b)
		return c
	}
	tx := &claim{tx: true}
	for i := range 50_000 {
		s.addClaim(tx, 0, "bf.exists", [][]byte{[]byte("bf.exists"), []byte("k" + strconv.Itoa(i)), []byte("x")})
	}
	for w := range tx.stripes {
		if tx.stripes[w] != ^uint64(0) {
			t.Fatal("50,000 keys do not cover every stripe: pick more")
		}
	}
	if !is.tryAcquire(tx) {
		t.Fatal("the transaction does not fit alone")
	}
	for _, c := range []struct {
		claim *claim
		fits  bool
	}{
		{command("bf.exists", "other", "x"), true},
		{command("exists", "other", "another"), true},
		{command("bf.exists", "k7", "x"), false},
		{command("exists", "other", "k49999"), false},
		{command("flushall"), false},
	} {
		if got := is.free(c.claim); got != c.fits {
			t.Errorf("a command on %q fits beside the transaction: %v, want %v", c.claim.names, got, c.fits)
		}
	}
	other := &claim{tx: true}
	other.stripes.add([]byte("other"))
	if is.tryAcquire(other) {
		t.Error("two transactions share a stripe")
	}
	is.release(tx)

	whole := &claim{tx: true, change: true} // as cmd_move.go's alone makes it
	whole.stripes.add([]byte("renamed"))
	if !is.tryAcquire(whole) {
		t.Fatal("the rename's claim does not fit alone")
	}
	c := command("bf.exists", "renamed", "x")
	if is.free(c) {
		t.Error("a command on a key a rename holds fits beside it")
	}
	sameStripe := ""
	for i := 0; sameStripe == ""; i++ {
		if k := "s" + strconv.Itoa(i); latchOf([]byte(k)) == latchOf([]byte("renamed")) {
			sameStripe = k
		}
	}
	if is.free(command("bf.exists", sameStripe, "x")) {
		t.Error("a command on another key of a rename's stripe fits beside it: the rename names no keys")
	}
	is.release(whole)
	if !is.free(c) {
		t.Error("a command waits for a released claim")
	}
}
