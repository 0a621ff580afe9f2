package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// RedisBloom's replies, byte for byte, in both protocols: what rebloom.c's
// command functions send (their parsing order, error texts, and
// RedisModule_ReplyWithBool or _ReplyWithLongLong, _ReplyWithMapOrArray),
// for every BF.* and CF.* command and option of its documentation.

// resp encodes a command as a client sends it.
func resp(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// rawReply reads one whole reply, of either protocol, as its bytes.
func rawReply(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading a reply: %v (%q)", err, line)
	}
	out := line
	n, _ := strconv.Atoi(strings.TrimSuffix(line[1:], "\r\n"))
	switch line[0] {
	case '$', '=':
		if n >= 0 {
			b := make([]byte, n+2)
			if _, err := io.ReadFull(r, b); err != nil {
				t.Fatal(err)
			}
			out += string(b)
		}
	case '*', '~', '>':
		for range n {
			out += rawReply(t, r)
		}
	case '%':
		for range 2 * n {
			out += rawReply(t, r)
		}
	}
	return out
}

// compatConn is a raw connection in one protocol.
type compatConn struct {
	*rawConn
	proto int
}

func dialProto(t *testing.T, addr string, proto int) *compatConn {
	c := &compatConn{dial(t, addr), proto}
	if proto == 3 {
		c.Write([]byte(resp("HELLO", "3")))
		rawReply(t, c.r)
	}
	return c
}

func (c *compatConn) run(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := c.Write([]byte(resp(args...))); err != nil {
		t.Fatal(err)
	}
	return rawReply(t, c.r)
}

// b2 and b3 are a boolean in each protocol.
func boolReply(proto int, v bool) string {
	switch {
	case proto == 3 && v:
		return "#t\r\n"
	case proto == 3:
		return "#f\r\n"
	case v:
		return ":1\r\n"
	}
	return ":0\r\n"
}

