package server

import (
	"math"
	"testing"
)

// Numbers as Redis's string2ll and string2d read them.
func TestRedisNumberParsing(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"-7", -7, true}, {"100000", 100000, true},
		{"9223372036854775807", math.MaxInt64, true}, {"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"", 0, false}, {"-", 0, false}, {"-0", 0, false}, {"007", 0, false}, {"+5", 0, false},
		{" 5", 0, false}, {"5 ", 0, false}, {"5x", 0, false}, {"1e3", 0, false}, {"1_000", 0, false},
		{"000000000000000000001", 0, false}, {"99999999999999999999", 0, false},
	} {
		if got, ok := parseLongLong([]byte(c.in)); got != c.want || ok != c.ok {
			t.Errorf("parseLongLong(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0.01", 0.01, true}, {"1", 1, true}, {"0", 0, true}, {"-0.5", -0.5, true}, {".5", 0.5, true},
		{"5.", 5, true}, {"+0.25", 0.25, true}, {"1e-3", 0.001, true}, {"1E-3", 0.001, true},
		{"inf", math.Inf(1), true}, {"-Infinity", math.Inf(-1), true}, {"4.9e-324", 5e-324, true},
		{"0x10", 16, true}, {"0x1p-3", 0.125, true}, {"0e5", 0, true}, {"0x0p9", 0, true},
		{"nan", 0, false}, {"1e400", 0, false}, {"1e-400", 0, false}, {"0x1p-2000", 0, false},
		{"", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"1_0", 0, false}, {"abc", 0, false},
		{"1e", 0, false}, {".", 0, false},
	} {
		got, ok := parseDouble([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("parseDouble(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
