package fpr

import (
	"math"
	"testing"
)

// For one partition of size s the rate has a closed form: the Poisson
// generating function gives E[(1 − 1/s)^J] = exp(−λ/s), so
// Rate = 1 − exp(−λ/s). For two, inclusion-exclusion gives
// 1 − e^(−λ/a) − e^(−λ/b) + e^(−λ(1/a + 1/b − 1/ab)).
func TestRateClosedForms(t *testing.T) {
	for _, lambda := range []float64{0.1, 1, 7.5, 60, 300, 2000} {
		for _, s := range []int{2, 77, 512} {
			want := -math.Expm1(-lambda / float64(s))
			if got := Rate([]int{s}, lambda); math.Abs(got-want) > 1e-12 {
				t.Errorf("Rate([%d], %v) = %v, want %v", s, lambda, got, want)
			}
		}
		a, b := 255.0, 257.0
		want := 1 - math.Exp(-lambda/a) - math.Exp(-lambda/b) + math.Exp(-lambda*(1/a+1/b-1/(a*b)))
		if got := Rate([]int{255, 257}, lambda); math.Abs(got-want) > 1e-12 {
			t.Errorf("Rate([255 257], %v) = %v, want %v", lambda, got, want)
		}
	}
}

// The variance of f(J) for one partition: E[f²] − E[f]², with
// E[(1−q^J)²] = 1 − 2e^(−λ(1−q)) + e^(−λ(1−q²)) and q = 1 − 1/s.
func TestMomentsVariance(t *testing.T) {
	const s, lambda = 85.0, 59.0
	q := 1 - 1/s
	mean := 1 - math.Exp(-lambda*(1-q))
	second := 1 - 2*math.Exp(-lambda*(1-q)) + math.Exp(-lambda*(1-q*q))
	m, v := Moments([]int{85}, lambda)
	if math.Abs(m-mean) > 1e-12 || math.Abs(v-(second-mean*mean)) > 1e-12 {
		t.Errorf("Moments = %v, %v; want %v, %v", m, v, mean, second-mean*mean)
	}
}

func TestMaxLoad(t *testing.T) {
	sizes := []int{77, 81, 83, 85, 89, 97}
	for _, target := range []float64{0.1, 0.01, 0.001, 1e-6} {
		l := MaxLoad(sizes, target)
		if r := Rate(sizes, l); r > target || Rate(sizes, l*1.0001) <= target {
			t.Errorf("MaxLoad(%g) = %v: rate there %v, just above %v", target, l, r, Rate(sizes, l*1.0001))
		}
	}
	if l := MaxLoad(sizes, 1e-300); l != 0 && Rate(sizes, l) > 1e-300 {
		t.Errorf("MaxLoad(1e-300) = %v", l)
	}
}
