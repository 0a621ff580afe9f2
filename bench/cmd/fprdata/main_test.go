package main

import (
	"math"
	"testing"
)

func TestTextbookBlocked(t *testing.T) {
	for _, c := range []struct {
		p          float64
		bitsPerKey float64 // -ln p / ln²2, rounded up to whole blocks
		k          int
	}{
		{0.01, 9.585, 7},
		{0.001, 14.378, 10},
		{1e-5, 23.963, 16}, // the formula's 17 is past ohbloom's 16
	} {
		f, err := textbookBlocked(1_000_000, c.p)
		if err != nil {
			t.Fatal(err)
		}
		if got := float64(f.Bits()) / 1e6; math.Abs(got-c.bitsPerKey) > 0.001 {
			t.Errorf("p=%g: %.4f bits per key, want %.3f", c.p, got, c.bitsPerKey)
		}
		if f.K() != c.k {
			t.Errorf("p=%g: k = %d, want %d", c.p, f.K(), c.k)
		}
	}
}

// firstByteBelow tests positive for keys whose first byte is below a bound.
type firstByteBelow byte

func (b firstByteBelow) Test(key []byte) bool { return key[0] < byte(b) }

func TestFalsePositivesCountsEachFilter(t *testing.T) {
	const queries = 2 * chunk
	counts := falsePositives([]tester{firstByteBelow(16), firstByteBelow(0), firstByteBelow(128)}, queries)
	// Random first bytes: 1/16 and 1/2 of the keys, within 2% (about 7
	// standard deviations).
	if want := float64(queries) / 16; math.Abs(float64(counts[0])-want) > 0.02*want {
		t.Errorf("1/16 filter: %d positives, want about %.0f", counts[0], want)
	}
	if counts[1] != 0 {
		t.Errorf("filter that never says yes: %d positives", counts[1])
	}
	if want := float64(queries) / 2; math.Abs(float64(counts[2])-want) > 0.02*want {
		t.Errorf("1/2 filter: %d positives, want about %.0f", counts[2], want)
	}
	// The absent keys come from fixed seeds.
	if again := falsePositives([]tester{firstByteBelow(16)}, queries); again[0] != counts[0] {
		t.Errorf("second run: %d positives, first %d", again[0], counts[0])
	}
}
