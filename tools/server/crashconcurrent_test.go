package server

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// parkedIn reports whether a goroutine waits for a lock (lock: the
// sync function it waits in) in function fn.
func parkedIn(fn, lock string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) && strings.Contains(g, lock) {
			return true
		}
	}
	return false
}

// TestChangeRacingItsKeysReplacement: a command found its key, and before
// it changed the key and logged the change, another client removed the
// key and made a new one of the same name (here the first command waits
// for the key's lock, held as a save holds it while it copies the
// filter; a descheduled thread makes the same gap). The change is to a
// key that is gone, and after a crash it must not appear in the new one:
// the server that ran on and the one started on its directory (its log
// fsynced, copied as a crash leaves it) hold the same.
func TestChangeRacingItsKeysReplacement(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cf      bool
		replace [][]string // "$dump" is a DUMP payload of a key of the same type
	}{
		{"BF FLUSHDB", false, [][]string{{"FLUSHDB"}, {"BF.ADD", "k", "y"}}},
		{"BF DEL", false, [][]string{{"DEL", "k"}, {"BF.ADD", "k", "y"}}},
		{"BF PEXPIRE 0", false, [][]string{{"PEXPIRE", "k", "0"}, {"BF.RESERVE", "k", "0.01", "1000"}}},
		{"BF RESTORE REPLACE", false, [][]string{{"RESTORE", "k", "0", "$dump", "REPLACE"}}},
		{"CF FLUSHALL", true, [][]string{{"FLUSHALL"}, {"CF.ADD", "k", "y"}}},
		{"CF DEL", true, [][]string{{"DEL", "k"}, {"CF.ADD", "k", "y"}}},
		{"CF RESTORE REPLACE", true, [][]string{{"RESTORE", "k", "0", "$dump", "REPLACE"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, addr := start(t, Config{DataDir: dir, AppendFsync: "always", SaveInterval: -1})
			a, b := dial(t, addr), dial(t, addr)
			add, check := "BF.ADD", "BF.EXISTS"
			if tc.cf {
				add, check = "CF.ADD", "CF.COUNT"
			}
			for _, cmd := range [][]string{{add, "k", "old"}, {add, "other", "z"}} {
				if got := a.do(t, cmd...); got != ":1" {
					t.Fatalf("%q: %s", cmd, got)
				}
			}
			dump, err := client(t, addr).Dump(context.Background(), "other").Result()
			if err != nil {
				t.Fatal(err)
			}
			e := s.store.get(0, "k")
			waitsIn, lock := "(*Server).addItems", "sync.(*RWMutex).RLock"
			if tc.cf {
				e.mu.Lock()
				waitsIn, lock = "(*Server).cfAdds", "sync.(*Mutex)"
			} else {
				e.adding.Lock()
			}
			if _, err := a.Write([]byte(resp(add, "k", "x"))); err != nil {
				t.Fatal(err)
			}
			waitFor(t, add+" to wait for the key's lock", func() bool { return parkedIn(waitsIn, lock) })
			for _, cmd := range tc.replace {
				cmd = slices.Clone(cmd)
				for i := range cmd {
					if cmd[i] == "$dump" {
						cmd[i] = dump
					}
				}
				if got := b.do(t, cmd...); got[0] == '-' {
					t.Fatalf("%q: %s", cmd[:2], got)
				}
			}
			if tc.cf {
				e.mu.Unlock()
			} else {
				e.adding.Unlock()
			}
			if got := a.reply(t); got != ":1" {
				t.Fatalf("%s k x, the key replaced meanwhile: %s", add, got)
			}
			state := func(c *rawConn) string {
				var out []string
				for _, item := range []string{"x", "y", "z", "old"} {
					out = append(out, item+" "+c.do(t, check, "k", item))
				}
				return strings.Join(out, ", ")
			}
			live := state(b)
			crashed := t.TempDir()
			copyDir(t, dir, crashed) // every reply is in, so every record is fsynced
			_, back := start(t, Config{DataDir: crashed, AppendFsync: "always"})
			if got := state(dial(t, back)); got != live {
				t.Fatalf("k after a crash: %s; the server that ran on: %s", got, live)
			}
		})
	}
}
