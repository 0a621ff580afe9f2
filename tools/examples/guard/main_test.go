package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGuard(t *testing.T) {
	handler, closeDB, err := newServer(filepath.Join(t.TempDir(), "guard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	srv := httptest.NewServer(handler)
	defer srv.Close()
	ask := func(subject, object string) answer {
		resp, err := http.Get(srv.URL + "/blocks?subject=" + subject + "&object=" + object)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a answer
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a := ask("did:plc:alice", "did:plc:bob"); !a.Blocked || a.Source != "database" {
		t.Errorf("a stored block: %+v", a)
	}
	// Absent pairs are answered by the filter; the odd false positive by
	// the database, and never as blocked.
	fromFilter := 0
	for _, o := range []string{"x", "y", "z", "w", "v", "u", "t", "s"} {
		a := ask("did:plc:bob", "did:plc:"+o)
		if a.Blocked {
			t.Errorf("bob blocks %s?", o)
		}
		if a.Source == "filter" {
			fromFilter++
		}
	}
	if fromFilter < 6 {
		t.Errorf("only %d of 8 absent pairs answered by the filter", fromFilter)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`ohbloom_tests_total{filter="blocks"}`, `ohbloom_positive_ratio{filter="blocks"}`, `ohbloom_memory_bytes{filter="blocks"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if resp, _ := http.Get(srv.URL + "/blocks?subject=only"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a lookup without object: %d", resp.StatusCode)
	}
}

// Run without -db writes nothing where it runs and leaves no temporary
// database behind (here it stops at once: the address cannot be listened
// on).
func TestRunLeavesNothingBehind(t *testing.T) {
	cwd, tmp := t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	t.Setenv("TMPDIR", tmp)
	if err := run("127.0.0.1:-1", ""); err == nil {
		t.Fatal("run listened on port -1")
	}
	for _, dir := range []string{cwd, tmp} {
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s holds %v after run", dir, ents)
		}
	}
}
