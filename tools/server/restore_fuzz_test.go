package server

import (
	"bytes"
	"io"
	"log/slog"
	"testing"

	"github.com/ohbloom/ohbloom/tools/rdb"
)

// FuzzRestore feeds RESTORE payloads: the input's first byte chooses
// whether the rest is sent as it is (checked by its CRC-64, which random
// bytes rarely pass) or framed as a payload with a right footer (the
// second byte its type), so that the decoders behind the checksum are
// reached. Every RESTORE must answer exactly one reply, never reach the
// panic guard, and allocate within max-filter-bytes; a payload taken must
// make a key whose DUMP RESTORE takes back, and whose DUMP then is the
// same.
func FuzzRestore(f *testing.F) {
	for _, x := range loadRDBGolden(f) {
		p := x.payload(f)
		f.Add(append([]byte{1}, p...))
		_, value, err := rdb.ParsePayload(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{0, byte(rdb.TypeModule2)}, value...))
	}
	s, err := New(Config{MaxFilterBytes: 1 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	sess := &session{authed: true, proto: 2}
	for _, seed := range [][]string{
		{"BF.RESERVE", "s", "0.01", "100"}, {"BF.ADD", "s", "a"},
		{"BF.RESERVE", "x", "0.01", "100", "NONSCALING"}, {"BF.ADD", "x", "a"},
		{"CF.ADD", "c", "a"},
	} {
		args := make([][]byte, len(seed))
		for i, a := range seed {
			args[i] = []byte(a)
		}
		s.exec(sess, &replyWriter{proto: 2}, args)
	}
	for _, key := range []string{"s", "x", "c"} {
		p, msg := s.dumpPayload(sess, key, s.store.get(0, key))
		if msg != "" {
			f.Fatal(msg)
		}
		f.Add(append([]byte{1}, p...))
		_, value, _ := rdb.ParsePayload(p)
		f.Add(append([]byte{0, byte(rdb.TypeModule2)}, value...))
	}
	run := func(t *testing.T, args ...[]byte) []byte {
		w := &replyWriter{proto: 2}
		s.exec(sess, w, args)
		rest, err := readReply(w.b)
		if err != nil || len(rest) != 0 {
			t.Fatalf("reply %q: %v, %d bytes left over", w.b, err, len(rest))
		}
		if bytes.Contains(w.b, []byte("internal error")) {
			t.Fatalf("%q panicked: %q", args[0], w.b)
		}
		return w.b
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		p := data[1:]
		if data[0]&1 == 0 {
			p = rdb.AppendPayload(nil, rdb.Type(data[1]), data[2:])
		}
		if r := run(t, []byte("RESTORE"), []byte("k"), []byte("0"), p, []byte("REPLACE")); string(r) != "+OK\r\n" {
			return
		}
		e := s.store.get(0, "k")
		if e == nil || e.sizeBytes() > 1<<20 {
			t.Fatalf("a RESTORE taken left %v", e)
		}
		dump, msg := s.dumpPayload(sess, "k", e)
		if msg != "" {
			t.Fatalf("DUMP of a restored key: %s", msg)
		}
		if r := run(t, []byte("RESTORE"), []byte("k2"), []byte("0"), dump, []byte("REPLACE")); string(r) != "+OK\r\n" {
			t.Fatalf("RESTORE of the DUMP of a restored key: %q", r)
		}
		again, msg := s.dumpPayload(sess, "k2", s.store.get(0, "k2"))
		if msg != "" {
			t.Fatal(msg)
		}
		if e.kind == kindRedisBloom && !bytes.Equal(again, dump) {
			t.Fatal("a RedisBloom key's DUMP changed through RESTORE")
		}
	})
}
