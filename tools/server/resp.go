package server

import "math"

// The RESP request reader.
//
// Every byte it reads comes from a client we do not trust, so it bounds
// everything before it allocates or loops:
//   - a length or count is parsed with an overflow check and compared with
//     the limits before it is used; nothing is allocated for what a client
//     merely claims: arguments are found in the bytes already received and
//     the buffer grows only as bytes arrive (the connection's code);
//   - a header line longer than any valid one is an error at once, so a
//     line that never ends is never rescanned;
//   - an inline command is found by one scan that resumes where the last
//     read stopped, and split in place in one pass: linear in its length,
//     with no copy;
//   - until the client has authenticated, Redis's own limits apply: at most
//     10 arguments and 16 KiB per argument.
//
// The texts of its errors are Redis 7's.

// Redis's limits, with its names.
const (
	// maxInlineBytes is PROTO_INLINE_MAX_SIZE: the longest inline command
	// (and, in Redis, header line).
	maxInlineBytes = 64 << 10
	// unauthMaxArgs and unauthMaxBulk bound a request of a client that has
	// not authenticated, as Redis bounds it when requirepass is set.
	unauthMaxArgs = 10
	unauthMaxBulk = 16384
	// maxHeaderLine is the longest "*<count>" or "$<length>" line that can
	// be valid: a sign and 19 digits. A longer one is refused as soon as it
	// is seen, without waiting for its end.
	maxHeaderLine = 21
)

// protocolError is a malformed request: the client is told, and the
// connection closes after the reply, as Redis closes it.
type protocolError string

func (e protocolError) Error() string { return string(e) }

const (
	errTooBigInline       protocolError = "ERR Protocol error: too big inline request"
	errUnbalancedQuotes   protocolError = "ERR Protocol error: unbalanced quotes in request"
	errInvalidMultibulk   protocolError = "ERR Protocol error: invalid multibulk length"
	errInvalidBulk        protocolError = "ERR Protocol error: invalid bulk length"
	errUnauthMultibulk    protocolError = "ERR Protocol error: unauthenticated multibulk length"
	errUnauthBulk         protocolError = "ERR Protocol error: unauthenticated bulk length"
	errRequestTooLarge    protocolError = "ERR Protocol error: request exceeds max-request-bytes"
	errBuffersFull        protocolError = "ERR Protocol error: the server's request buffers are full (max-buffered-bytes), try again later"
	errQueuedTooLarge     protocolError = "ERR Protocol error: MULTI queue exceeds max-request-bytes"
	errInternalConnection protocolError = "ERR internal error: connection closed"
)

// span is an argument's place, relative to its command's first byte, so
// that it stays valid when the buffer under the command moves or grows.
type span struct{ start, end int }

// requestParser reads commands off a buffer, one at a time. A command may
// arrive over many reads: next keeps its progress (what it has parsed, and
// where to resume), so the bytes of one command are each looked at a
// bounded number of times, however they are split.
type requestParser struct {
	kind  byte // 0 between commands, '*' multibulk, 'i' inline
	pos   int  // next byte to parse, relative to the command's start
	left  int  // multibulk: arguments still to read
	bulk  int  // multibulk: length of the argument being read; -1 while on its header
	spans []span
	args  [][]byte
}

// parseLimits are the bounds next checks a request against.
type parseLimits struct {
	authed     bool
	maxRequest int // bytes of one command, all its lines included
}

// next parses one command at the start of b. b begins at the first byte of
// a command whose earlier parts (if any) this parser saw in an earlier
// call with a prefix of the same bytes. It returns:
//   - args, n: a command of n bytes; args point into b and are valid until
//     the next call;
//   - nil, n > 0: n bytes that hold no command (an empty line or "*0"),
//     to skip;
//   - nil, 0, nil: the command is incomplete; call again once more bytes
//     follow b;
//   - a protocolError: the connection must be told and closed.
func (p *requestParser) next(b []byte, lim parseLimits) ([][]byte, int, error) {
	if len(b) == 0 {
		return nil, 0, nil
	}
	if p.kind == 0 {
		p.reset()
		if b[0] == '*' {
			p.kind, p.pos, p.bulk = '*', 0, -1
		} else if b[0] == tlsRecordHandshake {
			return nil, 0, errTLSOnPlainPort // a TLS client (tls.go)
		} else {
			p.kind = 'i'
		}
	}
	if p.kind == 'i' {
		return p.inline(b)
	}
	return p.multibulk(b, lim)
}

func (p *requestParser) reset() {
	p.kind, p.pos, p.left, p.bulk = 0, 0, 0, -1
	p.spans = p.spans[:0]
}

// inline parses a command written as a line of words, as typed into
// telnet: "BF.ADD key item\r\n". p.pos is where the search for the line's
// end resumes.
func (p *requestParser) inline(b []byte) ([][]byte, int, error) {
	end := -1
	for i := p.pos; i < len(b); i++ {
		if b[i] == '\n' {
			end = i
			break
		}
	}
	if end < 0 {
		if len(b) > maxInlineBytes {
			return nil, 0, errTooBigInline
		}
		p.pos = len(b)
		return nil, 0, nil
	}
	if end > maxInlineBytes {
		return nil, 0, errTooBigInline
	}
	line := b[:end]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	p.kind = 0
	if err := p.splitArgs(line); err != nil {
		return nil, 0, err
	}
	if len(p.spans) == 0 {
		return nil, end + 1, nil
	}
	return p.argsOf(b), end + 1, nil
}

