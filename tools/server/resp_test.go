package server

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

// parseAll feeds in to a parser in pieces of the given size, keeping the
// unparsed tail as a connection does, and returns the commands (arguments
// joined by "|") and the error that stopped it.
func parseAll(in []byte, piece int, lim parseLimits) ([]string, error) {
	var p requestParser
	var buf []byte
	var out []string
	for sent := 0; sent < len(in); {
		end := min(sent+piece, len(in))
		buf = append(buf, in[sent:end]...)
		sent = end
		for {
			args, n, err := p.next(buf, lim)
			if err != nil {
				return out, err
			}
			if n == 0 {
				break
			}
			if args != nil {
				parts := make([]string, len(args))
				for i, a := range args {
					parts[i] = string(a)
				}
				out = append(out, strings.Join(parts, "|"))
			}
			buf = buf[n:]
		}
	}
	return out, nil
}

func TestParserSplitsAnywhere(t *testing.T) {
	in := "*3\r\n$6\r\nBF.ADD\r\n$3\r\nkey\r\n$0\r\n\r\n" +
		"*0\r\n*-1\r\n" + // skipped, as by Redis
		"PING\r\n\r\n  \r\n" +
		"set \"a b\\x41\\n\" 'it\\'s' x\n" +
		"*1\r\n$4\r\nPINGxx" + // Redis skips the two bytes after a bulk unchecked
		"*2\r\n$4\r\necho\r\n$5\r\nhe\r\nl\r\n"
	want := []string{"BF.ADD|key|", "PING", "set|a bA\n|it's|x", "PING", "echo|he\r\nl"}
	lim := parseLimits{authed: true, maxRequest: 1 << 20}
	for piece := 1; piece <= len(in); piece++ {
		got, err := parseAll([]byte(in), piece, lim)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("in pieces of %d: %q, %v; want %q", piece, got, err, want)
		}
	}
}

func TestParserErrors(t *testing.T) {
	authed := parseLimits{authed: true, maxRequest: 1 << 20}
	anon := parseLimits{authed: false, maxRequest: 1 << 20}
	for _, c := range []struct {
		in   string
		lim  parseLimits
		want error
	}{
		{"*1\r\n$9223372036854775807\r\nabc\r\n", authed, errRequestTooLarge},
		{"*1\r\n$9223372036854775808\r\n", authed, errInvalidBulk},
		{"*1\r\n$99999999999999999999\r\n", authed, errInvalidBulk},
		{"*9223372036854775807\r\n", authed, errInvalidMultibulk},
		{"*9223372036854775807\r\n", anon, errUnauthMultibulk},
		{"*11\r\n", anon, errUnauthMultibulk},
		{"*10\r\n$16385\r\n", anon, errUnauthBulk},
		{"*1\r\n$-1\r\n", authed, errInvalidBulk},
		{"*01\r\n", authed, errInvalidMultibulk},
		{"*1\r\n$04\r\nPING\r\n", authed, errInvalidBulk},
		{"*1\r\n$+4\r\nPING\r\n", authed, errInvalidBulk},
		{"*1\r\n$-0\r\n", authed, errInvalidBulk},
		{"*1\r\n+PING\r\n", authed, protocolError("ERR Protocol error: expected '$', got '+'")},
		{"*1\r\n\r\n", authed, protocolError("ERR Protocol error: expected '$', got ' '")},
		{"*1" + strings.Repeat("1", 30), authed, errInvalidMultibulk}, // refused before its end
		{"*1\r\n$1" + strings.Repeat("1", 30), authed, errInvalidBulk},
		{"\"unbalanced\r\n", authed, errUnbalancedQuotes},
		{"'a'b\r\n", authed, errUnbalancedQuotes},
		{strings.Repeat("a ", 40_000), authed, errTooBigInline}, // no line end yet
		{strings.Repeat("a ", 40_000) + "\n", authed, errTooBigInline},
		{"*3\r\n", parseLimits{authed: true, maxRequest: 12}, errInvalidMultibulk},
	} {
		for _, piece := range []int{1, 7, len(c.in)} {
			_, err := parseAll([]byte(c.in), piece, c.lim)
			if err != c.want {
				t.Errorf("%.40q in pieces of %d: %v, want %v", c.in, piece, err, c.want)
			}
		}
	}
}

// A command in one-byte reads is parsed in time linear in its length:
// the parser resumes where it stopped, so the bytes it looks at in all
// are a small multiple of the bytes.
func TestParserResumes(t *testing.T) {
	var b strings.Builder
	b.WriteString("*1000\r\n")
	for range 1000 {
		b.WriteString("$10\r\n0123456789\r\n")
	}
	in := []byte(b.String())
	var p requestParser
	lim := parseLimits{authed: true, maxRequest: 1 << 20}
	calls := 0
	for n := 1; n <= len(in); n++ {
		args, used, err := p.next(in[:n], lim)
		calls++
		if err != nil {
			t.Fatal(err)
		}
		if used != 0 {
			if n != len(in) || len(args) != 1000 {
				t.Fatalf("done at %d of %d bytes with %d arguments", n, len(in), len(args))
			}
		}
		if p.pos > n {
			t.Fatalf("position %d past the %d bytes seen", p.pos, n)
		}
	}
	// Every argument's header was parsed once: the spans grew one by one.
	if len(p.spans) != 1000 {
		t.Fatalf("%d spans", len(p.spans))
	}
}

