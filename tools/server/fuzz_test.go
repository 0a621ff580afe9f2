package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
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
		"CF.COMPACT\x00c", "CF.DEBUG\x00c", "CF.SCANDUMP\x00c\x001",
		"CF.LOADCHUNK\x00h\x001\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x14\x00\x01\x00",
		"CF.LOADCHUNK\x00h\x003\x00ab",
		"SCAN\x000\x00MATCH\x00k*\x00COUNT\x003", "KEYS\x00[a-", "HELLO\x002\x00SETNAME\x00me", "HELLO\x003", "AUTH\x00pw",
		"CLIENT\x00SETINFO\x00LIB-NAME\x00x", "CONFIG\x00GET\x00*", "INFO", "TYPE\x00keep", "DEL\x00keep",
		"EXPIRE\x00keep\x0010\x00NX", "PEXPIREAT\x00keep\x004102444800123\x00GT", "TTL\x00keep", "PERSIST\x00keep",
		"SELECT\x003", "RENAME\x00keep\x00k2", "COPY\x00keep\x00k3\x00DB\x001\x00REPLACE", "MOVE\x00keep\x002",
		"SWAPDB\x000\x001",
		"COMMAND\x00INFO\x00bf.add\x00config|get", "COMMAND\x00GETKEYSANDFLAGS\x00DEL\x00a", "COMMAND\x00DOCS\x00acl",
		"ACL\x00SETUSER\x00u\x00on\x00>p\x00%R~k*\x00+@read\x00(~x +get)", "ACL\x00DRYRUN\x00u\x00BF.ADD\x00keep\x00x",
		"ACL\x00GETUSER\x00u", "CONFIG\x00SET\x00slowlog-max-len\x003\x00slowlog-log-slower-than\x000",
		"CLIENT\x00KILL\x00ID\x001", "MEMORY\x00USAGE\x00keep\x00SAMPLES\x005", "OBJECT\x00IDLETIME\x00keep",
		"INFO\x00all", "SLOWLOG\x00GET\x00-1", "LATENCY\x00DOCTOR", "CLIENT\x00LIST\x00ID\x001",
	} {
		f.Add([]byte(seed))
	}
	s, err := New(Config{MaxFilterBytes: 1 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	keep := func() {
		e, _, _ := s.store.getOrCreate(0, "keep", func() (*entry, error) {
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
		case "del", "unlink", "flushall", "flushdb", "rename", "move", "swapdb", "expire", "pexpire", "expireat", "pexpireat":
			// They may remove or move keep, or give it an expiry: back
			// to a keep of database 0 without one.
			if lowerName(args[0]) == "swapdb" {
				s.exec(&session{authed: true, proto: 2}, &replyWriter{proto: 2}, [][]byte{[]byte("FLUSHALL")})
			}
			s.exec(&session{authed: true, proto: 2}, &replyWriter{proto: 2}, [][]byte{[]byte("PERSIST"), []byte("keep")})
			keep()
			return
		}
		e := s.store.get(0, "keep")
		for i := range 50 {
			if e == nil || !e.bloomTest([]byte(strconv.Itoa(i))) {
				t.Fatalf("command %q lost item %d of key keep", args, i)
			}
		}
	})
}

// readReply parses one RESP2 or RESP3 reply off b (HELLO 3 switches a
// connection to RESP3) and returns what follows it.
func readReply(b []byte) ([]byte, error) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return nil, errors.New("no line")
	}
	line, rest := string(b[1:i]), b[i+2:]
	// elements reads n replies off rest, for the aggregates.
	elements := func(n int) ([]byte, error) {
		var err error
		for range n {
			if rest, err = readReply(rest); err != nil {
				return nil, err
			}
		}
		return rest, nil
	}
	switch b[0] {
	case '+', '-':
		if strings.ContainsAny(line, "\r\n") {
			return nil, errors.New("line break in a simple string")
		}
		return rest, nil
	case ':', '(':
		if _, ok := new(big.Int).SetString(line, 10); !ok {
			return nil, fmt.Errorf("integer %q", line)
		}
		return rest, nil
	case ',':
		_, err := strconv.ParseFloat(line, 64)
		return rest, err
	case '#':
		if line != "t" && line != "f" {
			return nil, fmt.Errorf("boolean %q", line)
		}
		return rest, nil
	case '_':
		if line != "" {
			return nil, fmt.Errorf("null %q", line)
		}
		return rest, nil
	case '$', '!', '=':
		n, err := strconv.Atoi(line)
		if err != nil || n < -1 || n == -1 && b[0] != '$' {
			return nil, fmt.Errorf("bulk length %q", line)
		}
		if n == -1 {
			return rest, nil
		}
		if len(rest) < n+2 || string(rest[n:n+2]) != "\r\n" {
			return nil, errors.New("short bulk")
		}
		if b[0] == '=' && (n < 4 || rest[3] != ':') {
			return nil, errors.New("verbatim string without its format")
		}
		return rest[n+2:], nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(line)
		if err != nil || n < -1 || n == -1 && b[0] != '*' {
			return nil, fmt.Errorf("aggregate length %q", line)
		}
		if b[0] == '%' || b[0] == '|' {
			n *= 2 // key and value
		}
		if rest, err = elements(n); err != nil {
			return nil, err
		}
		if b[0] == '|' { // attributes come before the reply they describe
			return readReply(rest)
		}
		return rest, nil
	}
	return nil, fmt.Errorf("unknown reply type %q", b[0])
}

