package server

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// redisMatch is Redis's stringmatchlen (util.c), recursion and all: the
// reference globMatch must agree with. It backtracks into every star, so
// it is only run on short inputs. (Redis answers no for an empty string
// and any pattern, "*" included, except through KEYS *'s shortcut; the
// comparisons leave the empty string out.)
func redisMatch(pattern, s string) bool {
	for len(pattern) > 0 && len(s) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for len(s) > 0 {
				if redisMatch(pattern[1:], s) {
					return true
				}
				s = s[1:]
			}
			return false
		case '?':
			s = s[1:]
		case '[':
			pattern = pattern[1:]
			not := len(pattern) > 0 && pattern[0] == '^'
			if not {
				pattern = pattern[1:]
			}
			match := false
			for {
				if len(pattern) >= 2 && pattern[0] == '\\' {
					pattern = pattern[1:]
					match = match || pattern[0] == s[0]
				} else if len(pattern) > 0 && pattern[0] == ']' {
					break
				} else if len(pattern) == 0 {
					pattern = " " // stands for the byte C steps back onto
					break
				} else if len(pattern) >= 3 && pattern[1] == '-' {
					lo, hi := pattern[0], pattern[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					match = match || (lo <= s[0] && s[0] <= hi)
					pattern = pattern[2:]
				} else {
					match = match || pattern[0] == s[0]
				}
				pattern = pattern[1:]
			}
			if match == not {
				return false
			}
			s = s[1:]
		case '\\':
			if len(pattern) >= 2 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if pattern[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		pattern = pattern[1:]
		if len(s) == 0 {
			for len(pattern) > 0 && pattern[0] == '*' {
				pattern = pattern[1:]
			}
		}
	}
	return len(pattern) == 0 && len(s) == 0
}

func TestGlobMatchesRedis(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"*", "anything", true},
		{"*", "", true},
		{"bf:*", "bf:a", true},
		{"bf:*", "cf:a", false},
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h*llo", "heeeello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[b-a]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false},
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hallo", false},
		{`a\`, `a\`, true},
		{"[abc", "c", true},
		{"[]", "]", false},
		{"*a*a*a*a*a*b*", strings.Repeat("a", 100), false},
		{"*a*a*a*a*a*b*", strings.Repeat("a", 100) + "b", true},
	} {
		if got := globMatch(c.pattern, c.name); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	piece := func(alphabet string, n int) string {
		b := make([]byte, rng.IntN(n)+1)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 200_000 {
		pattern, name := piece(`ab*?[]^-\`, 9), piece("ab]-^", 8)
		if got, want := globMatch(pattern, name), redisMatch(pattern, name); got != want {
			t.Fatalf("globMatch(%q, %q) = %v, Redis says %v", pattern, name, got, want)
		}
	}
}

func FuzzGlob(f *testing.F) {
	f.Add("*a*a*b*", "aaab")
	f.Add(`h[^a-c\]]llo*`, "hdllo")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		got := globMatch(pattern, name)
		if len(pattern) <= 12 && len(name) <= 12 && name != "" {
			if want := redisMatch(pattern, name); got != want {
				t.Fatalf("globMatch(%q, %q) = %v, Redis says %v", pattern, name, got, want)
			}
		}
	})
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
}
