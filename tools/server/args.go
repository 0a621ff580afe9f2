package server

import (
	"math"
	"strconv"
)

// Arguments as RedisBloom reads them. A module reads its numbers with
// RedisModule_StringToLongLong and RedisModule_StringToDouble, which are
// Redis's string2ll and string2d (util.c): stricter than Go's strconv in
// places a client can see ("007" and "+5" are not integers there, "1_0"
// is not a number), looser in others ("inf" is a double). These follow
// them, so that every argument is accepted or refused as RedisBloom
// accepts or refuses it.

// longStrSize is Redis's LONG_STR_SIZE: string2ll refuses anything of
// this many bytes or more.
const longStrSize = 21

// parseLongLong is Redis's string2ll: an optional '-', then digits with no
// leading zero (but "0" itself), no '+', no spaces, within an int64.
func parseLongLong(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) >= longStrSize {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > math.MaxUint64/10 {
			return 0, false
		}
		v *= 10
		if v > math.MaxUint64-uint64(c-'0') {
			return 0, false
		}
		v += uint64(c - '0')
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

// parseDouble is Redis's string2d: strtod over the whole argument, with no
// leading space, refusing NaN and a result that overflows to ±inf or
// underflows to zero; "inf" and "infinity" (any case, signed) are
// accepted, as are hexadecimal floats. Go's ParseFloat differs from
// strtod in three places, handled here: it takes underscores between
// digits, it wants a 'p' exponent in a hexadecimal float, and it returns
// an underflow as zero without an error.
func parseDouble(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 400 {
		// strtod takes any length, but only zeros padding a number can
		// make one longer than this, and no RedisBloom option needs
		// them: refused, a harmless narrowing that saves a copy.
		return 0, false
	}
	var buf [402]byte
	s := buf[:0]
	hex, hasP, nonZero := false, false, false
	for i, c := range b {
		switch {
		case c == '_' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			return 0, false
		case (c == 'x' || c == 'X') && i > 0 && b[i-1] == '0':
			hex = true
		case hex && (c == 'p' || c == 'P'):
			hasP = true
		case !hasP && (c >= '1' && c <= '9' || hex && (c|0x20 >= 'a' && c|0x20 <= 'f')):
			nonZero = true
		case !hex && (c == 'e' || c == 'E'):
			hasP = true // the exponent's digits do not make the mantissa non-zero
		}
		s = append(s, c)
	}
	if hex && !hasP {
		s = append(s, 'p', '0')
	}
	f, err := strconv.ParseFloat(string(s), 64)
	switch {
	case err != nil, math.IsNaN(f):
		return 0, false
	case f == 0 && nonZero:
		return 0, false // underflow: strtod's ERANGE with a zero result
	}
	return f, true
}

// argIndex is RedisBloom's RMUtil_ArgIndex: the index of the first
// argument, the command's name and key included, equal to word in any
// case, or -1. BF.RESERVE and CF.RESERVE find their options with it, so a
// key or a number spelled like an option is taken for one, as there.
func argIndex(args [][]byte, word string) int {
	for i, a := range args {
		if len(a) == len(word) && eq(a, word) {
			return i
		}
	}
	return -1
}

// at is the byte at i of an argument, 0 past its end: RedisBloom reads
// BF.INSERT's and CF.INSERT's options by their first letters from C
// strings, where the byte after the last is the terminating 0.
func at(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

// lower is an ASCII byte in lower case.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
