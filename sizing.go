package ohbloom

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/ohbloom/ohbloom/internal/fpr"
	"github.com/ohbloom/ohbloom/internal/sysmem"
)

// sizingMargin is how far below the requested rate New aims the expected
// rate: 2%. It covers what the exact model leaves to chance (how keys fall
// into blocks in one particular filter, and the noise of measuring a rate on
// a finite set of queries) at a cost of about 0.04 bits per key. Small
// filters get more on top, see plan.
const sizingMargin = 0.02

// Config describes a filter to build. Either Capacity and FPR are set and the
// filter is sized from them, or Blocks and K are set to give its geometry
// directly (Capacity and FPR are then only recorded).
type Config struct {
	// Capacity is the number of distinct keys the filter is built to hold.
	Capacity uint64
	// FPR is the false positive rate the filter must not exceed once it
	// holds Capacity keys, in (0, 1).
	FPR float64

	// Blocks and K, when both are set, fix the geometry: Blocks 64-byte
	// blocks (1 to MaxBlocks), each split into K partitions (2 to 16).
	Blocks uint64
	K      int

	// Seed seeds the hash. Filters can be merged only when their seeds
	// agree. Zero means DefaultSeed.
	Seed uint64
	// RandomSeed draws a seed from crypto/rand, so that nobody who does not
	// see the filter can choose keys that collide in it. Seed must then be 0.
	RandomSeed bool

	// Growth is, for a scalable filter, how many times more keys each
	// stage holds than the one before: 1 keeps every stage the size of
	// the first (RedisBloom's EXPANSION). Zero means DefaultGrowth. Other
	// filters do not grow, and refuse a Config that sets it.
	Growth uint64

	// MaxBytes, when not zero, bounds the memory of the filter's bits
	// (its SizeBytes): a filter that would need more is refused with
	// ErrTooLarge, and a scalable filter adds no stage that would take
	// it past the bound (see ErrFull).
	MaxBytes uint64

	_ struct{} // forces keyed fields, so that the Config can grow
}

// Errors of building, changing and combining filters. Each error wraps
// one of them where it applies, and says what exactly was wrong.
var (
	// ErrInvalidConfig is wrapped by every error about a Config's values.
	ErrInvalidConfig = errors.New("ohbloom: invalid config")

	// ErrTooLarge is returned when a filter would need more than MaxBlocks
	// blocks or more memory than the platform can address or the machine
	// has.
	ErrTooLarge = errors.New("ohbloom: filter too large")

	// ErrFull is wrapped by the error of a scalable filter that cannot take
	// another new key: its newest stage holds its capacity and the next
	// stage cannot be added, because it would take the filter past
	// Config.MaxBytes or cannot be built at all (then the error wraps
	// ErrTooLarge or ErrInvalidConfig too). The filter still answers for
	// every key it holds.
	ErrFull = errors.New("ohbloom: filter is full")

	// ErrNotPresent is returned by a counting filter's Remove for a key
	// the filter says is absent.
	ErrNotPresent = errors.New("ohbloom: key not in the filter")

	// ErrIncompatible is returned when two filters cannot be combined
	// because their block counts, partition counts or seeds differ.
	ErrIncompatible = errors.New("ohbloom: incompatible filters")

	// ErrBlockRange is returned by OrBlocks for data that is not whole
	// blocks or reaches past the filter's last block.
	ErrBlockRange = errors.New("ohbloom: blocks out of range")
)

// plan turns a Config into a core with no storage yet, for a filter
// about to be allocated here: one larger than this machine's memory is
// ErrTooLarge.
func (c Config) plan() (core, error) {
	l, err := c.planLayout()
	if err == nil {
		err = checkMemory(l.nblocks)
	}
	return l, err
}

// planLayout is plan without the memory check, for a Layout whose bits
// live elsewhere (NewLayout; a Redis-stored filter).
func (c Config) planLayout() (core, error) {
	var l core
	nblocks, k, seed, err := c.geometry(bitTable)
	if err != nil {
		return l, err
	}
	l.capacity, l.targetFPR = c.Capacity, c.FPR
	l.setGeometry(seed, nblocks, k)
	return l, nil
}

// geometry validates c and returns the block count, k and seed it asks
// for, sizing from Capacity and FPR for blocks of table's shape unless
// Blocks and K are given, within MaxBytes.
func (c Config) geometry(table *partitionTable) (nblocks uint64, k int, seed uint64, err error) {
	nblocks, k, seed, err = c.unboundedGeometry(table)
	if err == nil && c.MaxBytes != 0 && nblocks > c.MaxBytes/blockBytes {
		err = fmt.Errorf("%w: %d blocks take %d bytes, MaxBytes is %d", ErrTooLarge, nblocks, nblocks*blockBytes, c.MaxBytes)
	}
	return nblocks, k, seed, err
}

