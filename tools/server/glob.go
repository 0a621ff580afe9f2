package server

import mathbits "math/bits"

// Glob patterns of KEYS, SCAN MATCH and CONFIG GET, read exactly as Redis
// 7's stringmatchlen (util.c) reads them: * any bytes, ? one byte, [abc]
// [^abc] [a-z] one byte of (or not of) a set, \x the byte x; a set left
// open runs to the end of the pattern, a range may be written either way
// round, and \x inside a set is x. Two quirks of the C code are kept,
// because they decide what a pattern matches:
//   - bytes are compared as C's char, which is signed where Redis is built
//     for amd64: a range's ends are numbers from -128 to 127, so [a-\xff]
//     holds \xff and the bytes up to 'a', not 'a' to \xff (the Redis 7.0
//     on this machine answers so);
//   - under nocase (CONFIG GET), a range is put in order before its ends
//     are lowered, and an escaped byte inside a set is compared exactly.
//
// Redis's matcher recurses into every star: *a*a*a*a*a*b* against 100
// bytes took github.com/tidwall/match 54 s of CPU (Redis's CVE-2022-36021),
// and Redis bounds it by a nesting limit and a flag that stops retrying
// earlier stars. Here a pattern is compiled once into a small automaton
// instead: each token (a byte, ?, a set) becomes a 256-bit set, each star a
// state that stays put on any byte, and a name is read once, byte by byte,
// with every state the pattern could be in held as the bits of one or more
// words (the shift-and method). A byte costs one table load and a few word
// operations per 64 tokens, whatever the pattern: a class of 1,000 bytes
// costs what a single byte costs, and no input backtracks. maxPatternBytes
// bounds the tokens, so matching one key of at most maxKeyBytes costs at
// most maxKeyBytes × 17 word steps.

// maxPatternBytes bounds a KEYS, SCAN or CONFIG GET pattern. (Within it a
// pattern has at most 512 stars apart, so Redis's nesting limit of 1,000
// never changes an answer.)
const maxPatternBytes = 1024

var errPatternTooLong = "ERR pattern longer than " + itoa(maxPatternBytes) + " bytes"

// globPattern is a compiled pattern. It is not changed by matching, so one
// may be shared by goroutines.
type globPattern struct {
	// words is the length of a state set: tokens+1 bits, bit j set when
	// the first j tokens have matched.
	words int
	// accept holds 256 state sets, one per byte c, at c*words: bit j is
	// set when token j (counted from 1) accepts c.
	accept []uint64
	// loops is the state set of the stars: bit j is set when a star
	// follows token j, so that state j stays on any byte.
	loops []uint64
	// tokens is the number of tokens; stars is whether there is one.
	tokens int
	stars  bool
	// empty is the answer for the empty name: Redis's matcher says yes
	// only for the empty pattern, and KEYS and SCAN take "*" for every
	// key without calling it.
	empty bool
}

// compileGlob compiles pattern, with bytes compared ignoring ASCII case
// when nocase is set. Its cost is linear in the pattern, with 256 steps
// per range; callers bound the pattern by maxPatternBytes.
func compileGlob(pattern string, nocase bool) *globPattern {
	var sets []byteSet
	var starAfter []bool // starAfter[j]: a star follows token j (0: none yet)
	starAfter = append(starAfter, false)
	for p := 0; p < len(pattern); {
		var set byteSet
		switch pattern[p] {
		case '*':
			starAfter[len(sets)] = true
			p++
			continue
		case '?':
			set.fill()
			p++
		case '\\':
			if p+1 < len(pattern) {
				p++
			}
			set.addByte(pattern[p], nocase)
			p++
		case '[':
			set, p = compileClass(pattern, p+1, nocase)
		default:
			set.addByte(pattern[p], nocase)
			p++
		}
		sets = append(sets, set)
		starAfter = append(starAfter, false)
	}
	g := &globPattern{tokens: len(sets), words: len(sets)/64 + 1, empty: pattern == "" || pattern == "*"}
	g.accept = make([]uint64, 256*g.words)
	g.loops = make([]uint64, g.words)
	for j, set := range sets {
		bit := j + 1
		for w, word := range set {
			for ; word != 0; word &= word - 1 {
				c := w*64 + trailingZeros(word)
				g.accept[c*g.words+bit/64] |= 1 << (bit % 64)
			}
		}
	}
	for j, star := range starAfter {
		if star {
			g.loops[j/64] |= 1 << (j % 64)
			g.stars = true
		}
	}
	return g
}