// splitArgs splits an inline command as Redis's sdssplitargs does (words
// apart by white space; "double quotes" with \n \r \t \b \a \\ \" \xHH
// escapes; 'single quotes' with \'), in place: an unquoted argument never
// grows, so the result is written over the bytes it was read from.
func (p *requestParser) splitArgs(line []byte) error {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return nil
		}
		start, w := i, i // w: where the next unquoted byte goes
		inDouble, inSingle := false, false
		for done := false; !done; {
			switch {
			case inDouble:
				if i == len(line) {
					return errUnbalancedQuotes
				}
				c := line[i]
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					line[w] = unhex(line[i+2])<<4 | unhex(line[i+3])
					i += 4
				case c == '\\' && i+1 < len(line):
					switch line[i+1] {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					default:
						c = line[i+1]
					}
					line[w] = c
					i += 2
				case c == '"':
					// A closing quote must be followed by a space or the end.
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return errUnbalancedQuotes
					}
					i++
					done = true
					continue
				default:
					line[w] = c
					i++
				}
				w++
			case inSingle:
				if i == len(line) {
					return errUnbalancedQuotes
				}
				c := line[i]
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					line[w] = '\''
					i += 2
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return errUnbalancedQuotes
					}
					i++
					done = true
					continue
				default:
					line[w] = c
					i++
				}
				w++
			default:
				if i == len(line) || isSpace(line[i]) {
					done = true
					continue
				}
				switch line[i] {
				case '"':
					inDouble = true
				case '\'':
					inSingle = true
				default:
					line[w] = line[i]
					w++
				}
				i++
			}
		}
		p.spans = append(p.spans, span{start, w})
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// multibulk parses "*<count>\r\n" and count "$<length>\r\n<bytes>\r\n",
// resuming at p.pos.
func (p *requestParser) multibulk(b []byte, lim parseLimits) ([][]byte, int, error) {
	if p.pos == 0 {
		n, line, err := headerLine(b, errInvalidMultibulk)
		if err != nil || line == 0 {
			return nil, 0, err
		}
		if n <= 0 {
			p.kind = 0
			return nil, line, nil // "*0" and "*-1" are skipped, as by Redis
		}
		if !lim.authed && n > unauthMaxArgs {
			return nil, 0, errUnauthMultibulk
		}
		// Every argument takes at least "$0\r\n\r\n": a count that cannot
		// fit in a request is refused now, not after its bytes arrive.
		if n > math.MaxInt32 || n > int64(lim.maxRequest/6) {
			return nil, 0, errInvalidMultibulk
		}
		p.left, p.pos, p.bulk = int(n), line, -1
	}
	for p.left > 0 {
		if p.bulk < 0 {
			rest := b[p.pos:]
			if len(rest) == 0 {
				return nil, 0, nil
			}
			if rest[0] != '$' {
				return nil, 0, protocolError("ERR Protocol error: expected '$', got '" + printableByte(rest[0]) + "'")
			}
			n, line, err := headerLine(rest, errInvalidBulk)
			if err != nil || line == 0 {
				return nil, 0, err
			}
			switch {
			case n < 0:
				return nil, 0, errInvalidBulk
			case !lim.authed && n > unauthMaxBulk:
				return nil, 0, errUnauthBulk
			case n > int64(lim.maxRequest):
				return nil, 0, errRequestTooLarge
			}
			p.pos += line
			p.bulk = int(n)
		}
		// The bulk and its CRLF; Redis skips the two bytes unchecked.
		if len(b)-p.pos < p.bulk+2 {
			return nil, 0, nil
		}
		p.spans = append(p.spans, span{p.pos, p.pos + p.bulk})
		p.pos += p.bulk + 2
		p.left--
		p.bulk = -1
	}
	p.kind = 0
	return p.argsOf(b), p.pos, nil
}

// headerLine parses "<c><integer>\r\n" at the start of b and returns the
// integer and the line's length with its CRLF, or 0 if the line is not
// all there yet. It refuses what Redis's string2ll refuses: signs other
// than a leading '-', leading zeros, overflow, anything but digits.
func headerLine(b []byte, invalid protocolError) (int64, int, error) {
	cr := -1
	for i := 1; i < len(b) && i <= maxHeaderLine+1; i++ {
		if b[i] == '\r' {
			cr = i
			break
		}
	}
	if cr < 0 {
		if len(b) > maxHeaderLine+1 {
			return 0, 0, invalid
		}
		return 0, 0, nil
	}
	if len(b) < cr+2 {
		return 0, 0, nil // Redis waits for the byte after the CR
	}
	n, ok := parseDecimal(b[1:cr])
	if !ok {
		return 0, 0, invalid
	}
	return n, cr + 2, nil
}

// parseDecimal is Redis's string2ll: an optional '-', then digits with no
// leading zero (but "0"), within int64.
func parseDecimal(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 19 || (b[0] == '0' && len(b) > 1) || (neg && b[0] == '0') {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0') // 19 digits fit in a uint64
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// printableByte is c for an error line, which may hold no CR or LF.
func printableByte(c byte) string {
	if c == '\r' || c == '\n' {
		return " "
	}
	return string([]byte{c})
}

// argsOf turns the spans into slices of b.
func (p *requestParser) argsOf(b []byte) [][]byte {
	p.args = p.args[:0]
	for _, s := range p.spans {
		p.args = append(p.args, b[s.start:s.end:s.end])
	}
	return p.args
}

// parsed reports how many bytes of the current, incomplete command the
// parser has read past: the least the command will take.
func (p *requestParser) pending() int { return p.pos }

// memBytes is what the parser's own slices hold, for the budget.
func (p *requestParser) memBytes() int {
	return cap(p.spans)*16 + cap(p.args)*24
}

// shrink drops slices grown by one large command, so that a connection
// does not hold them for good.
func (p *requestParser) shrink() {
	const keep = 1024
	if cap(p.spans) > keep {
		p.spans = nil
	}
	if cap(p.args) > keep {
		p.args = nil
	}
}
