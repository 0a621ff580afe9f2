package server

import (
	mathbits "math/bits"
	"slices"
	"strings"
	"sync"
)

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
// earlier stars. Here a name is read once, byte by byte, by a small
// automaton instead: each token (a byte, ?, a set) a state, each star a
// state that stays put on any byte, and every state the pattern could be
// in held as the bits of one or more words (the shift-and method). No
// input backtracks: a name of n bytes costs n steps of tokens/64+1 words.
//
// The automaton's table (for each byte, the tokens that accept it) is
// built for each name, for the bytes the name holds, and only the text is
// kept: ACL key patterns have no length bound (Redis has none), and a
// table kept for all 256 bytes held 32 bytes for each byte of a pattern,
// 2 KiB for a pattern of a few bytes, and its state once lived in a fixed
// buffer that a pattern of more than 1,087 tokens overran. A pattern holds
// its text, 64 bytes, and 56 bytes for each class or run of stars of
// globJumpBytes or more (so that a name's table costs a step per token,
// however long a class's text): at most 1.75 bytes for each byte of text
// besides the text.
// A pattern of literals and stars only (the usual "prefix:*") is matched
// without the automaton, by searching its pieces in turn.

// maxPatternBytes bounds a KEYS, SCAN or CONFIG GET pattern. (Within it a
// pattern has at most 512 stars apart, so Redis's nesting limit never
// changes an answer.)
const maxPatternBytes = 1024

var errPatternTooLong = "ERR pattern longer than " + itoa(maxPatternBytes) + " bytes"

// maxStarNesting is Redis's nesting limit (util.c): its matcher recurses
// once for each star that a token follows, and gives up past 1,000, so a
// pattern of more such stars matches no name.
const maxStarNesting = 1000

// globJumpBytes is the text from which a class or a run of stars is kept
// compiled, so that a name is not matched in a time its text sets.
const globJumpBytes = 32

// globPattern is a compiled pattern. It is not changed by matching, so one
// may be shared by goroutines.
type globPattern struct {
	// text is the pattern itself, read again at each name.
	text string
	// jumps are the classes and runs of stars of at least globJumpBytes
	// of text, in order, compiled.
	jumps []globJump
	// tokens is the number of tokens, and classes how many are sets.
	tokens, classes int
	// stars: there is one; nocase: bytes are compared ignoring ASCII case.
	stars, nocase bool
	// literal: the pattern is literal bytes and stars, matched as pieces.
	literal bool
	// never: more than maxStarNesting stars are followed by a token.
	never bool
	// empty is the answer for the empty name: Redis's matcher says yes
	// only for the empty pattern, and KEYS and SCAN take "*" for every
	// key without calling it.
	empty bool
}

// globJump is a long class or run of stars: text[start:end].
type globJump struct {
	start, end int
	star       bool
	set        byteSet
}

// globToken is a token as globReader reads it.
type globToken struct {
	kind  uint8 // tokenByte, tokenAny or tokenSet
	c     byte
	set   *byteSet
	start int // where its text starts
	// stars: a star comes before it; starsAt is where they start.
	stars   bool
	starsAt int
}

const (
	tokenByte = iota
	tokenAny
	tokenSet
)

// globReader reads a pattern's tokens, with the stars before each.
type globReader struct {
	text   string
	p      int
	jumps  []globJump // those not yet passed
	nocase bool
	set    byteSet // the last short class read
}

// next reads the next token and the stars before it; at the end ok is
// false, and t.stars tells whether stars end the pattern.
func (r *globReader) next() (t globToken, ok bool) {
	for r.p < len(r.text) {
		if len(r.jumps) > 0 && r.jumps[0].start == r.p {
			j := &r.jumps[0]
			r.jumps = r.jumps[1:]
			r.p = j.end
			if j.star {
				t.stars, t.starsAt = true, j.start
				continue
			}
			t.kind, t.set, t.start = tokenSet, &j.set, j.start
			return t, true
		}
		t.start = r.p
		switch r.text[r.p] {
		case '*':
			if !t.stars {
				t.stars, t.starsAt = true, r.p
			}
			r.p++
			continue
		case '?':
			t.kind = tokenAny
			r.p++
		case '\\':
			if r.p+1 < len(r.text) {
				r.p++
			}
			t.c = r.text[r.p]
			r.p++
		case '[':
			r.set, r.p = compileClass(r.text, r.p+1, r.nocase)
			t.kind, t.set = tokenSet, &r.set
		default:
			t.c = r.text[r.p]
			r.p++
		}
		return t, true
	}
	return t, false
}

