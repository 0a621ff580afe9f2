package redisbloom

import (
	"errors"
	"fmt"
	"math"
	"math/big"
)

// RedisBloom sizes each filter of a chain as bloom_init does: from the
// items it must hold (entries) and its error rate e,
//
//	bpe     = |−ln(e) / 0.480453013918201|   (bits per entry; ln²2)
//	hashes  = ⌈0.693147180559945 · bpe⌉
//	bits    = ⌊entries · bpe⌋ (at least 1)                 with NOROUND
//	        = 2^(logb(entries·bpe)+1), n2 the exponent      without it
//	        = 2^entries, entries then ⌊bits / bpe⌋          with ENTS_IS_BITS
//	bytes   = bits rounded up to a multiple of 64, over 8; bits = 8·bytes
//
// and, without NOROUND, the bits gained by rounding up to a power of two
// raise entries by ⌊⌊bits − entries·bpe⌋ / bpe⌋. Every step is the same
// IEEE double operation as in C, so the results are RedisBloom's bit for
// bit, given the same ln(e). For that, ln is computed correctly rounded
// here (Go's math.Log is off by one unit in the last place for about 1.6%
// of inputs, glibc's log for under 0.01%): the dumps RedisBloom made agree
// with it for every filter, and a mismatch would need glibc's own rounding
// error to hit, for the one new error rate of a growth step.

// bfLn2 and bfLn2Squared are the constants of bloom.c, which are not the
// nearest doubles to ln 2 and ln² 2; the sizing depends on their exact values.
const (
	bfLn2        = 0.693147180559945
	bfLn2Squared = 0.480453013918201
)

// bfMaxLinkBytes bounds one filter: positions are computed in uint64 with
// one carry, which needs bits < 2^63.
const bfMaxLinkBytes = 1 << 59

// errBFSize is wrapped by sizing errors.
var errBFSize = errors.New("RedisBloom cannot size such a filter")

// bfParams are the fields of one filter of a chain that its dump header
// records (RedisBloom's struct bloom), and what the probes derive from them.
type bfParams struct {
	bytes   uint64
	bits    uint64
	entries uint64
	errRate float64
	bpe     float64
	hashes  uint32
	n2      uint8

	mod  uint64 // positions are taken mod this: 2^n2, or bits when n2 is 0
	wrap uint64 // 2^64 mod mod, what a carry out of the 64-bit sum takes away
}

// derive sets mod and wrap from n2 and bits.
func (p *bfParams) derive() {
	if p.n2 > 0 {
		p.mod, p.wrap = 1<<p.n2, 0
	} else {
		p.mod = p.bits
		p.wrap = -p.mod % p.mod
	}
}

// words returns how many 64-bit words hold the filter's bytes.
func (p *bfParams) words() uint64 { return (p.bytes + 7) / 8 }

// bfBitsPerEntry is bloom.c's calc_bpe.
func bfBitsPerEntry(e float64) float64 {
	bpe := -(lnCorrectlyRounded(e) / bfLn2Squared)
	if bpe < 0 {
		bpe = -bpe
	}
	return bpe
}

// bfHashes is the number of hashes bloom_init gives bpe: (int)ceil(LN2·bpe).
func bfHashes(bpe float64) (uint32, bool) {
	h := math.Ceil(bfLn2 * bpe)
	if !(h >= 0 && h <= math.MaxInt32) {
		return 0, false
	}
	return uint32(h), true
}

