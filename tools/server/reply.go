package server

import (
	"math"
	"strconv"
)

// replier is what a command writes its reply to. Each method writes one
// RESP value in the protocol the client chose with HELLO: RESP2 (the
// default) or RESP3. Where RESP3 has a type RESP2 lacks, the RESP2 shape is
// the one Redis itself sends:
//
//	method              RESP3                  RESP2
//	WriteString(s)      +s                     +s
//	WriteError(msg)     -msg                   -msg
//	WriteInt64(n)       :n                     :n
//	WriteBulk(b)        $len b                 $len b
//	WriteBulkString(s)  $len s                 $len s
//	WriteArray(n)       *n                     *n
//	WriteNull()         _                      $-1 (null bulk string)
//	WriteNullArray()    _                      *-1 (null array)
//	WriteBool(v)        #t / #f                :1 / :0
//	WriteDouble(f)      ,f (inf, -inf, nan)    $len f, as a bulk string
//	WriteMap(n)         %n, then n keys+values *2n, keys and values in turn
//	WriteSet(n)         ~n                     *n
//	WriteVerbatim(s)    =len txt:s             $len s
//
// Line breaks in simple strings and errors are replaced by spaces, as Redis
// replaces them, so that no reply can break the framing.
type replier interface {
	WriteError(msg string)
	WriteString(str string)
	WriteBulk(bulk []byte)
	WriteBulkString(bulk string)
	WriteInt64(num int64)
	WriteArray(count int)
	WriteNull()
	WriteNullArray()
	WriteBool(v bool)
	WriteDouble(f float64)
	WriteMap(pairs int)
	WriteSet(count int)
	WriteVerbatim(text string)
	// Proto is 2 or 3, for the rare reply whose content (not only its
	// shape) differs between them.
	Proto() int
}

// replyWriter appends replies to a buffer that the connection sends.
// It is not safe for concurrent use.
type replyWriter struct {
	b     []byte
	proto int // 2 or 3
	// errs counts the error replies written, and onError, if set, is
	// told each (INFO's commandstats and errorstats).
	errs    int
	onError func(msg string)
}

func (w *replyWriter) Proto() int { return w.proto }

// room makes room for n more bytes, before appends of at most that many:
// past copyChunk, append's growth would copy the whole reply in one call
// that the scheduler cannot stop (see growChunked), and a garbage
// collection's stop of the world waits for it (a SLOWLOG GET's reply of
// 50 MB: 162 ms in which the event loop was stopped).
func (w *replyWriter) room(n int) {
	if cap(w.b)-len(w.b) < n {
		w.grow(n)
	}
}

// grow is room's slow path, kept out of line so that room inlines.
//
//go:noinline
func (w *replyWriter) grow(n int) {
	if len(w.b) > copyChunk {
		w.b = growChunked(w.b, n)
	}
}

// tiny is the most the appends of a small reply take: a header, an int64.
const tiny = 32

// line appends a simple line whose text must not break the framing.
func (w *replyWriter) line(prefix byte, s string) {
	w.room(len(s) + 3)
	w.b = append(w.b, prefix)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		w.b = append(w.b, c)
	}
	w.b = append(w.b, '\r', '\n')
}

func (w *replyWriter) WriteError(msg string) {
	w.errs++
	if w.onError != nil {
		w.onError(msg)
	}
	w.line('-', msg)
}
func (w *replyWriter) WriteString(str string) { w.line('+', str) }

// bulkFraming is the most a bulk reply adds to its bytes: '$', an int64's
// digits and two CRLFs.
const bulkFraming = 1 + 20 + 4

func (w *replyWriter) header(prefix byte, n int64) {
	w.room(tiny)
	w.b = append(w.b, prefix)
	w.b = strconv.AppendInt(w.b, n, 10)
	w.b = append(w.b, '\r', '\n')
}