// compileGlob compiles pattern, with bytes compared ignoring ASCII case
// when nocase is set. Its cost is linear in the pattern (with 256 steps per
// range under nocase).
func compileGlob(pattern string, nocase bool) *globPattern {
	g := &globPattern{text: pattern, nocase: nocase, empty: pattern == "" || pattern == "*"}
	r := globReader{text: pattern, nocase: nocase}
	nested := 0
	for {
		t, ok := r.next()
		if t.stars {
			g.stars = true
			end := r.p // the end of the stars: of the pattern, or where the token starts
			if ok {
				end = t.start
			}
			if end-t.starsAt >= globJumpBytes {
				g.jumps = append(g.jumps, globJump{start: t.starsAt, end: end, star: true})
			}
		}
		if !ok {
			break
		}
		if t.stars {
			nested++
		}
		g.tokens++
		if t.kind == tokenSet {
			g.classes++
			if r.p-t.start >= globJumpBytes {
				g.jumps = append(g.jumps, globJump{start: t.start, end: r.p, set: *t.set})
			}
		}
	}
	g.never = nested > maxStarNesting
	g.literal = !nocase && len(g.jumps) == 0 && strings.IndexAny(pattern, `?[\`) < 0
	g.jumps = slices.Clone(g.jumps) // no room left over from appending
	return g
}

// work bounds the steps of matching a name against the pattern, per byte
// of the name: the words of state, and for each class as many steps as
// the name has distinct bytes (building the table), at most one a byte.
func (g *globPattern) work() uint64 { return uint64(g.tokens/64 + 1 + g.classes) }

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
	if !nocase { // the bytes whose signed values run from lo to hi
		switch {
		case hi < 0:
			s.addSpan(lo+256, hi+256)
		case lo < 0:
			s.addSpan(lo+256, 255)
			s.addSpan(0, hi)
		default:
			s.addSpan(lo, hi)
		}
		return
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

// addSpan adds the bytes from a to b, 0 <= a <= b <= 255.
func (s *byteSet) addSpan(a, b int) {
	for w := a / 64; w <= b/64; w++ {
		lo, hi := max(a, w*64)-w*64, min(b, w*64+63)-w*64
		s[w] |= ^uint64(0) >> (63 - hi) &^ (1<<lo - 1)
	}
}

// cLower is C's tolower in the C locale, on a char's value.
func cLower(c int) int {
	if 'A' <= c && c <= 'Z' {
		return c - 'A' + 'a'
	}
	return c
}

// match reports whether name matches the pattern. It reads name once (twice
// for the table).
func (g *globPattern) match(name string) bool {
	switch {
	case name == "":
		return g.empty
	case g.never, !g.stars && len(name) != g.tokens, len(name) < g.tokens:
		return false
	case g.literal:
		return g.matchPieces(name)
	}
	// The bytes the name holds, which the table needs rows for. A pattern
	// of one word needs them only to bound the bytes of its classes it
	// sets, so a name longer than those is not read for them.
	var present byteSet
	if g.tokens < 64 && len(name) > 256*g.classes {
		present.invert()
	} else {
		for i := 0; i < len(name); i++ {
			present.add(name[i])
		}
	}
	if g.tokens < 64 {
		return g.match1(name, &present)
	}
	words := g.tokens/64 + 1
	// The rows of the table, one for each byte the name holds, then the
	// states any byte moves on (?), the stars, and the state.
	var rowOf [256]int32
	rows := 0
	for w := range present {
		for x := present[w]; x != 0; x &= x - 1 {
			rowOf[w*64+trailingZeros(x)] = int32(rows * words)
			rows++
		}
	}
	buf := globBuffer(rows*words + 3*words)
	defer globBuffers.Put(buf)
	table := (*buf)[:rows*words]
	wild := (*buf)[rows*words:][:words]
	loops := (*buf)[rows*words+words:][:words]
	state := (*buf)[rows*words+2*words:][:words]
	r := globReader{text: g.text, jumps: g.jumps, nocase: g.nocase}
	for j := 0; ; j++ {
		t, ok := r.next()
		if t.stars {
			loops[j/64] |= 1 << (j % 64)
		}
		if !ok {
			break
		}
		w, bit := (j+1)/64, uint64(1)<<((j+1)%64)
		switch t.kind {
		case tokenAny:
			wild[w] |= bit
		case tokenByte:
			if present.has(t.c) {
				table[int(rowOf[t.c])+w] |= bit
			}
			if c, ok := otherCase(t.c); g.nocase && ok && present.has(c) {
				table[int(rowOf[c])+w] |= bit
			}
		case tokenSet:
			for k := range present {
				for x := t.set[k] & present[k]; x != 0; x &= x - 1 {
					table[int(rowOf[k*64+trailingZeros(x)])+w] |= bit
				}
			}
		}
	}
	state[0] = 1
	final := g.tokens
	finalStays := loops[final/64]>>(final%64)&1 != 0
	for i := 0; i < len(name); i++ {
		accept := table[rowOf[name[i]]:][:words]
		var carry, live uint64
		for w, x := range state {
			next := (x<<1|carry)&(accept[w]|wild[w]) | x&loops[w]
			carry = x >> 63
			state[w] = next
			live |= next
		}
		if live == 0 {
			return false
		}
		if finalStays && state[final/64]>>(final%64)&1 != 0 {
			return true // a trailing star takes the rest
		}
	}
	return state[final/64]>>(final%64)&1 != 0
}

// globBuffers holds the tables of long patterns between names.
var globBuffers sync.Pool

// globBuffer is a zeroed buffer of n words from globBuffers.
func globBuffer(n int) *[]uint64 {
	b, _ := globBuffers.Get().(*[]uint64)
	if b == nil || cap(*b) < n {
		s := make([]uint64, n)
		return &s
	}
	*b = (*b)[:n]
	clear(*b)
	return b
}

// match1 is match for a pattern of at most 63 tokens: one word of states.
func (g *globPattern) match1(name string, present *byteSet) bool {
	var table [256]uint64
	var wild, loops uint64
	r := globReader{text: g.text, jumps: g.jumps, nocase: g.nocase}
	for j := 0; ; j++ {
		t, ok := r.next()
		if t.stars {
			loops |= 1 << j
		}
		if !ok {
			break
		}
		bit := uint64(1) << (j + 1)
		switch t.kind {
		case tokenAny:
			wild |= bit
		case tokenByte:
			table[t.c] |= bit
			if c, ok := otherCase(t.c); g.nocase && ok {
				table[c] |= bit
			}
		case tokenSet:
			for k := range present {
				for x := t.set[k] & present[k]; x != 0; x &= x - 1 {
					table[k*64+trailingZeros(x)] |= bit
				}
			}
		}
	}
	final := uint64(1) << g.tokens
	state := uint64(1)
	for i := 0; i < len(name); i++ {
		state = (state<<1)&(table[name[i]]|wild) | state&loops
		if state == 0 {
			return false
		}
		if state&final&loops != 0 {
			return true // a trailing star takes the rest
		}
	}
	return state&final != 0
}

// matchPieces is match for a pattern of literal bytes and stars: its first
// piece starts the name, its last ends it, and each other is found in
// turn, each as early as it can be (which leaves the most room for the
// rest, so that no other placing matches where this one does not).
func (g *globPattern) matchPieces(name string) bool {
	text := g.text
	first := strings.IndexByte(text, '*')
	if first < 0 {
		return name == text
	}
	last := strings.LastIndexByte(text, '*')
	head, tail := text[:first], text[last+1:]
	if len(name) < len(head)+len(tail) || !strings.HasPrefix(name, head) || !strings.HasSuffix(name, tail) {
		return false
	}
	rest := name[len(head) : len(name)-len(tail)]
	for middle := text[first:last]; middle != ""; {
		middle = strings.TrimLeft(middle, "*")
		piece := middle
		if i := strings.IndexByte(middle, '*'); i >= 0 {
			piece, middle = middle[:i], middle[i:]
		} else {
			middle = ""
		}
		i := strings.Index(rest, piece)
		if i < 0 {
			return false
		}
		rest = rest[i+len(piece):]
	}
	return true
}

// otherCase is c in the other ASCII case, if it is a letter.
func otherCase(c byte) (byte, bool) {
	switch {
	case 'a' <= c && c <= 'z':
		return c - 'a' + 'A', true
	case 'A' <= c && c <= 'Z':
		return c - 'A' + 'a', true
	}
	return 0, false
}

// globMatch reports whether name matches pattern, byte for byte (KEYS and
// SCAN); callers that match many names compile the pattern once.
func globMatch(pattern, name string) bool { return compileGlob(pattern, false).match(name) }

func trailingZeros(x uint64) int { return mathbits.TrailingZeros64(x) }
