package redisbloom

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/ohbloom/ohbloom/internal/redisbloomtest"
)

// reserveConfig is the reservation a dump was made with, or BF.ADD's
// defaults.
func reserveConfig(t testing.TB, g *redisbloomtest.Dump) Config {
	c := Config{Capacity: DefaultCapacity, ErrorRate: DefaultErrorRate, Expansion: DefaultExpansion}
	if g.Reserve == nil {
		return c
	}
	var err error
	if c.ErrorRate, err = strconv.ParseFloat(g.Reserve[0], 64); err != nil {
		t.Fatal(err)
	}
	if c.Capacity, err = strconv.ParseUint(g.Reserve[1], 10, 64); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < len(g.Reserve); i++ {
		switch g.Reserve[i] {
		case "NONSCALING":
			c.NonScaling = true
		case "EXPANSION":
			i++
			e, err := strconv.ParseUint(g.Reserve[i], 10, 32)
			if err != nil {
				t.Fatal(err)
			}
			c.Expansion = uint32(e)
		default:
			t.Fatalf("reserve option %q", g.Reserve[i])
		}
	}
	return c
}

// bfChainUnderTest is what both variants share.
type bfChainUnderTest interface {
	Add([]byte) (bool, error)
	Test([]byte) bool
	Info() Info
	ScanDump(int64, []byte) (int64, []byte)
	LoadChunk(int64, []byte) error
}

var bfVariants = []struct {
	name       string
	fromHeader func([]byte) (bfChainUnderTest, error)
	fromConfig func(Config) (bfChainUnderTest, error)
}{
	{"plain",
		func(h []byte) (bfChainUnderTest, error) { return NewFromHeader(h, 0) },
		func(c Config) (bfChainUnderTest, error) { return New(c) }},
	{"atomic",
		func(h []byte) (bfChainUnderTest, error) { return NewAtomicFromHeader(h, 0) },
		func(c Config) (bfChainUnderTest, error) { return NewAtomic(c) }},
}

// checkBFState checks a chain against a recorded state: its BF.INFO, its
// dump chunk by chunk, and its answers: 1 for every added item and, for
// the 20,000 absent probes, 1 for exactly the ones RedisBloom said 1 to.
func checkBFState(t *testing.T, f bfChainUnderTest, want *redisbloomtest.State, added, probes [][]byte) {
	t.Helper()
	in := f.Info()
	got := redisbloomtest.Info{Capacity: in.Capacity, Size: in.Size, Filters: in.Filters, Items: in.Items}
	if !in.NonScaling {
		got.Expansion = &in.Expansion
	}
	if fmt.Sprint(got.Capacity, got.Size, got.Filters, got.Items, deref(got.Expansion)) !=
		fmt.Sprint(want.Info.Capacity, want.Info.Size, want.Info.Filters, want.Info.Items, deref(want.Info.Expansion)) {
		t.Errorf("BF.INFO: got %+v expansion %s, RedisBloom %+v expansion %s", got, deref(got.Expansion), want.Info, deref(want.Info.Expansion))
	}
	iter := int64(0)
	for i, c := range want.Chunks {
		next, data := f.ScanDump(iter, nil)
		if next != c.Iterator || !bytes.Equal(data, c.Data) {
			t.Fatalf("SCANDUMP %d (iterator %d): got iterator %d and %d bytes, RedisBloom %d and %d bytes (equal: %v)",
				i, iter, next, len(data), c.Iterator, len(c.Data), bytes.Equal(data, c.Data))
		}
		iter = next
	}
	if next, data := f.ScanDump(iter, nil); next != 0 || len(data) != 0 {
		t.Fatalf("SCANDUMP %d after the last chunk: iterator %d and %d bytes, want 0 and none", iter, next, len(data))
	}
	for i, item := range added {
		if !f.Test(item) {
			t.Fatalf("added item %d (%q) tests absent", i, item)
		}
	}
	var positives []int
	for i, p := range probes {
		if f.Test(p) {
			positives = append(positives, i)
		}
	}
	if !slices.Equal(positives, want.Positives) {
		t.Errorf("false positives: %d of them, RedisBloom %d; first differences: %v", len(positives), len(want.Positives), firstDiff(positives, want.Positives))
	}
}

func deref(p *uint32) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatUint(uint64(*p), 10)
}

func firstDiff(a, b []int) []int {
	var d []int
	for _, x := range a {
		if !slices.Contains(b, x) {
			d = append(d, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			d = append(d, -x)
		}
	}
	return d[:min(len(d), 10)]
}

// TestRedisBloomGolden replays every dump RedisBloom made: load it chunk
// by chunk, answer its probes, report its BF.INFO, dump it back, then add
// what RedisBloom added and reach its state byte for byte. A chain built
// from the same reservation and items must reach the same state too, which
// checks the sizing of the first filter.
func TestRedisBloomGolden(t *testing.T) {
	for _, g := range redisbloomtest.Load(t, "..") {
		for _, v := range bfVariants {
			t.Run(g.Name+"/"+v.name, func(t *testing.T) {
				items, probes := g.Added(t), redisbloomtest.Range(t, g.AbsentProbes)
				more := redisbloomtest.Range(t, g.AfterMore.MoreItems)
				f, err := v.fromHeader(g.Chunks[0].Data)
				if err != nil {
					t.Fatalf("header: %v", err)
				}
				if g.Chunks[0].Iterator != 1 {
					t.Fatalf("the first chunk has iterator %d", g.Chunks[0].Iterator)
				}
				for _, c := range g.Chunks[1:] {
					if err := f.LoadChunk(c.Iterator, c.Data); err != nil {
						t.Fatalf("LOADCHUNK %d: %v", c.Iterator, err)
					}
				}
				checkBFState(t, f, &g.State, items, probes)

				fresh, err := v.fromConfig(reserveConfig(t, g))
				if err != nil {
					t.Fatal(err)
				}
				for _, item := range items {
					if _, err := fresh.Add(item); err != nil && !errors.Is(err, ErrFull) {
						t.Fatal(err)
					}
				}
				checkBFState(t, fresh, &g.State, items, probes)

				full := 0
				for _, item := range more {
					if _, err := f.Add(item); errors.Is(err, ErrFull) {
						full++
					} else if err != nil {
						t.Fatal(err)
					}
				}
				if full > 0 {
					t.Logf("%d items refused: non scaling filter is full", full)
				}
				added := items
				if full == 0 {
					added = append(slices.Clone(items), more...)
				}
				checkBFState(t, f, &g.AfterMore.State, added, probes)
			})
		}
	}
}
