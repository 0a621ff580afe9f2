package ohbloom

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Layout is where a blocked filter puts each key, without the bits: the
// block count, k, the partition sizes and the seed. It lets a program that
// keeps the bits elsewhere (in Redis, on a remote disk) compute which block
// a key lives in and which of its bits it needs, then fetch or update just
// that block. A Filter built from Layout.Config is compatible with it bit for
// bit: its AppendBlocks and OrBlocks move the blocks in the same encoding.
type Layout struct{ l core }

// NewLayout sizes a layout from c exactly as NewWithConfig sizes a filter,
// and allocates nothing: a layout larger than this machine's memory is
// fine, since its bits live elsewhere.
func NewLayout(c Config) (Layout, error) {
	l, err := c.planLayout()
	return Layout{l}, err
}

// Layout returns f's layout.
func (f *Filter) Layout() Layout { return layoutOf(&f.core) }

// Layout returns f's layout.
func (f *AtomicFilter) Layout() Layout { return layoutOf(&f.core) }

func layoutOf(l *core) Layout {
	c := *l
	c.blocks = nil
	return Layout{c}
}

// Blocks returns the number of blocks.
func (g Layout) Blocks() uint64 { return g.l.nblocks }

// K returns the number of bits a key sets, one per partition.
func (g Layout) K() int { return g.l.k }

// Seed returns the hash seed.
func (g Layout) Seed() uint64 { return g.l.seed }

// Capacity returns the number of keys the layout was sized for (0 when it was
// given by Blocks and K).
func (g Layout) Capacity() uint64 { return g.l.capacity }

// TargetFPR returns the false positive rate the layout was sized for.
func (g Layout) TargetFPR() float64 { return g.l.targetFPR }

// Config returns a Config that builds a filter of exactly this layout.
func (g Layout) Config() Config {
	return Config{Blocks: g.l.nblocks, K: g.l.k, Seed: g.l.seed,
		Capacity: g.l.capacity, FPR: g.l.targetFPR}
}

// Equal reports whether two layouts put every key on the same bits.
func (g Layout) Equal(o Layout) bool { return g.l.compatible(&o.l) }

// BlockMask returns the block of the key whose hash is h and the bits it
// owns there, encoded as BlockBytes bytes: the key is present when every bit
// set in mask is set in the block's encoding.
func (g Layout) BlockMask(h uint64) (index uint64, mask [BlockBytes]byte) {
	index, _ = bits.Mul64(h, g.l.nblocks)
	m0, m1, m2, m3, m4, m5, m6, m7 := g.l.mask(residue(h))
	for w, m := range [blockWords]uint64{m0, m1, m2, m3, m4, m5, m6, m7} {
		binary.LittleEndian.PutUint64(mask[w*8:], m)
	}
	return index, mask
}

// ContainsMask reports whether the encoded block holds every bit of mask.
// A block shorter than BlockBytes reads as zeros past its end, as a Redis
// string does.
func ContainsMask(block []byte, mask *[BlockBytes]byte) bool {
	for i, m := range mask {
		var b byte
		if i < len(block) {
			b = block[i]
		}
		if b&m != m {
			return false
		}
	}
	return true
}

// AppendBlocks appends the encoding of blocks [first, first+n) to dst. It
// panics if the range is beyond the filter, as slicing would.
func (f *Filter) AppendBlocks(dst []byte, first, n uint64) []byte {
	return appendBlocks(dst, f.blocks[first:first+n])
}

// AppendBlocks is Filter.AppendBlocks; it may run during Adds, reading each
// word atomically.
func (f *AtomicFilter) AppendBlocks(dst []byte, first, n uint64) []byte {
	return appendBlocks(dst, f.blocks[first:first+n])
}

func appendBlocks(dst []byte, blocks []block) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, len(blocks)*blockBytes)...)
	encodeBlocks(dst[start:], blocks)
	return dst
}

// OrBlocks ORs encoded blocks into the filter from block first on: the keys
// they hold are added, and no key is lost. Into an empty filter it copies
// them. Data that is not whole blocks or that reaches past the last block
// is refused with ErrBlockRange, and nothing is changed.
func (f *Filter) OrBlocks(first uint64, data []byte) error {
	blocks, err := f.blockRange(first, data)
	for i := range blocks {
		for w := range blockWords {
			blocks[i][w] |= binary.LittleEndian.Uint64(data[i*blockBytes+w*8:])
		}
	}
	return err
}

// OrBlocks is Filter.OrBlocks, with atomic ORs, so that it may run while
// other goroutines use f.
func (f *AtomicFilter) OrBlocks(first uint64, data []byte) error {
	blocks, err := f.blockRange(first, data)
	for i := range blocks {
		for w := range blockWords {
			orMissing(&blocks[i][w], binary.LittleEndian.Uint64(data[i*blockBytes+w*8:]))
		}
	}
	return err
}

func (l *core) blockRange(first uint64, data []byte) ([]block, error) {
	n := uint64(len(data) / blockBytes)
	if len(data)%blockBytes != 0 || first > l.nblocks || n > l.nblocks-first {
		return nil, fmt.Errorf("%w: %d bytes at block %d of %d", ErrBlockRange, len(data), first, l.nblocks)
	}
	return l.blocks[first : first+n], nil
}
