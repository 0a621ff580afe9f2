package redisbloom

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// bfGolden is one file of testdata: a filter the real RedisBloom
// module made, dumped, probed, grown and dumped again (see its README).
type bfGolden struct {
	Name           string   `json:"name"`
	Reserve        []string `json:"reserve"`
	Items          string   `json:"items"`
	NTextItems     int      `json:"n_text_items"`
	BinaryItemsHex []string `json:"binary_items_hex"`
	AbsentProbes   string   `json:"absent_probes"`
	bfGoldenState
	AfterMore struct {
		MoreItems string `json:"more_items"`
		bfGoldenState
	} `json:"after_more"`
}

type bfGoldenState struct {
	Info      bfGoldenInfo `json:"info"`
	Positives []int        `json:"absent_probes_positive"`
	Chunks    []struct {
		Iterator int64  `json:"iterator"`
		Data     []byte `json:"data"`
	} `json:"chunks"`
}

type bfGoldenInfo struct {
	Capacity  uint64  `json:"Capacity"`
	Size      uint64  `json:"Size"`
	Filters   uint64  `json:"Number of filters"`
	Items     uint64  `json:"Number of items inserted"`
	Expansion *uint32 `json:"Expansion rate"`
}

// sharedRedisBloomDir is where every developer's and CI's machine keeps the
// dumps beside the project; testdata holds a copy, so that the
// test has data anywhere.
const sharedRedisBloomDir = "../../shared/testdata/redisbloom"

// loadBFGolden reads every dump of both directories, once per name, the
// shared one first: its files may be newer than the copy. With no dump at
// all it fails: the test never passes by having nothing to check.
func loadBFGolden(t testing.TB) []*bfGolden {
	t.Helper()
	byName := map[string]string{}
	for _, dir := range []string{sharedRedisBloomDir, "testdata"} {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		if len(paths) == 0 && dir == sharedRedisBloomDir {
			// Not fatal even in CI: the committed copy is the same data,
			// and a fresh clone may sit anywhere. But said, so that a run
			// on the copy alone is never mistaken for one on both.
			t.Logf("no %s beside this clone: testing the copy in testdata only", dir)
		}
		for _, p := range paths {
			if _, seen := byName[filepath.Base(p)]; !seen {
				byName[filepath.Base(p)] = p
			}
		}
	}
	if len(byName) == 0 {
		t.Fatal("no RedisBloom dumps at all")
	}
	var out []*bfGolden
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range byName {
			if !yield(n) {
				return
			}
		}
	}) {
		data, err := os.ReadFile(byName[name])
		if err != nil {
			t.Fatal(err)
		}
		g := new(bfGolden)
		if err := json.Unmarshal(data, g); err != nil {
			t.Fatalf("%s: %v", byName[name], err)
		}
		out = append(out, g)
	}
	return out
}

var bfRangeRE = regexp.MustCompile(`^'([^']*)' \+ decimal i for i < (\d+)`)

// bfRange expands a description "'prefix' + decimal i for i < n".
func bfRange(t testing.TB, desc string) [][]byte {
	t.Helper()
	m := bfRangeRE.FindStringSubmatch(desc)
	if m == nil {
		t.Fatalf("cannot read the items from %q", desc)
	}
	n, _ := strconv.Atoi(m[2])
	items := make([][]byte, n)
	for i := range items {
		items[i] = strconv.AppendInt([]byte(m[1]), int64(i), 10)
	}
	return items
}

func (g *bfGolden) items(t testing.TB) [][]byte {
	items := bfRange(t, g.Items)
	if len(items) != g.NTextItems {
		t.Fatalf("%s: %d text items described, n_text_items %d", g.Name, len(items), g.NTextItems)
	}
	for _, h := range g.BinaryItemsHex {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, b)
	}
	return items
}

// config is the reservation the file was made with, or BF.ADD's defaults.
func (g *bfGolden) config(t testing.TB) Config {
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
func checkBFState(t *testing.T, f bfChainUnderTest, want *bfGoldenState, added, probes [][]byte) {
	t.Helper()
	in := f.Info()
	got := bfGoldenInfo{Capacity: in.Capacity, Size: in.Size, Filters: in.Filters, Items: in.Items}
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
	for _, g := range loadBFGolden(t) {
		for _, v := range bfVariants {
			t.Run(g.Name+"/"+v.name, func(t *testing.T) {
				items, probes := g.items(t), bfRange(t, g.AbsentProbes)
				more := bfRange(t, g.AfterMore.MoreItems)
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
				checkBFState(t, f, &g.bfGoldenState, items, probes)

				fresh, err := v.fromConfig(g.config(t))
				if err != nil {
					t.Fatal(err)
				}
				for _, item := range items {
					if _, err := fresh.Add(item); err != nil && !errors.Is(err, ErrFull) {
						t.Fatal(err)
					}
				}
				checkBFState(t, fresh, &g.bfGoldenState, items, probes)

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
				checkBFState(t, f, &g.AfterMore.bfGoldenState, added, probes)
			})
		}
	}
}
