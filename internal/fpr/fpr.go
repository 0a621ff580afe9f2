// Package fpr computes the exact false positive rate of a one-hash blocked
// Bloom filter, the model that both the library's sizing and the generator of
// its partition tables rely on.
//
// Keys land in blocks uniformly, so the number j of keys in a block is
// Binomial(n, 1/blocks), which for the block counts that matter is
// Poisson(λ = n/blocks) to many digits. A block holding j keys answers a
// random absent key positively when, in every partition i of size s_i, the
// one bit the key picks is set: Π_i (1 − (1 − 1/s_i)^j). The filter's rate is
// the Poisson mixture of that product.
package fpr

import "math"

// Moments returns the mean and the variance of the per-block false positive
// rate f(j) = Π_i (1 − (1 − 1/sizes_i)^j) when j ~ Poisson(lambda).
//
// The mean is the expected false positive rate of a filter with that load.
// The variance tells how far one filter's realized rate strays from it: the
// realized rate averages f over B blocks, so its standard deviation is
// sqrt(variance/B).
func Moments(sizes []int, lambda float64) (mean, variance float64) {
	if lambda <= 0 {
		return 0, 0
	}
	// Sum j over the bulk of the Poisson mass: 14 standard deviations either
	// side leaves out less than 1e-40 of it.
	spread := 14*math.Sqrt(lambda) + 30
	lo := max(0, int(lambda-spread))
	hi := int(lambda + spread)

	var q [64]float64 // (1 - 1/s_i)^j, advanced one j at a time
	var step [64]float64
	for i, s := range sizes {
		step[i] = 1 - 1/float64(s)
		q[i] = math.Pow(step[i], float64(lo))
	}
	// The Poisson pmf at lo, then advanced by pmf(j+1) = pmf(j)·λ/(j+1). lo
	// sits at most ~270 below λ, so exp(-λ) at lo = 0 cannot underflow.
	lg, _ := math.Lgamma(float64(lo + 1))
	pmf := math.Exp(float64(lo)*math.Log(lambda) - lambda - lg)
	var sum, sumSq float64
	for j := lo; j <= hi; j++ {
		f := 1.0
		for i := range sizes {
			f *= 1 - q[i]
			q[i] *= step[i]
		}
		sum += pmf * f
		sumSq += pmf * f * f
		pmf *= lambda / float64(j+1)
	}
	return sum, max(0, sumSq-sum*sum)
}

// Rate returns the expected false positive rate of a blocked filter whose
// blocks are split into partitions of the given sizes, at lambda keys per
// block.
func Rate(sizes []int, lambda float64) float64 {
	m, _ := Moments(sizes, lambda)
	return m
}

// MaxLoad returns the largest keys-per-block load at which Rate stays at or
// below target, found by bisection (Rate increases with the load). It returns
// 0 when even a single key per block exceeds the target.
func MaxLoad(sizes []int, target float64) float64 {
	lo, hi := 0.0, 1.0
	for Rate(sizes, hi) <= target {
		lo, hi = hi, hi*2
		if hi > 1<<20 {
			return lo
		}
	}
	// 50 halvings take the bracket below 1e-15 of its width: far finer than
	// the block count it is turned into.
	for range 50 {
		mid := (lo + hi) / 2
		if Rate(sizes, mid) <= target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
