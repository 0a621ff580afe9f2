package server

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"testing"

	"github.com/zeebo/xxh3"
)

// Unit tests of what TestAuthenticatedAttacks found holding the other
// clients: transactions' claims by name, the slow log's ring, and reading
// and hashing large filters in pieces.

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

// The slow log's ring keeps the newest entries, newest first, through
// wrapping and through slowlog-max-len shrinking and growing, at any
// point of the ring.
func TestSlowlogRing(t *testing.T) {
	var l slowlog
	next := int64(0)
	add := func(n int, max int64) {
		for range n {
			l.mu.Lock()
			l.put(slowlogEntry{id: next}, max)
			l.mu.Unlock()
			next++
		}
	}
	ids := func(n int64) []int64 {
		var out []int64
		for _, e := range l.newest(n) {
			out = append(out, e.id)
		}
		return out
	}
	expect := func(n int64, want ...int64) {
		t.Helper()
		if got := ids(n); !slices.Equal(got, want) {
			t.Fatalf("newest(%d) = %v, want %v", n, got, want)
		}
	}
	add(3, 4)
	expect(-1, 2, 1, 0)
	add(3, 4) // wraps
	expect(-1, 5, 4, 3, 2)
	expect(2, 5, 4)
	expect(100, 5, 4, 3, 2)
	add(1, 6) // longer now, the ring wrapped
	expect(-1, 6, 5, 4, 3, 2)
	add(4, 6)
	expect(-1, 10, 9, 8, 7, 6, 5)
	add(1, 3) // shorter: the oldest go
	expect(-1, 11, 10, 9)
	add(2, 3)
	l.trim(2)
	expect(-1, 13, 12)
	if l.len() != 2 {
		t.Fatalf("len %d", l.len())
	}
	l.trim(5) // no longer: nothing to keep
	add(1, 5)
	expect(-1, 14, 13, 12)
	l.reset()
	expect(-1)
	add(2, 1)
	expect(-1, 16)
}

// hashLarge is xxh3.Hash, and readChunked reads what io.ReadFull reads,
// sized or not, and says so when the bytes run out.
func TestChunkedHashAndRead(t *testing.T) {
	data := make([]byte, 3*copyChunk+1000)
	for i := range data {
		data[i] = byte(i * 7 / 3)
	}
	for _, n := range []int{0, 1, 200, 1024, 1025, copyChunk, copyChunk + 1, len(data)} {
		if got, want := hashLarge(data[:n]), xxh3.Hash(data[:n]); got != want {
			t.Fatalf("hashLarge of %d bytes: %#x, xxh3.Hash %#x", n, got, want)
		}
		for _, sized := range []bool{false, true} {
			got, err := readChunked(bytes.NewReader(data), int64(n), sized)
			if err != nil || !bytes.Equal(got, data[:n]) {
				t.Fatalf("readChunked of %d bytes (sized %v): %d bytes, %v", n, sized, len(got), err)
			}
		}
	}
	if _, err := readChunked(bytes.NewReader(data[:copyChunk+5]), copyChunk+6, false); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("readChunked past the end: %v", err)
	}
}