// bfInit is bloom_init: the filter for entries items at error rate e with
// the chain's options. It refuses what bloom_init refuses, and the corners
// where bloom_init's C is undefined (a shift by 64 or more, a negative
// double converted to an unsigned type), where no real RedisBloom filter
// lies.
func bfInit(entries uint64, e float64, options uint32) (bfParams, error) {
	if entries < 1 || !(e > 0 && e < 1) {
		return bfParams{}, fmt.Errorf("%w: %d entries at error rate %v", errBFSize, entries, e)
	}
	p := bfParams{errRate: e, entries: entries, bpe: bfBitsPerEntry(e)}
	var bits uint64
	switch {
	case options&EntriesAreBits != 0:
		if entries >= 64 {
			return bfParams{}, fmt.Errorf("%w: 2^%d bits", errBFSize, entries)
		}
		p.n2 = uint8(entries)
		bits = 1 << p.n2
		fe := float64(bits) / p.bpe
		if !(fe < 1<<64) {
			return bfParams{}, fmt.Errorf("%w: %v entries", errBFSize, fe)
		}
		p.entries = uint64(fe)
	case options&NoRound != 0:
		fb := float64(entries) * p.bpe
		if !(fb < bfMaxLinkBytes*8) {
			return bfParams{}, fmt.Errorf("%w: %.0f bits", errBFSize, fb)
		}
		if bits = uint64(fb); bits == 0 {
			bits = 1
		}
	default:
		fb := float64(entries) * p.bpe
		bn2 := math.Logb(fb)
		// bloom_init refuses bn2 > 63; bn2 = 63 would shift by 64 and bn2
		// below −1 would store a negative n2, both undefined in C.
		if !(bn2 >= -1 && bn2 < 62) {
			return bfParams{}, fmt.Errorf("%w: %v bits", errBFSize, fb)
		}
		p.n2 = uint8(bn2 + 1)
		bits = 1 << p.n2
		bitDiff := uint64(float64(bits) - fb)
		p.entries += uint64(float64(bitDiff) / p.bpe)
	}
	if bits%64 != 0 {
		p.bytes = (bits/64 + 1) * 8
	} else {
		p.bytes = bits / 8
	}
	p.bits = p.bytes * 8
	h, ok := bfHashes(p.bpe)
	if !ok {
		return bfParams{}, fmt.Errorf("%w: %v bits per entry", errBFSize, p.bpe)
	}
	p.hashes = h
	if p.bytes > bfMaxLinkBytes {
		return bfParams{}, fmt.Errorf("%w: %d bytes", errBFSize, p.bytes)
	}
	p.derive()
	return p, nil
}

// lnPrecision is the working precision of lnCorrectlyRounded, in bits:
// enough that rounding its result to 53 bits is the correct rounding of ln
// but for inputs within 2^-100 ulp of a rounding boundary.
const lnPrecision = 160

// lnCorrectlyRounded returns ln(x) rounded to the nearest double, for a
// positive finite x. It evaluates ln(f) + e·ln 2, x = f·2^e with f in
// [√½, √2), to lnPrecision bits with the series ln f = 2·atanh((f−1)/(f+1)).
// It allocates; it runs once per new filter, never per item.
func lnCorrectlyRounded(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 1) {
		return math.Log(x)
	}
	frac, exp := math.Frexp(x)
	if frac < math.Sqrt2/2 {
		frac *= 2
		exp--
	}
	f := newLnFloat().SetFloat64(frac)
	num := newLnFloat().Sub(f, newLnFloat().SetInt64(1))
	den := newLnFloat().Add(f, newLnFloat().SetInt64(1))
	r := twoAtanh(num.Quo(num, den))
	if exp != 0 {
		ln2 := twoAtanh(newLnFloat().Quo(newLnFloat().SetInt64(1), newLnFloat().SetInt64(3)))
		r.Add(r, ln2.Mul(ln2, newLnFloat().SetInt64(int64(exp))))
	}
	v, _ := r.Float64()
	return v
}

func newLnFloat() *big.Float { return new(big.Float).SetPrec(lnPrecision) }

// twoAtanh returns 2·atanh(s) = 2·(s + s³/3 + s⁵/5 + …), for |s| ≤ 0.18,
// where each term is at least 30 times smaller than the last.
func twoAtanh(s *big.Float) *big.Float {
	sum := newLnFloat().Set(s)
	if s.Sign() == 0 {
		return sum
	}
	s2 := newLnFloat().Mul(s, s)
	power := newLnFloat().Set(s)
	term, divisor := newLnFloat(), newLnFloat()
	for n := int64(3); ; n += 2 {
		power.Mul(power, s2)
		term.Quo(power, divisor.SetInt64(n))
		if term.Sign() == 0 || term.MantExp(nil) < sum.MantExp(nil)-lnPrecision {
			break
		}
		sum.Add(sum, term)
	}
	return sum.Add(sum, sum)
}