func TestReplyShapes(t *testing.T) {
	for _, c := range []struct {
		write      func(w replier)
		resp2, res string
	}{
		{func(w replier) { w.WriteNull() }, "$-1\r\n", "_\r\n"},
		{func(w replier) { w.WriteNullArray() }, "*-1\r\n", "_\r\n"},
		{func(w replier) { w.WriteBool(true); w.WriteBool(false) }, ":1\r\n:0\r\n", "#t\r\n#f\r\n"},
		{func(w replier) { w.WriteDouble(1.5) }, "$3\r\n1.5\r\n", ",1.5\r\n"},
		{func(w replier) { w.WriteDouble(3) }, "$1\r\n3\r\n", ",3\r\n"},
		{func(w replier) { w.WriteDouble(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{func(w replier) { w.WriteDouble(math.NaN()) }, "$3\r\nnan\r\n", ",nan\r\n"},
		{func(w replier) { w.WriteMap(2) }, "*4\r\n", "%2\r\n"},
		{func(w replier) { w.WriteSet(3) }, "*3\r\n", "~3\r\n"},
		{func(w replier) { w.WriteVerbatim("a:1") }, "$3\r\na:1\r\n", "=7\r\ntxt:a:1\r\n"},
		{func(w replier) { w.WriteError("ERR a\r\nb") }, "-ERR a  b\r\n", "-ERR a  b\r\n"},
		{func(w replier) { w.WriteString("OK\n") }, "+OK \r\n", "+OK \r\n"},
		{func(w replier) { w.WriteInt64(-7); w.WriteInt64(0) }, ":-7\r\n:0\r\n", ":-7\r\n:0\r\n"},
		{func(w replier) { w.WriteBulk(nil); w.WriteBulkString("ab") }, "$0\r\n\r\n$2\r\nab\r\n", "$0\r\n\r\n$2\r\nab\r\n"},
		{func(w replier) { w.WriteArray(0) }, "*0\r\n", "*0\r\n"},
	} {
		for proto, want := range map[int]string{2: c.resp2, 3: c.res} {
			w := &replyWriter{proto: proto}
			c.write(w)
			if string(w.b) != want {
				t.Errorf("RESP%d: %q, want %q", proto, w.b, want)
			}
		}
	}
}

// The path of a command, from its bytes to its reply, allocates nothing
// in steady state.
func TestCommandPathAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	sess := &session{authed: true, proto: 2}
	w := &replyWriter{proto: 2}
	var p requestParser
	lim := parseLimits{authed: true, maxRequest: 1 << 20}
	run := func(req []byte) {
		for len(req) > 0 {
			args, n, err := p.next(req, lim)
			if err != nil || n == 0 {
				t.Fatalf("%q: %v", req, err)
			}
			s.exec(sess, w, args)
			req = req[n:]
		}
		w.b = w.b[:0]
	}
	run([]byte("*4\r\n$10\r\nBF.RESERVE\r\n$5\r\nbench\r\n$4\r\n0.01\r\n$5\r\n10000\r\n"))
	for _, req := range []string{
		"*3\r\n$6\r\nBF.ADD\r\n$5\r\nbench\r\n$7\r\n1234567\r\n",
		"*3\r\n$9\r\nBF.EXISTS\r\n$5\r\nbench\r\n$7\r\n7654321\r\n",
		"*4\r\n$7\r\nBF.MADD\r\n$5\r\nbench\r\n$1\r\na\r\n$1\r\nb\r\n",
		"*1\r\n$4\r\nPING\r\n",
		"PING\r\n",
	} {
		b := []byte(req)
		buf := make([]byte, len(b))
		if n := testing.AllocsPerRun(1000, func() { copy(buf, b); run(buf) }); n != 0 {
			t.Errorf("%q: %v allocations per command", req, n)
		}
	}
}

func TestUnknownCommandText(t *testing.T) {
	got := unknownCommand([][]byte{[]byte("FOO"), []byte("a"), []byte("b")})
	if want := "ERR unknown command 'FOO', with args beginning with: 'a' 'b' "; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	long := unknownCommand([][]byte{bytes.Repeat([]byte("x"), 200), bytes.Repeat([]byte("y"), 100), bytes.Repeat([]byte("z"), 100)})
	if want := "ERR unknown command '" + strings.Repeat("x", 128) + "', with args beginning with: '" +
		strings.Repeat("y", 100) + "' '" + strings.Repeat("z", 25) + "' "; long != want {
		t.Fatalf("%q, want %q", long, want)
	}
}