func (c Config) unboundedGeometry(table *partitionTable) (nblocks uint64, k int, seed uint64, err error) {
	if c.Growth != 0 {
		return 0, 0, 0, fmt.Errorf("%w: Growth = %d, but only scalable filters grow", ErrInvalidConfig, c.Growth)
	}
	if c.RandomSeed && c.Seed != 0 {
		return 0, 0, 0, fmt.Errorf("%w: Seed and RandomSeed are both set", ErrInvalidConfig)
	}
	seed = c.Seed
	if c.RandomSeed {
		var b [8]byte
		rand.Read(b[:]) // never fails: it crashes the program first (Go 1.24+)
		seed = binary.LittleEndian.Uint64(b[:])
	}
	if c.Blocks != 0 || c.K != 0 {
		if c.K < minK || c.K > table.kmax {
			return 0, 0, 0, fmt.Errorf("%w: K = %d, want %d to %d", ErrInvalidConfig, c.K, minK, table.kmax)
		}
		if c.Blocks == 0 {
			return 0, 0, 0, fmt.Errorf("%w: K is set but Blocks is 0", ErrInvalidConfig)
		}
		if err := checkBlockLimits(c.Blocks); err != nil {
			return 0, 0, 0, err
		}
		return c.Blocks, c.K, seed, nil
	}
	if c.Capacity == 0 {
		return 0, 0, 0, fmt.Errorf("%w: Capacity is 0", ErrInvalidConfig)
	}
	if !(c.FPR > 0 && c.FPR < 1) { // also catches NaN
		return 0, 0, 0, fmt.Errorf("%w: FPR = %v, want 0 < FPR < 1", ErrInvalidConfig, c.FPR)
	}
	nblocks, k, err = table.size(c.Capacity, c.FPR)
	return nblocks, k, seed, err
}

// checkBlocks refuses block counts beyond MaxBlocks, beyond what a slice can
// index on this platform, or beyond this machine's memory.
func checkBlocks(n uint64) error {
	if err := checkBlockLimits(n); err != nil {
		return err
	}
	return checkMemory(n)
}

// checkBlockLimits refuses block counts beyond MaxBlocks or beyond what a
// slice can index on this platform.
func checkBlockLimits(n uint64) error {
	if n > MaxBlocks || n > uint64(math.MaxInt/blockBytes)-1 {
		return fmt.Errorf("%w: %d blocks, at most %d here",
			ErrTooLarge, n, min(MaxBlocks, uint64(math.MaxInt/blockBytes)-1))
	}
	return nil
}

// checkMemory refuses block counts beyond this machine's memory, for a
// filter about to be allocated.
func checkMemory(n uint64) error {
	if mem := sysmem.RAMPlusSwap(); n > mem/blockBytes {
		return fmt.Errorf("%w: %d blocks take %d bytes, the machine has %d (RAM and swap)",
			ErrTooLarge, n, n*blockBytes, mem)
	}
	return nil
}

// Geometry returns the geometry New uses for n keys at false positive rate
// p: the number of 64-byte blocks and the number of partitions k. Of all k
// from 2 to 16 it takes the one that meets p with the fewest blocks, by the
// exact rate of a blocked one-hash filter (see package fpr):
//
//	FPR(λ) = Σ_j Poisson(j; λ) · Π_i (1 − (1 − 1/size_i)^j),  λ = n / blocks
//
// aiming 2% below p, and further below it for small filters, whose realized
// rate strays further from the expected one: it adds blocks until the
// expected rate plus two standard deviations of the realized one is within
// the aim.
func Geometry(n uint64, p float64) (blocks uint64, k int, err error) { return bitTable.size(n, p) }

// partitionTable is one shape of block: how many slots (bits, or counters)
// it has and, for each k up to kmax, the sizes of its partitions.
type partitionTable struct {
	slots, kmax int
	sizes       *[maxK + 1][]uint16
}

var (
	bitTable     = &partitionTable{slots: blockBits, kmax: maxK, sizes: &partitionSizes}
	counterTable = &partitionTable{slots: countersPerBlock, kmax: maxCountingK, sizes: &counterPartitionSizes}
)

