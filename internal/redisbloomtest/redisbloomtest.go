// Package redisbloomtest reads the dumps the real RedisBloom module made,
// for the tests that hold package redisbloom and the server to them: each
// file is a filter RedisBloom reserved, filled, probed, dumped, then grew
// and dumped again (redisbloom/testdata/README.md says how they were
// made).
package redisbloomtest

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// Dump is one file of dumps.
type Dump struct {
	Name           string   `json:"name"`
	Reserve        []string `json:"reserve"` // BF.RESERVE's arguments after the key; nil for BF.ADD's defaults
	Items          string   `json:"items"`   // the text items added, as Range reads them
	NTextItems     int      `json:"n_text_items"`
	BinaryItemsHex []string `json:"binary_items_hex"` // binary items added after the text ones
	AbsentProbes   string   `json:"absent_probes"`    // items never added, as Range reads them
	State
	// AfterMore is the state after RedisBloom added MoreItems too.
	AfterMore struct {
		MoreItems string `json:"more_items"`
		State
	} `json:"after_more"`
}

// State is what RedisBloom reported of a filter at one point.
type State struct {
	Info      Info    `json:"info"`
	Positives []int   `json:"absent_probes_positive"` // the absent probes it answered 1 for
	Chunks    []Chunk `json:"chunks"`                 // its BF.SCANDUMP, header first
}

// Chunk is one BF.SCANDUMP reply: the next iterator and the data.
type Chunk struct {
	Iterator int64  `json:"iterator"`
	Data     []byte `json:"data"`
}

// Info is BF.INFO; Expansion is nil where RedisBloom sends nil (NONSCALING).
type Info struct {
	Capacity  uint64  `json:"Capacity"`
	Size      uint64  `json:"Size"`
	Filters   uint64  `json:"Number of filters"`
	Items     uint64  `json:"Number of items inserted"`
	Expansion *uint32 `json:"Expansion rate"`
}

// Dirs returns where the dumps are, for a test whose package directory is
// root joined with its path in the repository ("..", "../.."): the shared
// directory beside the clone (../shared/testdata/redisbloom), which every
// developer's and CI's machine has and whose files may be newer, then the
// repository's copy in redisbloom/testdata.
func Dirs(root string) []string {
	return []string{
		filepath.Join(root, "..", "shared", "testdata", "redisbloom"),
		filepath.Join(root, "redisbloom", "testdata"),
	}
}

// Load reads every dump of Dirs(root), once per name, the first directory
// first. A directory with none is logged, so that a run on the copy alone
// is never mistaken for one on both; with no dump at all Load fails: a
// test never passes by having nothing to check.
func Load(t testing.TB, root string) []*Dump {
	t.Helper()
	byName := map[string]string{}
	for _, dir := range Dirs(root) {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		if len(paths) == 0 {
			t.Logf("no RedisBloom dumps in %s", dir)
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
	var out []*Dump
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
		d := new(Dump)
		if err := json.Unmarshal(data, d); err != nil {
			t.Fatalf("%s: %v", byName[name], err)
		}
		out = append(out, d)
	}
	return out
}

var rangeRE = regexp.MustCompile(`^'([^']*)' \+ decimal i for i < (\d+)`)

// Range expands a description "'prefix' + decimal i for i < n".
func Range(t testing.TB, desc string) [][]byte {
	t.Helper()
	m := rangeRE.FindStringSubmatch(desc)
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

// Added returns the items RedisBloom added before its first dump: the
// text items, then the binary ones.
func (d *Dump) Added(t testing.TB) [][]byte {
	t.Helper()
	items := Range(t, d.Items)
	if len(items) != d.NTextItems {
		t.Fatalf("%s: %d text items described, n_text_items %d", d.Name, len(items), d.NTextItems)
	}
	for _, h := range d.BinaryItemsHex {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, b)
	}
	return items
}
