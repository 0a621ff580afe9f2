package redisbloomtest

import (
	"fmt"
	"strings"
	"testing"
)

// TestLoad reads the repository's copy and checks what every test relies
// on: items as described, a header chunk first, and BF.INFO read.
func TestLoad(t *testing.T) {
	dumps := Load(t, "../..")
	if len(dumps) < 8 {
		t.Fatalf("%d dumps", len(dumps))
	}
	for _, d := range dumps {
		if got := len(d.Added(t)); got != d.NTextItems+len(d.BinaryItemsHex) {
			t.Errorf("%s: %d items", d.Name, got)
		}
		for _, s := range []*State{&d.State, &d.AfterMore.State} {
			if len(s.Chunks) == 0 || s.Chunks[0].Iterator != 1 || s.Info.Filters == 0 || s.Info.Capacity == 0 {
				t.Errorf("%s: %d chunks, info %+v", d.Name, len(s.Chunks), s.Info)
			}
		}
		if (d.Info.Expansion == nil) != strings.Contains(d.Name, "nonscaling") {
			t.Errorf("%s: expansion %v", d.Name, d.Info.Expansion)
		}
	}
}

func TestRange(t *testing.T) {
	items := Range(t, "'ab:' + decimal i for i < 12")
	if len(items) != 12 || string(items[0]) != "ab:0" || string(items[11]) != "ab:11" {
		t.Fatalf("%q", items)
	}
}

// TestLoadCuckoo checks what the cuckoo tests rely on: both runs with a
// script, as many replies as the script sends, integer replies as int, a
// header chunk first and 300 counts.
func TestLoadCuckoo(t *testing.T) {
	files := LoadCuckoo(t, "../..")
	if len(files) < 8 {
		t.Fatalf("%d files", len(files))
	}
	for _, g := range files {
		if p := g.Prefix(t); !strings.HasSuffix(p, ":"+g.Name+":") {
			t.Errorf("%s: prefix %q", g.Name, p)
		}
		for _, run := range []*CuckooRun{&g.CuckooRun, &g.AfterMore} {
			sent := 0
			for _, step := range run.Script {
				sent += max(step.Repeat, 1) * len(g.Items(t, step.Items))
			}
			if sent != len(run.Replies) || len(run.Counts) != 300 || len(run.DumpPayload) == 0 {
				t.Errorf("%s: %d commands, %d replies, %d counts, %d payload bytes", g.Name, sent, len(run.Replies), len(run.Counts), len(run.DumpPayload))
			}
			if len(run.Chunks) > 0 && run.Chunks[0].Iterator != 1 {
				t.Errorf("%s: first chunk at %d", g.Name, run.Chunks[0].Iterator)
			}
			for i, r := range run.Replies {
				if _, ok := r.(int); !ok && !strings.HasPrefix(fmt.Sprint(r), "ERR:") {
					t.Fatalf("%s: reply %d: %T %v", g.Name, i, r, r)
				}
			}
		}
	}
}

func TestCuckooItems(t *testing.T) {
	items := CuckooItems(t, "f", "'7:<name>:item:' + decimal i for i < 3")
	if len(items) != 3 || string(items[0]) != "7:f:item:0" || string(items[2]) != "7:f:item:2" {
		t.Fatalf("%q", items)
	}
}