func TestRedisBloomRepliesInBothProtocols(t *testing.T) {
	s, addr := start(t, Config{})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			s.store.flush()
			c := dialProto(t, addr, proto)
			b := func(v bool) string { return boolReply(proto, v) }
			arr := func(items ...string) string { return fmt.Sprintf("*%d\r\n", len(items)) + strings.Join(items, "") }
			i := func(n int64) string { return fmt.Sprintf(":%d\r\n", n) }
			null := "$-1\r\n"
			if proto == 3 {
				null = "_\r\n"
			}
			// one field of BF.INFO: a map of one in RESP3, an array of the
			// value alone in RESP2.
			field := func(name, value string) string {
				if proto == 3 {
					return "%1\r\n+" + name + "\r\n" + value
				}
				return "*1\r\n" + value
			}
			info := func(pairs ...string) string {
				head := fmt.Sprintf("*%d\r\n", len(pairs))
				if proto == 3 {
					head = fmt.Sprintf("%%%d\r\n", len(pairs)/2)
				}
				var out strings.Builder
				out.WriteString(head)
				for k := 0; k < len(pairs); k += 2 {
					out.WriteString("+" + pairs[k] + "\r\n" + pairs[k+1])
				}
				return out.String()
			}
			// The size of a key's filter, known once the key is made.
			bfSize := func(key string) string { return "{size:" + key + "}" }
			sizes := regexp.MustCompile(`\{size:([^}]*)\}`)
			for _, x := range []struct {
				args []string
				want string
			}{
				{[]string{"BF.RESERVE", "k", "0.01", "100"}, "+OK\r\n"},
				{[]string{"BF.ADD", "k", "a"}, b(true)},
				{[]string{"BF.ADD", "k", "a"}, b(false)},
				{[]string{"BF.MADD", "k", "a", "b"}, arr(b(false), b(true))},
				{[]string{"BF.EXISTS", "k", "a"}, b(true)},
				{[]string{"BF.EXISTS", "k", "zz"}, b(false)},
				{[]string{"BF.EXISTS", "missing", "a"}, b(false)},
				{[]string{"BF.MEXISTS", "k", "a", "zz"}, arr(b(true), b(false))},
				{[]string{"BF.MEXISTS", "missing", "a", "b"}, arr(b(false), b(false))},
				{[]string{"BF.INSERT", "k", "ITEMS", "c", "a"}, arr(b(true), b(false))},
				{[]string{"BF.CARD", "k"}, i(3)},
				{[]string{"BF.CARD", "missing"}, i(0)},
				{[]string{"BF.INFO", "k", "CAPACITY"}, field("Capacity", i(100))},
				{[]string{"BF.INFO", "k", "capacity"}, field("Capacity", i(100))},
				{[]string{"BF.INFO", "k", "Filters"}, field("Number of filters", i(1))},
				{[]string{"BF.INFO", "k", "ITEMS"}, field("Number of items inserted", i(3))},
				{[]string{"BF.INFO", "k", "expansion"}, field("Expansion rate", i(2))},
				{[]string{"BF.INFO", "k", "SIZE"}, field("Size", bfSize("k"))},
				{[]string{"BF.INFO", "k"}, info("Capacity", i(100), "Size", bfSize("k"), "Number of filters", i(1),
					"Number of items inserted", i(3), "Expansion rate", i(2))},
				// EXPANSION, NONSCALING, and what RedisBloom accepts of them.
				{[]string{"BF.RESERVE", "x4", "0.01", "100", "EXPANSION", "4"}, "+OK\r\n"},
				{[]string{"BF.INFO", "x4", "EXPANSION"}, field("Expansion rate", i(4))},
				{[]string{"BF.RESERVE", "x1", "0.01", "100", "expansion", "1"}, "+OK\r\n"},
				{[]string{"BF.RESERVE", "xmax", "0.01", "100", "EXPANSION", "32768"}, "+OK\r\n"},
				{[]string{"BF.RESERVE", "ns", "0.01", "100", "NONSCALING"}, "+OK\r\n"},
				{[]string{"BF.INFO", "ns", "EXPANSION"}, field("Expansion rate", null)},
				{[]string{"BF.INFO", "ns"}, info("Capacity", i(100), "Size", bfSize("ns"), "Number of filters", i(1),
					"Number of items inserted", i(0), "Expansion rate", null)},
				{[]string{"BF.RESERVE", "x0", "0.01", "100", "EXPANSION", "0"}, "+OK\r\n"},
				{[]string{"BF.INFO", "x0", "EXPANSION"}, field("Expansion rate", null)},
				{[]string{"BF.RESERVE", "nsx0", "0.01", "100", "NONSCALING", "EXPANSION", "0"}, "+OK\r\n"},
				{[]string{"BF.RESERVE", "ignored", "0.01", "100", "GROWTH", "3"}, "+OK\r\n"},
				{[]string{"BF.INFO", "ignored", "EXPANSION"}, field("Expansion rate", i(2))},
				{[]string{"BF.RESERVE", "nonscaling", "0.01", "100"}, "+OK\r\n"}, // the key is an argument like any other
				{[]string{"BF.INFO", "nonscaling", "EXPANSION"}, field("Expansion rate", null)},
				{[]string{"BF.RESERVE", "expansion", "0.01", "100"}, "-ERR bad expansion\r\n"},
				{[]string{"BF.RESERVE", "capped", "0.9", "100"}, "+OK\r\n"},
				{[]string{"BF.INSERT", "i1", "NONSCALING", "EXPANSION", "0", "ITEMS", "a"}, arr(b(true))},
				{[]string{"BF.INSERT", "i2", "NONSCALING", "EXPANSION", "3", "ITEMS", "a"}, arr(b(true))},
				{[]string{"BF.INFO", "i2", "EXPANSION"}, field("Expansion rate", null)},
				{[]string{"BF.INSERT", "i3", "EXPANSION", "0", "ITEMS", "a"}, arr(b(true))},
				{[]string{"BF.INFO", "i3", "EXPANSION"}, field("Expansion rate", null)},
				{[]string{"BF.INSERT", "i4", "CAPACITY", "50", "ERROR", "0.001", "EXPANSION", "5", "ITEMS", "a", "b"}, arr(b(true), b(true))},
				{[]string{"BF.INFO", "i4", "EXPANSION"}, field("Expansion rate", i(5))},
				{[]string{"BF.INFO", "i4", "CAPACITY"}, field("Capacity", i(50))},
				{[]string{"BF.INSERT", "i5", "n", "ITEMS", "a"}, arr(b(true))}, // N.. without C third: NONSCALING
				{[]string{"BF.INFO", "i5", "EXPANSION"}, field("Expansion rate", null)},
				{[]string{"BF.INSERT", "i6", "Igor", "a"}, arr(b(true))}, // I..: ITEMS
				{[]string{"BF.INSERT", "i7", "NOCREATE", "ITEMS", "a"}, "-ERR not found\r\n"},
				{[]string{"BF.INSERT", "i7", "nocx", "ITEMS", "a"}, "-ERR not found\r\n"},
				{[]string{"BF.INSERT", "k", "NOCREATE", "ITEMS", "d"}, arr(b(true))},
				// A full NONSCALING filter: its refusal ends the array.
				{[]string{"BF.RESERVE", "full", "0.0001", "2", "NONSCALING"}, "+OK\r\n"},
				{[]string{"BF.MADD", "full", "a", "b", "c", "a", "d"}, arr(b(true), b(true), "-ERR non scaling filter is full\r\n")},
				{[]string{"BF.ADD", "full", "c"}, "-ERR non scaling filter is full\r\n"},
				{[]string{"BF.ADD", "full", "a"}, b(false)},
				{[]string{"BF.INSERT", "full", "ITEMS", "a", "x", "y"}, arr(b(false), "-ERR non scaling filter is full\r\n")},
				{[]string{"BF.CARD", "full"}, i(2)},
				// CF.*: booleans in RESP3 but for CF.INSERTNX and CF.COUNT.
				{[]string{"CF.RESERVE", "c", "1000"}, "+OK\r\n"},
				{[]string{"CF.ADD", "c", "x"}, b(true)},
				{[]string{"CF.ADD", "c", "x"}, b(true)},
				{[]string{"CF.ADDNX", "c", "x"}, b(false)},
				{[]string{"CF.ADDNX", "c", "y"}, b(true)},
				{[]string{"CF.INSERT", "c", "ITEMS", "z", "x"}, arr(b(true), b(true))},
				{[]string{"CF.INSERTNX", "c", "ITEMS", "x", "w"}, arr(i(0), i(1))},
				{[]string{"CF.EXISTS", "c", "x"}, b(true)},
				{[]string{"CF.EXISTS", "c", "nope"}, b(false)},
				{[]string{"CF.EXISTS", "missing", "x"}, b(false)},
				{[]string{"CF.MEXISTS", "c", "x", "nope"}, arr(b(true), b(false))},
				{[]string{"CF.COUNT", "c", "x"}, i(3)},
				{[]string{"CF.COUNT", "missing", "x"}, i(0)},
				{[]string{"CF.DEL", "c", "x"}, b(true)},
				{[]string{"CF.DEL", "c", "nope"}, b(false)},
				{[]string{"CF.COUNT", "c", "x"}, i(2)},
				{[]string{"CF.INSERT", "auto", "CAPACITY", "4", "ITEMS", "a"}, arr(b(true))},
				{[]string{"CF.INSERT", "auto2", "NOCREATE", "ITEMS", "a"}, "-ERR not found\r\n"},
				{[]string{"CF.RESERVE", "small", "3", "BUCKETSIZE", "1"}, "+OK\r\n"},
				{[]string{"CF.RESERVE", "opts", "1000", "BUCKETSIZE", "4", "MAXITERATIONS", "5", "EXPANSION", "0"}, "+OK\r\n"},
				// Another type: reads answer no, writes WRONGTYPE, as there.
				{[]string{"BF.EXISTS", "c", "x"}, b(false)},
				{[]string{"BF.MEXISTS", "c", "x"}, arr(b(false))},
				{[]string{"CF.EXISTS", "k", "a"}, b(false)},
				{[]string{"CF.COUNT", "k", "a"}, i(0)},
				{[]string{"CF.DEL", "k", "a"}, "-Not found\r\n"},
				{[]string{"CF.DEL", "missing", "a"}, "-Not found\r\n"},
				{[]string{"BF.ADD", "c", "x"}, "-" + wrongType + "\r\n"},
				{[]string{"BF.MADD", "c", "x"}, "-" + wrongType + "\r\n"},
				{[]string{"BF.INSERT", "c", "ITEMS", "x"}, "-" + wrongType + "\r\n"},
				{[]string{"BF.INFO", "c"}, "-" + wrongType + "\r\n"},
				{[]string{"BF.CARD", "c"}, "-" + wrongType + "\r\n"},
				{[]string{"BF.RESERVE", "c", "0.01", "10"}, "-" + wrongType + "\r\n"},
				{[]string{"BF.SCANDUMP", "c", "0"}, "-" + wrongType + "\r\n"},
				{[]string{"CF.ADD", "k", "x"}, "-" + wrongType + "\r\n"},
				{[]string{"CF.INSERT", "k", "ITEMS", "x"}, "-" + wrongType + "\r\n"},
				{[]string{"CF.RESERVE", "k", "100"}, "-" + wrongType + "\r\n"},
				{[]string{"CF.INFO", "k"}, "-" + wrongType + "\r\n"},
				{[]string{"CF.INFO", "missing"}, "-ERR not found\r\n"},
				{[]string{"CF.RESERVE", "c", "100"}, "-ERR item exists\r\n"},
				{[]string{"BF.RESERVE", "k", "0.01", "10"}, "-ERR item exists\r\n"},
			} {
				got := c.run(t, x.args...)
				want := sizes.ReplaceAllStringFunc(x.want, func(m string) string {
					return i(int64(s.store.get(0, sizes.FindStringSubmatch(m)[1]).sizeBytes()))
				})
				if got != want {
					t.Errorf("%q: %q, want %q", x.args, got, want)
				}
			}
			cfInfo := c.run(t, "CF.INFO", "c")
			wantHead := "*16\r\n+Size\r\n"
			if proto == 3 {
				wantHead = "%8\r\n+Size\r\n"
			}
			if !strings.HasPrefix(cfInfo, wantHead) || !strings.Contains(cfInfo, "+Number of items inserted\r\n:5\r\n+Number of items deleted\r\n:1\r\n") {
				t.Errorf("CF.INFO %q", cfInfo)
			}
			for _, name := range []string{"ignored", "capped", "x4"} {
				if e := s.store.get(0, name); e == nil || e.kind != kindScalable {
					t.Fatalf("%s: not a scalable key", name)
				}
			}
			if g := s.store.get(0, "x4").scalable.Config().Growth; g != 4 {
				t.Errorf("EXPANSION 4 made growth %d", g)
			}
			if r := s.store.get(0, "capped").errorRate; r != errorRateCap {
				t.Errorf("BF.RESERVE at 0.9 made a filter at %v, not RedisBloom's cap 0.25", r)
			}
		})
	}
}

