package rdb

// The one file that knows the root library: it loads the Bloom chains of
// the golden RDB file into redisbloom.Filter through their SCANDUMP
// chunks and asks them what RedisBloom was asked. If the library's
// RedisBloom types move (to package redisbloom), only this file changes.

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/ohbloom/ohbloom/redisbloom"
)

// TestGoldenBloomAnswers: every Bloom chain of dump.rdb, decoded and turned
// into chunks, loads into the library's RedisBloom filter, which then
// holds every item RedisBloom added and gives exactly RedisBloom's false
// positives among the absent probes.
func TestGoldenBloomAnswers(t *testing.T) {
	js, err := os.ReadFile("testdata/dump.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Filters []struct {
			Key       string `json:"key"`
			Type      string `json:"type"`
			Items     string `json:"items"`
			Absent    string `json:"absent_probes"`
			Positives []int  `json:"absent_probes_positive"`
		} `json:"filters"`
	}
	if err := json.Unmarshal(js, &g); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/dump.rdb")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := NewReader(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string][]byte{}
	for _, e := range readAll(t, r) {
		values[string(e.Key)] = e.Value
	}
	// "'pub:bf:plain:item:' + decimal i for i < 8000"
	desc := regexp.MustCompile(`^'([^']*)' \+ decimal i for i < (\d+)$`)
	checked := 0
	for _, gf := range g.Filters {
		if gf.Type != BloomTypeName {
			continue
		}
		b, err := DecodeBloom(values[gf.Key])
		if err != nil {
			t.Fatalf("%s: %v", gf.Key, err)
		}
		chunks, err := b.ScanDump()
		if err != nil {
			t.Fatal(err)
		}
		lib, err := redisbloom.NewFromHeader(chunks[0].Data, 0)
		if err != nil {
			t.Fatalf("%s: the library refuses the header: %v", gf.Key, err)
		}
		for _, c := range chunks[1:] {
			if err := lib.LoadChunk(c.Iter, c.Data); err != nil {
				t.Fatalf("%s: chunk %d: %v", gf.Key, c.Iter, err)
			}
		}
		items, absent := desc.FindStringSubmatch(gf.Items), desc.FindStringSubmatch(gf.Absent)
		if items == nil || absent == nil {
			t.Fatalf("%s: cannot read %q / %q", gf.Key, gf.Items, gf.Absent)
		}
		n, _ := strconv.Atoi(items[2])
		for i := range n {
			if !lib.TestString(items[1] + strconv.Itoa(i)) {
				t.Fatalf("%s: item %d absent", gf.Key, i)
			}
		}
		m, _ := strconv.Atoi(absent[2])
		var positives []int
		for i := range m {
			if lib.TestString(absent[1] + strconv.Itoa(i)) {
				positives = append(positives, i)
			}
		}
		if !slices.Equal(positives, gf.Positives) {
			t.Errorf("%s: false positives %v, RedisBloom's %v", gf.Key, positives, gf.Positives)
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("checked %d Bloom chains", checked)
	}
}