func (w *replyWriter) WriteInt64(num int64) {
	// The replies of most commands are 0 or 1.
	w.room(tiny)
	switch num {
	case 0:
		w.b = append(w.b, ":0\r\n"...)
	case 1:
		w.b = append(w.b, ":1\r\n"...)
	default:
		w.header(':', num)
	}
}

func (w *replyWriter) WriteBulk(bulk []byte) {
	if len(bulk) > copyChunk {
		// Room for the header and the CRLF too: append would copy the
		// whole reply in one call to add them (see growChunked).
		w.b = growChunked(w.b, len(bulk)+bulkFraming)
	}
	w.header('$', int64(len(bulk)))
	w.b = appendChunked(w.b, bulk)
	w.b = append(w.b, '\r', '\n')
}

func (w *replyWriter) WriteBulkString(bulk string) {
	w.room(len(bulk) + bulkFraming)
	w.header('$', int64(len(bulk)))
	w.b = appendChunked(w.b, bulk)
	w.b = append(w.b, '\r', '\n')
}

func (w *replyWriter) WriteArray(count int) { w.header('*', int64(count)) }

func (w *replyWriter) WriteNull() {
	w.room(tiny)
	if w.proto == 3 {
		w.b = append(w.b, "_\r\n"...)
		return
	}
	w.b = append(w.b, "$-1\r\n"...)
}

func (w *replyWriter) WriteNullArray() {
	w.room(tiny)
	if w.proto == 3 {
		w.b = append(w.b, "_\r\n"...)
		return
	}
	w.b = append(w.b, "*-1\r\n"...)
}

func (w *replyWriter) WriteBool(v bool) {
	w.room(tiny)
	switch {
	case w.proto == 3 && v:
		w.b = append(w.b, "#t\r\n"...)
	case w.proto == 3:
		w.b = append(w.b, "#f\r\n"...)
	case v:
		w.b = append(w.b, ":1\r\n"...)
	default:
		w.b = append(w.b, ":0\r\n"...)
	}
}

// WriteDouble writes f in the shortest form that reads back as f, as
// Redis 7.2 does; infinities are "inf" and "-inf", and NaN "nan".
func (w *replyWriter) WriteDouble(f float64) {
	var buf [32]byte
	var text []byte
	switch {
	case math.IsInf(f, 1):
		text = append(buf[:0], "inf"...)
	case math.IsInf(f, -1):
		text = append(buf[:0], "-inf"...)
	case math.IsNaN(f):
		text = append(buf[:0], "nan"...)
	default:
		text = strconv.AppendFloat(buf[:0], f, 'g', -1, 64)
	}
	if w.proto == 3 {
		w.room(len(text) + 3)
		w.b = append(w.b, ',')
		w.b = append(w.b, text...)
		w.b = append(w.b, '\r', '\n')
		return
	}
	w.WriteBulk(text)
}

func (w *replyWriter) WriteMap(pairs int) {
	if w.proto == 3 {
		w.header('%', int64(pairs))
		return
	}
	w.header('*', 2*int64(pairs))
}

func (w *replyWriter) WriteSet(count int) {
	if w.proto == 3 {
		w.header('~', int64(count))
		return
	}
	w.header('*', int64(count))
}

// WriteVerbatim writes plain text (INFO's), marked "txt" in RESP3.
func (w *replyWriter) WriteVerbatim(text string) {
	if w.proto == 3 {
		w.room(len(text) + 4 + bulkFraming)
		w.header('=', int64(len(text)+4))
		w.b = append(w.b, "txt:"...)
		w.b = appendChunked(w.b, text)
		w.b = append(w.b, '\r', '\n')
		return
	}
	w.WriteBulkString(text)
}

// itoa formats a count or a size for an error text or a log line.
func itoa[T int | int64 | uint64](n T) string {
	if n < 0 {
		return strconv.FormatInt(int64(n), 10)
	}
	return strconv.FormatUint(uint64(n), 10)
}