// Every error of RedisBloom's BF.* and CF.* that a client can cause, its
// text byte for byte (with "ERR " or without, as it has it), in the order
// RedisBloom checks: these do not depend on the protocol.
func TestRedisBloomErrorTexts(t *testing.T) {
	_, addr := start(t, Config{})
	c := dial(t, addr)
	c.do(t, "BF.RESERVE", "bf", "0.01", "100")
	c.do(t, "CF.RESERVE", "cf", "100")
	for _, x := range []struct {
		args []string
		want string
	}{
		{[]string{"BF.RESERVE", "n", "abc", "100"}, "ERR bad error rate"},
		{[]string{"BF.RESERVE", "n", "nan", "100"}, "ERR bad error rate"},
		{[]string{"BF.RESERVE", "n", "1e-400", "100"}, "ERR bad error rate"},
		{[]string{"BF.RESERVE", "n", "1e400", "100"}, "ERR bad error rate"},
		{[]string{"BF.RESERVE", "n", "0_1", "100"}, "ERR bad error rate"},
		{[]string{"BF.RESERVE", "n", " 0.1", "100"}, "ERR bad error rate"},
		{[]string{"BF.RESERVE", "n", "0", "100"}, "ERR error rate must be in the range (0.000000, 1.000000)"},
		{[]string{"BF.RESERVE", "n", "1", "100"}, "ERR error rate must be in the range (0.000000, 1.000000)"},
		{[]string{"BF.RESERVE", "n", "-0.5", "100"}, "ERR error rate must be in the range (0.000000, 1.000000)"},
		{[]string{"BF.RESERVE", "n", "inf", "100"}, "ERR error rate must be in the range (0.000000, 1.000000)"},
		{[]string{"BF.RESERVE", "n", "0.01", "x"}, "ERR bad capacity"},
		{[]string{"BF.RESERVE", "n", "0.01", "007"}, "ERR bad capacity"},
		{[]string{"BF.RESERVE", "n", "0.01", "+5"}, "ERR bad capacity"},
		{[]string{"BF.RESERVE", "n", "0.01", "99999999999999999999"}, "ERR bad capacity"},
		{[]string{"BF.RESERVE", "n", "0.01", "0"}, "ERR capacity must be in the range [1, 1073741824]"},
		{[]string{"BF.RESERVE", "n", "0.01", "-5"}, "ERR capacity must be in the range [1, 1073741824]"},
		{[]string{"BF.RESERVE", "n", "0.01", "1073741825"}, "ERR capacity must be in the range [1, 1073741824]"},
		{[]string{"BF.RESERVE", "n", "0.01", "100", "EXPANSION"}, "ERR no expansion"},
		{[]string{"BF.RESERVE", "n", "0.01", "100", "EXPANSION", "x"}, "ERR bad expansion"},
		{[]string{"BF.RESERVE", "n", "0.01", "100", "EXPANSION", "-1"}, "ERR expansion must be in the range [0, 32768]"},
		{[]string{"BF.RESERVE", "n", "0.01", "100", "EXPANSION", "32769"}, "ERR expansion must be in the range [0, 32768]"},
		{[]string{"BF.RESERVE", "n", "0.01", "100", "NONSCALING", "EXPANSION", "2"}, "Nonscaling filters cannot expand"},
		{[]string{"BF.RESERVE", "n", "0.01", "100", "EXPANSION", "2", "NONSCALING"}, "Nonscaling filters cannot expand"},
		{[]string{"BF.RESERVE", "n", "0.01", "100", "NONSCALING", "EXPANSION", "-1"}, "Nonscaling filters cannot expand"},
		{[]string{"BF.RESERVE", "n", "0.01", "100", "a", "b", "c", "d"}, "ERR wrong number of arguments for 'bf.reserve' command"},
		{[]string{"BF.RESERVE", "n", "0.01"}, "ERR wrong number of arguments for 'bf.reserve' command"},
		{[]string{"BF.RESERVE", "cf", "abc", "100"}, "ERR bad error rate"}, // parsed before the key is looked at
		{[]string{"BF.INSERT", "n", "ERROR", "x", "ITEMS", "a"}, "Bad error rate"},
		{[]string{"BF.INSERT", "n", "ERROR", "0", "ITEMS", "a"}, "Bad error rate"},
		{[]string{"BF.INSERT", "n", "ERROR", "1.5", "ITEMS", "a"}, "Bad error rate"},
		{[]string{"BF.INSERT", "n", "CAPACITY", "x", "ITEMS", "a"}, "Bad capacity"},
		{[]string{"BF.INSERT", "n", "CAPACITY", "0", "ITEMS", "a"}, "Bad capacity"},
		{[]string{"BF.INSERT", "n", "CAPACITY", "1073741825", "ITEMS", "a"}, "Bad capacity"},
		{[]string{"BF.INSERT", "n", "EXPANSION", "x", "ITEMS", "a"}, "Bad expansion"},
		{[]string{"BF.INSERT", "n", "EXPANSION", "-1", "ITEMS", "a"}, "Bad expansion"},
		{[]string{"BF.INSERT", "n", "EXPANSION", "32769", "ITEMS", "a"}, "Bad expansion"},
		{[]string{"BF.INSERT", "n", "FOO", "ITEMS", "a"}, "Unknown argument received"},
		{[]string{"BF.INSERT", "n", "", "ITEMS", "a"}, "Unknown argument received"},
		{[]string{"BF.INSERT", "n", "ITEMS"}, "ERR wrong number of arguments for 'bf.insert' command"},
		{[]string{"BF.INSERT", "n", "CAPACITY", "10"}, "ERR wrong number of arguments for 'bf.insert' command"},
		{[]string{"BF.INSERT", "n", "NOCREATE", "CAPACITY"}, "ERR wrong number of arguments for 'bf.insert' command"},
		{[]string{"BF.INSERT", "n", "ERROR"}, "ERR wrong number of arguments for 'bf.insert' command"},
		{[]string{"BF.INSERT", "cf", "ERROR", "x", "ITEMS", "a"}, "Bad error rate"},
		{[]string{"BF.ADD", "bf"}, "ERR wrong number of arguments for 'bf.add' command"},
		{[]string{"bf.Add", "bf", "a", "b"}, "ERR wrong number of arguments for 'bf.add' command"},
		{[]string{"BF.MADD", "bf"}, "ERR wrong number of arguments for 'bf.madd' command"},
		{[]string{"BF.EXISTS", "bf"}, "ERR wrong number of arguments for 'bf.exists' command"},
		{[]string{"BF.MEXISTS", "bf"}, "ERR wrong number of arguments for 'bf.mexists' command"},
		{[]string{"BF.CARD"}, "ERR wrong number of arguments for 'bf.card' command"},
		{[]string{"BF.INFO"}, "ERR wrong number of arguments for 'bf.info' command"},
		{[]string{"BF.INFO", "bf", "capacity", "size"}, "ERR wrong number of arguments for 'bf.info' command"},
		{[]string{"BF.INFO", "bf", "cap"}, "Invalid information value"},
		{[]string{"BF.INFO", "bf", "Number of filters"}, "Invalid information value"},
		{[]string{"BF.INFO", "missing", "nosuchfield"}, "ERR not found"},
		{[]string{"BF.SCANDUMP", "bf"}, "ERR wrong number of arguments for 'bf.scandump' command"},
		{[]string{"BF.SCANDUMP", "bf", "x"}, "Second argument must be numeric"},
		{[]string{"BF.SCANDUMP", "missing", "x"}, "ERR not found"},
		{[]string{"BF.LOADCHUNK", "bf", "1"}, "ERR wrong number of arguments for 'bf.loadchunk' command"},
		{[]string{"BF.LOADCHUNK", "bf", "x", "data"}, "ERR Second argument must be numeric"},
		{[]string{"CF.RESERVE", "n"}, "ERR wrong number of arguments for 'cf.reserve' command"},
		{[]string{"CF.RESERVE", "n", "100", "BUCKETSIZE"}, "ERR wrong number of arguments for 'cf.reserve' command"},
		{[]string{"CF.RESERVE", "n", "x"}, "Bad capacity"},
		{[]string{"CF.RESERVE", "n", "3"}, "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"},
		{[]string{"CF.RESERVE", "n", "1073741825"}, "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"},
		{[]string{"CF.RESERVE", "n", "100", "BUCKETSIZE", "x"}, "Couldn't parse BUCKETSIZE"},
		{[]string{"CF.RESERVE", "n", "100", "BUCKETSIZE", "0"}, "BUCKETSIZE: value must be in the range [1, 255]"},
		{[]string{"CF.RESERVE", "n", "100", "BUCKETSIZE", "256"}, "BUCKETSIZE: value must be in the range [1, 255]"},
		{[]string{"CF.RESERVE", "n", "100", "MAXITERATIONS", "x"}, "Couldn't parse MAXITERATIONS"},
		{[]string{"CF.RESERVE", "n", "100", "MAXITERATIONS", "0"}, "MAXITERATIONS: value must be in the range [1, 65535]"},
		{[]string{"CF.RESERVE", "n", "100", "EXPANSION", "x"}, "Couldn't parse EXPANSION"},
		{[]string{"CF.RESERVE", "n", "100", "EXPANSION", "32769"}, "EXPANSION: value must be in the range [0, 32768]"},
		{[]string{"CF.RESERVE", "n", "100", "BUCKETSIZE", "0", "MAXITERATIONS", "0"}, "MAXITERATIONS: value must be in the range [1, 65535]"},
		{[]string{"CF.RESERVE", "n", "100", "BUCKETSIZE", "60"}, "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"},
		{[]string{"CF.ADD", "cf"}, "ERR wrong number of arguments for 'cf.add' command"},
		{[]string{"CF.ADDNX", "cf"}, "ERR wrong number of arguments for 'cf.addnx' command"},
		{[]string{"CF.INSERT", "cf", "ITEMS"}, "ERR wrong number of arguments for 'cf.insert' command"},
		{[]string{"CF.INSERTNX", "cf", "CAPACITY", "10"}, "ERR wrong number of arguments for 'cf.insertnx' command"},
		{[]string{"CF.INSERT", "n", "CAPACITY", "x", "ITEMS", "a"}, "Bad capacity"},
		{[]string{"CF.INSERT", "n", "CAPACITY", "3", "ITEMS", "a"}, "Capacity must be in the range [cf-bucket-size * 2, 1073741824]"},
		{[]string{"CF.INSERT", "n", "FOO", "ITEMS", "a"}, "Unknown argument received"},
		{[]string{"CF.EXISTS", "cf"}, "ERR wrong number of arguments for 'cf.exists' command"},
		{[]string{"CF.MEXISTS", "cf"}, "ERR wrong number of arguments for 'cf.mexists' command"},
		{[]string{"CF.COUNT", "cf"}, "ERR wrong number of arguments for 'cf.count' command"},
		{[]string{"CF.DEL", "cf"}, "ERR wrong number of arguments for 'cf.del' command"},
		{[]string{"CF.INFO", "cf", "x"}, "ERR wrong number of arguments for 'cf.info' command"},
		{[]string{"CF.SCANDUMP", "cf", "x"}, "Invalid position"},
		{[]string{"CF.LOADCHUNK", "cf", "0", "x"}, "Invalid position"},
	} {
		if got := c.do(t, x.args...); got != "-"+x.want {
			t.Errorf("%q: %q, want %q", x.args, got, "-"+x.want)
		}
	}
	if n := c.do(t, "DBSIZE"); n != ":2" {
		t.Fatalf("refused commands made keys: DBSIZE %s", n)
	}
}

