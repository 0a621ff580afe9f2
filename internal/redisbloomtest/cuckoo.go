package redisbloomtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Cuckoo is one file of cuckoo filters the real RedisBloom module made: a
// script of CF commands, every reply and the filter's state after it, then
// a second script and the state after that (shared/testdata/redisbloom/
// README.md says how they were made).
type Cuckoo struct {
	Name    string   `json:"name"`
	Reserve []string `json:"reserve"` // CF.RESERVE's arguments after the key; nil for CF.ADD's defaults
	CuckooRun
	AfterMore CuckooRun `json:"after_more"`
}

// CuckooRun is a script, RedisBloom's replies to it and the state after.
type CuckooRun struct {
	Script []CuckooStep `json:"script"`
	// Replies are integers (int) or an error as "ERR:" and its message
	// without a leading "ERR ".
	Replies     []any             `json:"replies"`
	Chunks      []Chunk           `json:"chunks"` // CF.SCANDUMP, header first
	Info        map[string]uint64 `json:"info"`   // CF.INFO
	Positives   []int             `json:"absent_probes_positive"`
	Counts      []uint64          `json:"counts_first_300_items"`
	DumpPayload []byte            `json:"dump_payload"` // DUMP of the key
}

// CuckooStep is one command of a script, sent once per item, Repeat times
// (0 is once).
type CuckooStep struct {
	Command string `json:"command"`
	Items   string `json:"items"` // as Cuckoo.Items reads them
	Repeat  int    `json:"repeat"`
}

// CuckooDirs returns where the cuckoo filter files may be, for a test whose
// package directory is root joined with its path in the repository: the
// shared directory beside the project's clone, or beside the folder of a
// git worktree.
func CuckooDirs(root string) []string {
	return []string{
		filepath.Join(root, "..", "shared", "testdata", "redisbloom", "cf"),
		filepath.Join(root, "..", "..", "shared", "testdata", "redisbloom", "cf"),
	}
}

// CuckooPaths returns the files of the first of CuckooDirs(root) that has
// any, or nil.
func CuckooPaths(root string) []string {
	for _, dir := range CuckooDirs(root) {
		if paths, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(paths) > 0 {
			return paths
		}
	}
	return nil
}

// LoadCuckoo reads every file of CuckooPaths(root); with none it fails: a
// test never passes by having nothing to check.
func LoadCuckoo(t testing.TB, root string) []*Cuckoo {
	t.Helper()
	paths := CuckooPaths(root)
	if len(paths) == 0 {
		t.Fatalf("no RedisBloom cuckoo filter files in %q", CuckooDirs(root))
	}
	var out []*Cuckoo
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		g := new(Cuckoo)
		if err := json.Unmarshal(b, g); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, run := range []*CuckooRun{&g.CuckooRun, &g.AfterMore} {
			for i, r := range run.Replies {
				if x, ok := r.(float64); ok {
					run.Replies[i] = int(x)
				}
			}
		}
		out = append(out, g)
	}
	return out
}

// CuckooItems expands a script step's description of its items for the
// file called name: "'prefix' + decimal i for i < n", where the prefix
// may hold "<name>".
func CuckooItems(t testing.TB, name, desc string) [][]byte {
	t.Helper()
	return Range(t, strings.ReplaceAll(desc, "<name>", name))
}

// Items is CuckooItems for g.
func (g *Cuckoo) Items(t testing.TB, desc string) [][]byte {
	t.Helper()
	return CuckooItems(t, g.Name, desc)
}

// Prefix is what the file's probes and counted items start with,
// "<seed>:<name>:": the absent probes are Prefix + "absent:" + i, the
// counted items Prefix + "item:" + i.
func (g *Cuckoo) Prefix(t testing.TB) string {
	t.Helper()
	return CuckooPrefix(t, g.Name, g.Script[0].Items)
}

// CuckooPrefix is Cuckoo.Prefix for the file called name whose first
// step's items are firstItems.
func CuckooPrefix(t testing.TB, name, firstItems string) string {
	t.Helper()
	m := rangeRE.FindStringSubmatch(firstItems)
	if m == nil {
		t.Fatalf("%s: first items %q: not a form this test knows", name, firstItems)
	}
	seed, _, ok := strings.Cut(m[1], ":<name>:")
	if !ok {
		t.Fatalf("%s: first items %q do not name the file", name, firstItems)
	}
	return seed + ":" + name + ":"
}
