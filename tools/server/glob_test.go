package server

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisMatch is Redis 7's stringmatchlen (util.c), line for line: the
// reference compileGlob must agree with. As in C, a byte of the pattern
// past its length reads as the string's terminating NUL, chars are signed
// (amd64), and tolower is the C locale's. It recurses into every star, so
// it is only run on short inputs.
func redisMatch(pattern, s string, nocase bool) bool {
	skip := false
	return redisMatchImpl(pattern, s, nocase, &skip, 0)
}

func redisMatchImpl(pattern, str string, nocase bool, skipLongerMatches *bool, nesting int) bool {
	if nesting > 1000 {
		return false
	}
	at := func(i int) int { // pattern[i] as a C char
		if i < len(pattern) {
			return int(int8(pattern[i]))
		}
		return 0
	}
	char := func(b byte) int { return int(int8(b)) }
	p, plen := 0, len(pattern)
	s, slen := 0, len(str)
	for plen > 0 && slen > 0 {
		switch pattern[p] {
		case '*':
			for plen > 0 && at(p+1) == '*' {
				p++
				plen--
			}
			if plen == 1 {
				return true
			}
			for slen > 0 {
				if redisMatchImpl(pattern[p+1:], str[s:], nocase, skipLongerMatches, nesting+1) {
					return true
				}
				if *skipLongerMatches {
					return false
				}
				s++
				slen--
			}
			*skipLongerMatches = true
			return false
		case '?':
			s++
			slen--
		case '[':
			p++
			plen--
			not := at(p) == '^'
			if not {
				p++
				plen--
			}
			match := false
			for {
				if at(p) == '\\' && plen >= 2 {
					p++
					plen--
					if at(p) == char(str[s]) {
						match = true
					}
				} else if at(p) == ']' {
					break
				} else if plen == 0 {
					p--
					plen++
					break
				} else if plen >= 3 && at(p+1) == '-' {
					start, end, c := at(p), at(p+2), char(str[s])
					if start > end {
						start, end = end, start
					}
					if nocase {
						start, end, c = cLower(start), cLower(end), cLower(c)
					}
					p += 2
					plen -= 2
					if c >= start && c <= end {
						match = true
					}
				} else if !nocase && at(p) == char(str[s]) || nocase && cLower(at(p)) == cLower(char(str[s])) {
					match = true
				}
				p++
				plen--
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s++
			slen--
		default:
			if pattern[p] == '\\' && plen >= 2 {
				p++
				plen--
			}
			if !nocase && at(p) != char(str[s]) || nocase && cLower(at(p)) != cLower(char(str[s])) {
				return false
			}
			s++
			slen--
		}
		p++
		plen--
		if slen == 0 {
			for at(p) == '*' {
				p++
				plen--
			}
			break
		}
	}
	return plen == 0 && slen == 0
}

// redisKeysMatch is what KEYS and SCAN MATCH answer in Redis: "*" takes
// every key, the empty one included, without the matcher.
func redisKeysMatch(pattern, name string) bool {
	return pattern == "*" || redisMatch(pattern, name, false)
}

func TestGlobMatchesRedis(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		nocase, want  bool
	}{
		{"*", "anything", false, true},
		{"*", "", false, true},
		{"**", "", false, false},
		{"", "", false, true},
		{"", "a", false, false},
		{"bf:*", "bf:a", false, true},
		{"bf:*", "cf:a", false, false},
		{"h?llo", "hello", false, true},
		{"h?llo", "hllo", false, false},
		{"h*llo", "heeeello", false, true},
		{"h[ae]llo", "hallo", false, true},
		{"h[ae]llo", "hillo", false, false},
		{"h[^e]llo", "hallo", false, true},
		{"h[^e]llo", "hello", false, false},
		{"h[a-b]llo", "hbllo", false, true},
		{"h[b-a]llo", "hbllo", false, true},
		{"h[a-b]llo", "hcllo", false, false},
		{`h\*llo`, "h*llo", false, true},
		{`h\*llo`, "hallo", false, false},
		{`a\`, `a\`, false, true},
		{"[abc", "c", false, true},
		{"[", "x", false, false},
		{"[^", "x", false, true}, // an open negated set with nothing in it
		{"[]", "]", false, false},
		{"[a-]x", "_", false, true}, // a-] is a range, and the set runs on
		{"[a-]x]", "x", false, true},
		// Signed chars: [\x01-\xff] is -1..1, [b-\xff] is -1..'b'.
		{"a[\x01-\xff]", "a\xff", false, true},
		{"a[\x01-\xff]", "a\x80", false, false},
		{"a[b-\xff]", "aZ", false, true},
		{"a[b-\xff]", "a\x10", false, true},
		{"a[b-\xff]", "ac", false, false},
		// nocase: a range is put in order before its ends are lowered, so
		// [Z-a] holds nothing; an escaped byte in a set is exact.
		{"[Z-a]ppendonly", "appendonly", true, false},
		{"[A-A]PPENDONLY", "appendonly", true, true},
		{`appendonl[\Y]`, "appendonly", true, false},
		{`APPENDONL\Y`, "appendonly", true, true},
		{"*a*a*a*a*a*b*", strings.Repeat("a", 100), false, false},
		{"*a*a*a*a*a*b*", strings.Repeat("a", 100) + "b", false, true},
	} {
		g := compileGlob(c.pattern, c.nocase)
		if got := g.match(c.name); got != c.want {
			t.Errorf("compileGlob(%q, nocase %v).match(%q) = %v, want %v", c.pattern, c.nocase, c.name, got, c.want)
		}
		if c.name != "" && c.pattern != "*" {
			if ref := redisMatch(c.pattern, c.name, c.nocase); ref != c.want {
				t.Errorf("the reference says %v for %q, %q: the case is wrong", ref, c.pattern, c.name)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	piece := func(alphabet string, n int) string {
		b := make([]byte, rng.IntN(n+1))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	const patternBytes, nameBytes = `ab*?[]^-\Z` + "\x00\x80\xff", "abAZz]-^\\\x00\x01\x80\xff"
	for i := range 300_000 {
		pattern, name := piece(patternBytes, 10), piece(nameBytes, 8)
		nocase := i%2 == 1
		got, want := compileGlob(pattern, nocase).match(name), redisMatch(pattern, name, nocase)
		if !nocase {
			want = redisKeysMatch(pattern, name)
		}
		if got != want && !(nocase && name == "") {
			t.Fatalf("compileGlob(%q, nocase %v).match(%q) = %v, Redis says %v", pattern, nocase, name, got, want)
		}
	}
	// Long patterns and names, where the reference is still quick:
	// patterns with few stars, over every word of the state sets.
	for range 2000 {
		var p strings.Builder
		for range rng.IntN(200) {
			switch rng.IntN(12) {
			case 0:
				p.WriteString("*")
			case 1:
				p.WriteString("?")
			case 2:
				p.WriteString("[a-b]")
			default:
				p.WriteByte("ab"[rng.IntN(2)])
			}
		}
		pattern := p.String()
		if strings.Count(pattern, "*") > 3 {
			continue
		}
		name := piece("ab", 300)
		if got, want := compileGlob(pattern, false).match(name), redisKeysMatch(pattern, name); got != want {
			t.Fatalf("compileGlob(%q).match(%q) = %v, Redis says %v", pattern, name, got, want)
		}
	}
}

func FuzzGlob(f *testing.F) {
	f.Add("*a*a*b*", "aaab", false)
	f.Add(`h[^a-c\]]llo*`, "hdllo", false)
	f.Add("[Z-a]*", "Appendonly", true)
	f.Add("a[b-\xff]", "a\x10", false)
	f.Fuzz(func(t *testing.T, pattern, name string, nocase bool) {
		if len(pattern) > maxPatternBytes {
			pattern = pattern[:maxPatternBytes]
		}
		got := compileGlob(pattern, nocase).match(name)
		if len(pattern) <= 16 && len(name) <= 16 && name != "" {
			if want := redisMatch(pattern, name, nocase); got != want {
				t.Fatalf("compileGlob(%q, nocase %v).match(%q) = %v, Redis says %v", pattern, nocase, name, got, want)
			}
		}
	})
}

// KEYS on a real redis-server (CI starts one; OHBLOOM_REDIS_ADDR) agrees
// with the matcher on random keys and patterns, high bytes included, and
// so does CONFIG GET on Redis's own setting names, where Redis ignores
// case.
func TestGlobMatchesRedisServer(t *testing.T) {
	addr := os.Getenv("OHBLOOM_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must set OHBLOOM_REDIS_ADDR (.ci/run starts redis-server)")
		}
		t.Skip("OHBLOOM_REDIS_ADDR is not set")
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: 5, ReadTimeout: 30 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { rdb.FlushDB(ctx); rdb.Close() })
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	piece := func(alphabet string, n int) string {
		b := make([]byte, rng.IntN(n+1))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	var names []string
	for range 300 {
		name := piece("abAZ]-^\\\x00\x80\xff", 7)
		names = append(names, name)
		if err := rdb.Set(ctx, name, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	for range rounds {
		pattern := piece(`ab*?[]^-\A`+"\x80\xff", 8)
		got, err := rdb.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatalf("KEYS %q: %v", pattern, err)
		}
		g := compileGlob(pattern, false)
		var want []string
		for _, name := range names {
			if g.match(name) {
				want = append(want, name)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("KEYS %q: redis-server %q, compileGlob %q", pattern, got, want)
		}
	}
	all, err := rdb.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for range rounds / 10 {
		pattern := "*" + piece("aeiopnAEIOPN[]-^?\\", 5) + "*"
		if rng.IntN(2) == 0 { // a range whose ends' case matters
			pattern = piece("*?aA", 2) + "[" + piece("aAmMzZ^", 1) + piece("aAmMzZ", 1) + "-" + piece("aAmMzZ", 1) + "]*"
		}
		got, err := rdb.ConfigGet(ctx, pattern).Result()
		if err != nil {
			t.Fatalf("CONFIG GET %q: %v", pattern, err)
		}
		g := compileGlob(pattern, true)
		for name := range all {
			if _, in := got[name]; in != g.match(name) {
				t.Fatalf("CONFIG GET %q: redis-server includes %q: %v, compileGlob says %v", pattern, name, in, !in)
			}
		}
	}
}

// KEYS and SCAN MATCH with a pattern that makes a backtracking matcher
// explode (Redis's CVE-2022-36021) answer at once.
func TestKeysPatternsCannotExplode(t *testing.T) {
	_, addr := start(t, Config{})
	c := dial(t, addr)
	long := strings.Repeat("a", 1000)
	c.do(t, "BF.ADD", long, "x")
	bad := strings.Repeat("*a", 15) + "*b*"
	// The deadline only catches a matcher that never ends: a
	// backtracking one needs about C(1000, 15) steps here.
	c.SetDeadline(time.Now().Add(time.Minute))
	if r := c.do(t, "KEYS", bad); r != "*0" {
		t.Fatalf("KEYS: %q", r)
	}
	if r := c.do(t, "SCAN", "0", "MATCH", bad); r != "*2" {
		t.Fatalf("SCAN: %q", r)
	}
	if r := c.do(t, "KEYS", strings.Repeat("*a", 15)+"*"); r != "*1" {
		t.Fatalf("KEYS of a matching pattern: %q", r)
	}
	if r := c.do(t, "KEYS", strings.Repeat("*", maxPatternBytes+1)); r != "-"+errPatternTooLong {
		t.Fatalf("a pattern over the bound: %q", r)
	}
	if r := c.do(t, "SCAN", "0", "MATCH", strings.Repeat("?", maxPatternBytes+1)); r != "-"+errPatternTooLong {
		t.Fatalf("a SCAN pattern over the bound: %q", r)
	}
	if r := c.do(t, "CONFIG", "GET", "*"+strings.Repeat("[z]", maxPatternBytes)); r != "-"+errPatternTooLong {
		t.Fatalf("a CONFIG GET pattern over the bound: %q", r)
	}
}

// The matcher's worst inputs over a key of the longest name: a 1 KiB class
// after a star (the old matcher's quadratic case), and 1,022 literals
// after a star over a name of that letter (every state live at every
// byte: the most work per byte there is).
func BenchmarkGlob(b *testing.B) {
	long := strings.Repeat("a", maxKeyBytes)
	for _, c := range []struct{ name, pattern, key string }{
		{"class1020", "*[" + strings.Repeat("z", maxPatternBytes-4) + "]q", long},
		{"literals1022", "*" + strings.Repeat("a", maxPatternBytes-2) + "b", long},
		{"prefix", "bf:*", "bf:" + long},
		{"short", "user:*:x", "user:12345:y"},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := compileGlob(c.pattern, false)
			b.SetBytes(int64(len(c.key)))
			for b.Loop() {
				g.match(c.key)
			}
		})
	}
}

// Patterns far longer than KEYS takes, as ACL key patterns are (Redis
// bounds them by nothing): around the sizes where a fixed state buffer
// of the matcher ended (1,088 tokens) and up to 64 KiB, of every shape,
// against names made from the pattern (that mostly match) and the same
// with a byte changed, as Redis's stringmatchlen answers them. The
// matcher once panicked on any of these past 1,087 tokens.
func TestGlobLongPatternsMatchRedis(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	sizes := []int{1000, 1088, 4096, 64 << 10}
	if testing.Short() {
		sizes = sizes[:3]
	}
	const alphabet = "ab\x80\xff"
	shapes := map[string]func() string{
		"literal": func() string { return string(alphabet[rng.IntN(len(alphabet))]) },
		"stars": func() string {
			if rng.IntN(8) == 0 {
				return strings.Repeat("*", 1+rng.IntN(40))
			}
			return string(alphabet[rng.IntN(2)])
		},
		"classes": func() string {
			return [...]string{"[ab]", "[^a]", "[a-b]", "[\x80-\xff]", "[" + strings.Repeat("b", 40) + "a]", `[\]]`}[rng.IntN(6)]
		},
		"pieces": func() string { // literal bytes and stars only
			return [...]string{"a", "b", "ab", "*", "\xff"}[rng.IntN(5)]
		},
		"questions": func() string { return "?" },
		"escapes":   func() string { return `\` + string(`*?[\a`[rng.IntN(5)]) },
		"mixed": func() string {
			return [...]string{"a", "b", "*", "?", "[ab]", "[^b]", `\*`, "**", "\xff"}[rng.IntN(9)]
		},
	}
	// name makes a name the pattern mostly matches: a byte for each
	// token, a few for each star.
	name := func(pattern string) string {
		var b strings.Builder
		for p := 0; p < len(pattern); p++ {
			switch c := pattern[p]; c {
			case '*':
				for range rng.IntN(3) {
					b.WriteByte(alphabet[rng.IntN(len(alphabet))])
				}
			case '?':
				b.WriteByte(alphabet[rng.IntN(len(alphabet))])
			case '[':
				end := strings.IndexByte(pattern[p+1:], ']')
				if end < 0 {
					end = len(pattern) - p - 1
				}
				b.WriteByte("ab]\x90"[rng.IntN(4)])
				p += end + 1
			case '\\':
				if p+1 < len(pattern) {
					p++
				}
				b.WriteByte(pattern[p])
			default:
				b.WriteByte(c)
			}
		}
		return b.String()
	}
	matched, unmatched := 0, 0
	for _, size := range sizes {
		for shape, token := range shapes {
			for round := range 4 {
				var p strings.Builder
				for p.Len() < size {
					p.WriteString(token())
				}
				pattern := p.String()
				if round == 1 {
					pattern = "*" + pattern[1:]
				}
				nocase := round == 3 // as CONFIG GET reads patterns
				g := compileGlob(pattern, nocase)
				n := name(pattern)
				changed := []byte(n)
				if len(changed) > 0 {
					changed[rng.IntN(len(changed))] ^= 1
				}
				upper := []byte(n)
				for i := range upper {
					if upper[i] == 'a' && rng.IntN(2) == 0 {
						upper[i] = 'A'
					}
				}
				for _, key := range []string{n, string(changed), n[:len(n)/2], n + "a", string(upper)} {
					if key == "" {
						continue
					}
					if got, want := g.match(key), redisMatch(pattern, key, nocase); got != want {
						t.Fatalf("%s pattern of %d bytes (%.40q…, nocase %v) against a name of %d bytes: %v, Redis says %v",
							shape, len(pattern), pattern, nocase, len(key), got, want)
					} else if got {
						matched++
					} else {
						unmatched++
					}
				}
			}
		}
	}
	if matched < 50 || unmatched < 50 {
		t.Fatalf("%d names matched and %d did not: the cases test too little", matched, unmatched)
	}
}