// compileClass reads a set whose '[' is just before p, as Redis's
// stringmatchlen does, and returns it and the position after it.
func compileClass(pattern string, p int, nocase bool) (byteSet, int) {
	var set byteSet
	not := p < len(pattern) && pattern[p] == '^'
	if not {
		p++
	}
	for {
		if p+1 < len(pattern) && pattern[p] == '\\' {
			p++
			set.add(pattern[p]) // compared exactly, even under nocase
		} else if p < len(pattern) && pattern[p] == ']' {
			break
		} else if p == len(pattern) {
			p-- // the C code steps back here, and on past the end below
			break
		} else if p+2 < len(pattern) && pattern[p+1] == '-' {
			set.addRange(pattern[p], pattern[p+2], nocase)
			p += 2
		} else {
			set.addByte(pattern[p], nocase)
		}
		p++
	}
	if not {
		set.invert()
	}
	return set, p + 1
}

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(c byte)      { s[c/64] |= 1 << (c % 64) }
func (s *byteSet) has(c byte) bool { return s[c/64]>>(c%64)&1 != 0 }
func (s *byteSet) fill()           { *s = byteSet{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)} }
func (s *byteSet) invert() {
	for i := range s {
		s[i] = ^s[i]
	}
}

// addByte adds c, and under nocase every byte equal to it ignoring ASCII
// case (C's tolower in the C locale, which Redis runs its matcher in).
func (s *byteSet) addByte(c byte, nocase bool) {
	s.add(c)
	if nocase {
		switch {
		case 'a' <= c && c <= 'z':
			s.add(c - 'a' + 'A')
		case 'A' <= c && c <= 'Z':
			s.add(c - 'A' + 'a')
		}
	}
}

// addRange adds the bytes of a range as Redis's C code finds them: the
// ends and the byte as signed chars, the ends put in order, then (nocase)
// the ends and the byte lowered.
func (s *byteSet) addRange(from, to byte, nocase bool) {
	lo, hi := int(int8(from)), int(int8(to))
	if lo > hi {
		lo, hi = hi, lo
	}
	if nocase {
		lo, hi = cLower(lo), cLower(hi)
	}
	for c := range 256 {
		v := int(int8(c))
		if nocase {
			v = cLower(v)
		}
		if lo <= v && v <= hi {
			s.add(byte(c))
		}
	}
}

// cLower is C's tolower in the C locale, on a char's value.
func cLower(c int) int {
	if 'A' <= c && c <= 'Z' {
		return c - 'A' + 'a'
	}
	return c
}

// match reports whether name matches the pattern. It reads name once.
func (g *globPattern) match(name string) bool {
	switch {
	case name == "":
		return g.empty
	case !g.stars && len(name) != g.tokens, len(name) < g.tokens:
		return false
	case g.words == 1:
		return g.match1(name)
	}
	// At most maxPatternBytes tokens: 17 words.
	var buf [maxPatternBytes/64 + 1]uint64
	state := buf[:g.words]
	state[0] = 1
	final := g.tokens
	finalStays := g.loops[final/64]>>(final%64)&1 != 0
	for i := 0; i < len(name); i++ {
		accept := g.accept[int(name[i])*g.words:][:g.words]
		var carry, any uint64
		for w, x := range state {
			next := (x<<1|carry)&accept[w] | x&g.loops[w]
			carry = x >> 63
			state[w] = next
			any |= next
		}
		if any == 0 {
			return false
		}
		if finalStays && state[final/64]>>(final%64)&1 != 0 {
			return true // a trailing star takes the rest
		}
	}
	return state[final/64]>>(final%64)&1 != 0
}

// match1 is match for a pattern of at most 63 tokens: one word of states.
func (g *globPattern) match1(name string) bool {
	accept := g.accept[:256]
	loops := g.loops[0]
	final := uint64(1) << g.tokens
	state := uint64(1)
	for i := 0; i < len(name); i++ {
		state = (state<<1)&accept[name[i]] | state&loops
		if state == 0 {
			return false
		}
		if state&final&loops != 0 {
			return true // a trailing star takes the rest
		}
	}
	return state&final != 0
}

// globMatch reports whether name matches pattern, byte for byte (KEYS and
// SCAN); callers that match many names compile the pattern once.
func globMatch(pattern, name string) bool { return compileGlob(pattern, false).match(name) }

func trailingZeros(x uint64) int { return mathbits.TrailingZeros64(x) }