// go-redis's RedisBloom commands, typed, in both protocols.
func TestGoRedisBloomCommandsInBothProtocols(t *testing.T) {
	_, addr := start(t, Config{})
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		rdb := client(t, addr, func(o *redis.Options) { o.Protocol = proto })
		k := fmt.Sprint("g", proto)
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("RESP%d: %v", proto, err)
			}
		}
		must(rdb.BFReserveWithArgs(ctx, k, &redis.BFReserveOptions{Error: 0.01, Capacity: 100, Expansion: 4}).Err())
		if ok, err := rdb.BFAdd(ctx, k, "a").Result(); err != nil || !ok {
			t.Fatalf("RESP%d BF.ADD: %v %v", proto, ok, err)
		}
		if got, err := rdb.BFMAdd(ctx, k, "a", "b").Result(); err != nil || got[0] || !got[1] {
			t.Fatalf("RESP%d BF.MADD: %v %v", proto, got, err)
		}
		if got, err := rdb.BFInsert(ctx, k, &redis.BFInsertOptions{NoCreate: true}, "c").Result(); err != nil || !got[0] {
			t.Fatalf("RESP%d BF.INSERT: %v %v", proto, got, err)
		}
		if ok, err := rdb.BFExists(ctx, k, "c").Result(); err != nil || !ok {
			t.Fatalf("RESP%d BF.EXISTS: %v %v", proto, ok, err)
		}
		if got, err := rdb.BFMExists(ctx, k, "c", "zz").Result(); err != nil || !got[0] || got[1] {
			t.Fatalf("RESP%d BF.MEXISTS: %v %v", proto, got, err)
		}
		in, err := rdb.BFInfo(ctx, k).Result()
		if err != nil || in.Capacity != 100 || in.ExpansionRate != 4 || in.ItemsInserted != 3 || in.Filters != 1 {
			t.Fatalf("RESP%d BF.INFO: %+v %v", proto, in, err)
		}
		if in, err := rdb.BFInfoExpansion(ctx, k).Result(); err != nil || in.ExpansionRate != 4 {
			t.Fatalf("RESP%d BF.INFO EXPANSION: %+v %v", proto, in, err)
		}
		if in, err := rdb.BFInfoItems(ctx, k).Result(); err != nil || in.ItemsInserted != 3 {
			t.Fatalf("RESP%d BF.INFO ITEMS: %+v %v", proto, in, err)
		}
		if n, err := rdb.BFCard(ctx, k).Result(); err != nil || n != 3 {
			t.Fatalf("RESP%d BF.CARD: %v %v", proto, n, err)
		}
		c := "c" + k
		must(rdb.CFReserveWithArgs(ctx, c, &redis.CFReserveOptions{Capacity: 1000, BucketSize: 4, MaxIterations: 20, Expansion: 1}).Err())
		if ok, err := rdb.CFAdd(ctx, c, "x").Result(); err != nil || !ok {
			t.Fatalf("RESP%d CF.ADD: %v %v", proto, ok, err)
		}
		if ok, err := rdb.CFAddNX(ctx, c, "x").Result(); err != nil || ok {
			t.Fatalf("RESP%d CF.ADDNX: %v %v", proto, ok, err)
		}
		if got, err := rdb.CFInsert(ctx, c, nil, "y", "x").Result(); err != nil || !got[0] || !got[1] {
			t.Fatalf("RESP%d CF.INSERT: %v %v", proto, got, err)
		}
		if got, err := rdb.CFInsertNX(ctx, c, nil, "y", "z").Result(); err != nil || got[0] != 0 || got[1] != 1 {
			t.Fatalf("RESP%d CF.INSERTNX: %v %v", proto, got, err)
		}
		if n, err := rdb.CFCount(ctx, c, "x").Result(); err != nil || n != 2 {
			t.Fatalf("RESP%d CF.COUNT: %v %v", proto, n, err)
		}
		if ok, err := rdb.CFDel(ctx, c, "x").Result(); err != nil || !ok {
			t.Fatalf("RESP%d CF.DEL: %v %v", proto, ok, err)
		}
		if got, err := rdb.CFMExists(ctx, c, "x", "q").Result(); err != nil || !got[0] || got[1] {
			t.Fatalf("RESP%d CF.MEXISTS: %v %v", proto, got, err)
		}
		if ci, err := rdb.CFInfo(ctx, c).Result(); err != nil || ci.NumItemsInserted != 3 || ci.NumItemsDeleted != 1 {
			t.Fatalf("RESP%d CF.INFO: %+v %v", proto, ci, err)
		}
		// A transaction of them, as redis-py's pipeline() and go-redis's
		// TxPipelined send it.
		cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.BFAdd(ctx, k, "tx")
			p.BFExists(ctx, k, "tx")
			p.CFAdd(ctx, c, "tx")
			return nil
		})
		if err != nil || len(cmds) != 3 || !cmds[1].(*redis.BoolCmd).Val() {
			t.Fatalf("RESP%d MULTI/EXEC: %v %v", proto, cmds, err)
		}
	}
}
