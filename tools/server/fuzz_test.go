package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
)

// FuzzExec runs arbitrary commands (arguments split at NUL bytes) against a
// server holding a filter. Every command must answer exactly one
// well-formed RESP reply, never reach the panic guard, and leave the
// filter's items in place unless it deletes keys.
func FuzzExec(f *testing.F) {
	for _, seed := range []string{
		"PING", "bf.add\x00keep\x00v", "BF.RESERVE\x00k\x000.01\x00100\x00EXPANSION\x002\x00NONSCALING",
		"BF.INSERT\x00k\x00CAPACITY\x0010\x00ERROR\x000.5\x00ITEMS\x00a\x00b", "BF.MEXISTS\x00keep\x001\x002",
		"BF.INFO\x00keep\x00ITEMS", "BF.SCANDUMP\x00keep\x000", "BF.LOADCHUNK\x00n\x009\x00\x01\x00\x00\x00\x00\x00\x00\x00",
		"CF.RESERVE\x00c\x0010\x00BUCKETSIZE\x004", "CF.INSERTNX\x00c\x00ITEMS\x00x", "CF.DEL\x00c\x00x", "CF.COUNT\x00c\x00x",
		"SCAN\x000\x00MATCH\x00k*\x00COUNT\x003", "KEYS\x00[a-", "HELLO\x002\x00SETNAME\x00me", "AUTH\x00pw",
		"CLIENT\x00SETINFO\x00LIB-NAME\x00x", "CONFIG\x00GET\x00*", "INFO", "TYPE\x00keep", "DEL\x00keep",
	} {
		f.Add([]byte(seed))
	}
	s, err := New(Config{MaxFilterBytes: 1 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	keep := func() {
		e, _, _ := s.store.getOrCreate("keep", func() (*entry, error) {
			return s.newBloom(bloomOptions{errorRate: 0.01, capacity: 100, expansion: 2})
		})
		for i := range 50 {
			s.bloomAdd(e, []byte(strconv.Itoa(i)))
		}
	}
	keep()
	f.Fuzz(func(t *testing.T, data []byte) {
		args := bytes.Split(data, []byte{0})
		w := &replyWriter{proto: 2}
		s.exec(&session{authed: true, proto: 2}, w, args)
		out := bytes.NewBuffer(w.b)
		rest, err := readReply(out.Bytes())
		if err != nil || len(rest) != 0 {
			t.Fatalf("reply %q: %v, %d bytes left over", out.Bytes(), err, len(rest))
		}
		if bytes.Contains(out.Bytes(), []byte("internal error")) {
			t.Fatalf("command %q panicked: %q", args, out.Bytes())
		}
		switch lowerName(args[0]) {
		case "del", "unlink", "flushall", "flushdb":
			keep()
			return
		}
		e := s.store.get("keep")
		for i := range 50 {
			if e == nil || !e.bloomTest([]byte(strconv.Itoa(i))) {
				t.Fatalf("command %q lost item %d of key keep", args, i)
			}
		}
	})
}

// readReply parses one RESP2 reply off b and returns what follows it.
func readReply(b []byte) ([]byte, error) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return nil, errors.New("no line")
	}
	line, rest := string(b[1:i]), b[i+2:]
	switch b[0] {
	case '+', '-':
		if strings.ContainsAny(line, "\r\n") {
			return nil, errors.New("line break in a simple string")
		}
		return rest, nil
	case ':':
		_, err := strconv.ParseInt(line, 10, 64)
		return rest, err
	case '$':
		n, err := strconv.Atoi(line)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("bulk length %q", line)
		}
		if n == -1 {
			return rest, nil
		}
		if len(rest) < n+2 || string(rest[n:n+2]) != "\r\n" {
			return nil, errors.New("short bulk")
		}
		return rest[n+2:], nil
	case '*':
		n, err := strconv.Atoi(line)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("array length %q", line)
		}
		for range n {
			if rest, err = readReply(rest); err != nil {
				return nil, err
			}
		}
		return rest, nil
	}
	return nil, fmt.Errorf("unknown reply type %q", b[0])
}
