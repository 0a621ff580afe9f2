package server

// Glob patterns of KEYS, SCAN MATCH and CONFIG GET, as Redis's
// stringmatchlen reads them: * any bytes, ? one byte, [abc] [^abc] [a-z]
// one byte of (or not of) a set, \x the byte x.
//
// A recursive matcher backtracks into every star and takes time
// exponential in their number: *a*a*a*a*a*b* against 100 bytes took
// github.com/tidwall/match 54 s of CPU (Redis's CVE-2022-36021). Every
// token but * matches exactly one byte, so a failure after a star only has
// to retry that star one byte further on: the stars before it matched the
// shortest they could, and giving them more could not help. That bounds the
// work by len(name)·len(pattern), and maxPatternBytes bounds the pattern.

// maxPatternBytes bounds a KEYS or SCAN pattern, so that matching one key
// of at most maxKeyBytes costs at most maxKeyBytes·maxPatternBytes steps.
const maxPatternBytes = 1024

var errPatternTooLong = "ERR pattern longer than " + itoa(maxPatternBytes) + " bytes"

// globMatch reports whether name matches pattern.
func globMatch(pattern, name string) bool {
	p, n := 0, 0
	starP, starN := -1, 0 // after the last star, and where its match ends
	for n < len(name) {
		if p < len(pattern) && pattern[p] == '*' {
			for p < len(pattern) && pattern[p] == '*' {
				p++
			}
			if p == len(pattern) {
				return true
			}
			starP, starN = p, n
			continue
		}
		if p < len(pattern) {
			if next, ok := matchOne(pattern, p, name[n]); ok {
				p, n = next, n+1
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starN++
		p, n = starP, starN
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchOne matches the token at pattern[p], not a star, against c and
// returns the position after the token.
func matchOne(pattern string, p int, c byte) (int, bool) {
	switch pattern[p] {
	case '?':
		return p + 1, true
	case '\\':
		if p+1 < len(pattern) {
			return p + 2, pattern[p+1] == c
		}
		return p + 1, c == '\\'
	case '[':
		return matchClass(pattern, p+1, c)
	}
	return p + 1, pattern[p] == c
}

// matchClass matches a set starting after its '[', as Redis does: ^ first
// negates, \x is x, a-z a range (either way round; as in Redis, a-] is a
// range too), and a set left open runs to the end of the pattern.
func matchClass(pattern string, p int, c byte) (int, bool) {
	not := p < len(pattern) && pattern[p] == '^'
	if not {
		p++
	}
	match := false
	for p < len(pattern) && pattern[p] != ']' {
		switch {
		case pattern[p] == '\\' && p+1 < len(pattern):
			p++
			match = match || pattern[p] == c
		case p+2 < len(pattern) && pattern[p+1] == '-':
			lo, hi := pattern[p], pattern[p+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (lo <= c && c <= hi)
			p += 2
		default:
			match = match || pattern[p] == c
		}
		p++
	}
	if p < len(pattern) {
		p++ // the ']'
	}
	return p, match != not
}