// FuzzConnection sends arbitrary bytes, in arbitrary pieces, over a real
// connection to a live server (with a password, so that both sides of
// AUTH are reached, and small limits, so that they are hit). After each
// input the connection is closed; the server must then hold no buffered
// bytes, answer an authenticated PING, and still hold the items stored
// before.
func FuzzConnection(f *testing.F) {
	for _, seed := range []string{
		"PING\r\n", "AUTH pw\r\nBF.ADD keep x\r\n", "*1\r\n$9223372036854775807\r\nabc\r\n",
		"*9223372036854775807\r\n", "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n*3\r\n$6\r\nBF.ADD\r\n$4\r\nkeep\r\n$1\r\n1\r\n",
		"AUTH pw\r\nMULTI\r\nBF.ADD keep a\r\nEXEC\r\n", "AUTH pw\r\nHELLO 3\r\nBF.INFO keep\r\nCONFIG GET *\r\nINFO\r\n",
		"a a a a \"b\\x41\" 'c'\r\n", "AUTH pw\r\n*3\r\n$6\r\nBF.ADD\r\n$4\r\nkeep\r\n$5000\r\nxx",
		"AUTH pw\r\nMULTI\r\nBF.ADD keep aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nBF.ADD keep aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
	} {
		f.Add([]byte(seed), uint64(len(seed)))
	}
	s, err := New(Config{Password: "pw", MaxRequestBytes: 4096, MaxBufferedBytes: 16384, MaxFilterBytes: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go s.Serve(ln)
	f.Cleanup(func() { s.Shutdown(context.Background()) })
	addr := ln.Addr().String()
	keep := func() {
		e, _, _ := s.store.getOrCreate(0, "keep", func() (*entry, error) {
			return s.newBloom(bloomOptions{errorRate: 0.01, capacity: 100, expansion: 2})
		})
		for i := range 50 {
			s.bloomAdd(e, []byte(strconv.Itoa(i)))
		}
	}
	keep()
	f.Fuzz(func(t *testing.T, data []byte, splits uint64) {
		s.auth.init() // wrong passwords of earlier inputs must not slow this one
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		go io.Copy(io.Discard, conn) // replies
		for rest := data; len(rest) > 0; {
			splits = splits*6364136223846793005 + 1442695040888963407
			n := min(len(rest), 1+int(splits>>58))
			if _, err := conn.Write(rest[:n]); err != nil {
				break // the server closed it: a protocol error, QUIT
			}
			rest = rest[n:]
			if b := s.buffered.Load(); b > s.cfg.MaxBufferedBytes {
				t.Fatalf("%d bytes buffered, budget %d", b, s.cfg.MaxBufferedBytes)
			}
			if b := s.unauthBuffered.Load(); b < 0 || b > s.cfg.MaxUnauthBufferedBytes {
				t.Fatalf("%d bytes buffered by unauthenticated clients, limit %d", b, s.cfg.MaxUnauthBufferedBytes)
			}
		}
		conn.Close()
		// The event: the server has closed its side too.
		waitFor(t, "the server to close the connection", func() bool { return s.clients.Load() == 0 })
		if b, u := s.buffered.Load(), s.unauthBuffered.Load(); b != 0 || u != 0 {
			t.Fatalf("%d bytes (%d unauthenticated) still buffered after the connection closed", b, u)
		}
		check, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer check.Close()
		check.SetDeadline(time.Now().Add(10 * time.Second))
		check.Write([]byte("AUTH pw\r\nPING\r\n"))
		reply := make([]byte, len("+OK\r\n+PONG\r\n"))
		if _, err := io.ReadFull(check, reply); err != nil || string(reply) != "+OK\r\n+PONG\r\n" {
			t.Fatalf("after the input, AUTH and PING: %q %v", reply, err)
		}
		lower := bytes.ToLower(data)
		for _, w := range []string{"del", "unlink", "flush"} {
			if bytes.Contains(lower, []byte(w)) {
				keep()
				return
			}
		}
		e := s.store.get(0, "keep")
		for i := range 50 {
			if e == nil || !e.bloomTest([]byte(strconv.Itoa(i))) {
				t.Fatalf("input %q lost item %d of key keep", data, i)
			}
		}
	})
}

// FuzzConfigFile reads arbitrary configuration files: an error or a
// Config, never a panic; what it accepts, CONFIG REWRITE's quoting reads
// back the same.
func FuzzConfigFile(f *testing.F) {
	for _, seed := range []string{
		"maxmemory 100mb\nport 7000\n", "requirepass \"a b\\x41\"\nappendfsync always\n", "# comment\n\nloglevel notice\n",
		"slowlog-max-len 5\nlatency-monitor-threshold 10\n", "bind 127.0.0.1 ::1\n", "user x on\n", "save 900 1\nsave \"\"\n",
		"maxmemory '1gb'\n", "dir \"unbalanced\n",
		"requirepass \"\\f\"\n", "requirepass \"\\x0b\\x80\"\n", "max-filter-bytes 1kb\nsave-interval 1m\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Config
		if err := parseConfig(data, "fuzz.conf", &c); err != nil {
			return
		}
		if c.Password != "" {
			var again Config
			line := "requirepass " + quoteConfigValue(c.Password) + "\n"
			if err := parseConfig([]byte(line), "again.conf", &again); err != nil || again.Password != c.Password {
				t.Fatalf("requirepass %q written as %q read back %q (%v)", c.Password, line, again.Password, err)
			}
		}
	})
}

// FuzzACLFile reads arbitrary ACL files: an error or users, never a
// panic; the users it accepts, written as ACL SAVE writes them, read back
// the same.
func FuzzACLFile(f *testing.F) {
	for _, seed := range []string{
		"user default on nopass ~* &* +@all\n", "user r on >pw ~blocks:* +@read -keys (%R~x* +ping)\n",
		"user w off #" + strings.Repeat("a", 64) + " resetchannels &c* -@all +bf.add +config|get +select|0\n",
		"user a on\nuser a off\n", "user x on (~a +get\n", "nouser\n", "user b on +@nosuchcategory\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		users, err := parseUsers(data, "fuzz.acl")
		if err != nil {
			return
		}
		var b strings.Builder
		for _, name := range sortedKeys(users) {
			fmt.Fprintf(&b, "user %s %s\n", name, users[name].describe())
		}
		again, err := parseUsers([]byte(b.String()), "again.acl")
		if err != nil {
			t.Fatalf("users %q written as %q do not read back: %v", data, b.String(), err)
		}
		for name, st := range users {
			if again[name] == nil || again[name].describe() != st.describe() {
				t.Fatalf("user %s: %q read back as %v", name, st.describe(), again[name])
			}
		}
	})
}
