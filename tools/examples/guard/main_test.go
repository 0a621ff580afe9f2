package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
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