// ints returns the partition sizes for k as ints, for package fpr.
func (t *partitionTable) ints(k int) []int {
	s := make([]int, k)
	for i, v := range t.sizes[k] {
		s[i] = int(v)
	}
	return s
}

// size is Geometry for blocks of this table's shape.
func (t *partitionTable) size(n uint64, p float64) (blocks uint64, k int, err error) {
	if n == 0 {
		return 0, 0, fmt.Errorf("%w: n is 0", ErrInvalidConfig)
	}
	if !(p > 0 && p < 1) {
		return 0, 0, fmt.Errorf("%w: p = %v, want 0 < p < 1", ErrInvalidConfig, p)
	}
	aim := p * (1 - sizingMargin)
	k, load := t.bestLoad(aim)
	if load == 0 {
		return 0, 0, fmt.Errorf("%w: p = %v is below what blocks of %d slots can reach", ErrTooLarge, p, t.slots)
	}
	nf := float64(n)
	bf := math.Ceil(nf / load)
	if bf > MaxBlocks {
		return 0, 0, fmt.Errorf("%w: %d keys at p = %v need %.0f blocks, at most %d", ErrTooLarge, n, p, bf, uint64(MaxBlocks))
	}
	// Safe at bf blocks: the expected rate plus two standard deviations of
	// one filter's realized rate is within the aim. Both fall as blocks are
	// added, so the fewest safe blocks can be bisected for.
	sizes := t.ints(k)
	safe := func(bf float64) bool {
		mean, variance := fpr.Moments(sizes, nf/bf)
		return mean+2*math.Sqrt(variance/bf) <= aim
	}
	if !safe(bf) {
		lo, hi := bf, 2*bf
		for !safe(hi) {
			lo, hi = hi, 2*hi
		}
		for hi-lo > 1 {
			mid := math.Floor((lo + hi) / 2)
			if safe(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		bf = hi
	}
	blocks = uint64(bf)
	if err := checkBlockLimits(blocks); err != nil {
		return 0, 0, err
	}
	return blocks, k, nil
}

// loads caches bestLoad by target: it costs a few milliseconds and programs
// ask for the same few rates again and again.
var loads sync.Map // loadKey -> kLoad

type loadKey struct {
	slots int
	aim   float64
}

type kLoad struct {
	k    int
	load float64
}

// bestLoad returns the k that allows the most keys per block at rate aim,
// and that load. Ties go to the smaller k, which probes faster.
func (t *partitionTable) bestLoad(aim float64) (int, float64) {
	key := loadKey{t.slots, aim}
	if v, ok := loads.Load(key); ok {
		kl := v.(kLoad)
		return kl.k, kl.load
	}
	best := kLoad{}
	for k := minK; k <= t.kmax; k++ {
		if load := fpr.MaxLoad(t.ints(k), aim); load > best.load {
			best = kLoad{k, load}
		}
	}
	if n := cachedLoads.Add(1); n <= 1024 { // bound the cache against unbounded distinct rates
		loads.Store(key, best)
	}
	return best.k, best.load
}

var cachedLoads atomic.Int64

// ExpectedFPR returns the false positive rate a filter of the given geometry
// is expected to have once it holds n distinct keys, by the exact model
// Geometry uses.
func ExpectedFPR(n, blocks uint64, k int) float64 {
	if blocks == 0 || k < minK || k > maxK {
		return math.NaN()
	}
	return fpr.Rate(bitTable.ints(k), float64(n)/float64(blocks))
}

// estimateCount inverts the expected number of set slots: n keys leave the
// slots of partition i (nblocks·size_i of them, one hit per key) unset
// with probability exp(−n/(nblocks·size_i)), so
//
//	E[set bits] = Σ_i nblocks·size_i·(1 − exp(−n/(nblocks·size_i)))
//
// which grows with n and is solved for the observed count by bisection.
func (t *partitionTable) estimateCount(set, nblocks uint64, k int) uint64 {
	if set == 0 {
		return 0
	}
	if set >= nblocks*uint64(t.slots) {
		return math.MaxUint64
	}
	sizes := t.sizes[k]
	b := float64(nblocks)
	expected := func(n float64) float64 {
		e := 0.0
		for _, s := range sizes {
			m := b * float64(s)
			e += m * -math.Expm1(-n/m)
		}
		return e
	}
	target := float64(set)
	lo, hi := 0.0, 1.0
	for expected(hi) < target {
		lo, hi = hi, hi*2
	}
	for range 100 {
		mid := (lo + hi) / 2
		if expected(mid) < target {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 0.5 {
			break
		}
	}
	return uint64(math.Round((lo + hi) / 2))
}
