package redisbloomtest

import (
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
