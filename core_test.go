package ohbloom

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zeebo/xxh3"
)

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// TestPartitionTables checks the properties the design relies on and pins
// the tables: a change to any size changes which bits every stored filter
// uses, so it must be deliberate, with a new format version.
func TestPartitionTables(t *testing.T) {
	var all []byte
	for k := minK; k <= maxK; k++ {
		sizes := partitionSizes[k]
		if len(sizes) != k {
			t.Fatalf("k=%d: %d sizes", k, len(sizes))
		}
		if !slices.IsSorted(sizes) {
			t.Errorf("k=%d: sizes not ascending: %v", k, sizes)
		}
		sum := 0
		for i, a := range sizes {
			sum += int(a)
			if a < 2 {
				t.Errorf("k=%d: size %d", k, a)
			}
			for _, b := range sizes[i+1:] {
				if gcd(int(a), int(b)) != 1 {
					t.Errorf("k=%d: sizes %d and %d share a factor", k, a, b)
				}
			}
			all = binary.LittleEndian.AppendUint16(all, a)
		}
		if sum != blockBits {
			t.Errorf("k=%d: sizes sum to %d, want %d", k, sum, blockBits)
		}
		parts := partitionsFor(k)
		if last := parts[k-1]; last.offset+last.size != blockBits {
			t.Errorf("k=%d: partitions end at %d", k, last.offset+last.size)
		}
	}
	const pinned = 0xe0f473449a9c953f
	if got := xxh3.Hash(all); got != pinned {
		t.Errorf("partition tables changed: fingerprint %#x, pinned %#x", got, uint64(pinned))
	}
}

// TestGoldenLayout pins the hash of a key and the bits it sets: the layout
// of every stored filter depends on both.
func TestGoldenLayout(t *testing.T) {
	key := []byte("did:plc:ewvi7nxzyoun6zhxrhs64oiz|did:plc:z72i7hdynmk6r22z27h6tvur")
	const pinnedHash = 0x028074a62d224294
	if h := xxh3.HashSeed(key, DefaultSeed); h != pinnedHash {
		t.Errorf("xxh3 of the golden key = %#x, pinned %#x", h, uint64(pinnedHash))
	}
	f, err := NewWithConfig(Config{Blocks: 1000, K: 6})
	if err != nil {
		t.Fatal(err)
	}
	f.Add(key)
	var setBlocks []int
	var setBits []int
	for i := range f.blocks {
		for bit := range blockBits {
			if f.blocks[i][bit/64]>>(bit%64)&1 == 1 {
				setBlocks = append(setBlocks, i)
				setBits = append(setBits, bit)
			}
		}
	}
	wantBits := []int{63, 151, 190, 279, 393, 476} // checked by hand: offsets + (h mod 2^32) mod sizes
	if !slices.Equal(setBits, wantBits) || slices.Min(setBlocks) != 9 || slices.Max(setBlocks) != 9 {
		t.Errorf("golden key set bits %v in blocks %v, pinned %v in block 9 (hi64(h·1000))", setBits, setBlocks, wantBits)
	}
}

// TestProbesMatchLayout checks the generated probes of every k against the
// reference loop, core.locate, on random hashes.
func TestProbesMatchLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for k := minK; k <= maxK; k++ {
		f, err := NewWithConfig(Config{Blocks: 7, K: k})
		if err != nil {
			t.Fatal(err)
		}
		for range 3000 {
			h := r.Uint64()
			idx, want := f.locate(h)
			x := residue(h)
			var m block
			m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7] = f.mask(x)
			if m != want {
				t.Fatalf("k=%d x=%d: mask %x, locate %x", k, x, m, want)
			}
			var b block
			f.add(&b, x)
			if b != want {
				t.Fatalf("k=%d x=%d: add sets %x, locate %x", k, x, b, want)
			}
			if f.blockOf(h) != &f.blocks[idx] {
				t.Fatalf("k=%d: blockOf and locate disagree", k)
			}
			// test and atomicTest: true on exactly the key's bits, false
			// with any one of them cleared.
			if !f.test(&b, x) || !f.atomicTest(&b, x) {
				t.Fatalf("k=%d x=%d: test misses the key's own bits", k, x)
			}
			bit := r.IntN(k)
			for w := range blockWords {
				for j := range 64 {
					if want[w]>>j&1 == 1 {
						if bit == 0 {
							b[w] &^= 1 << j
						}
						bit--
					}
				}
			}
			if f.test(&b, x) || f.atomicTest(&b, x) {
				t.Fatalf("k=%d x=%d: test passes with a bit missing", k, x)
			}
		}
	}
}
