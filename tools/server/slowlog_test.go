package server

import (
	"slices"
	"testing"
)

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
