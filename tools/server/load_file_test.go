package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ohbloom/ohbloom"
	"github.com/redis/go-redis/v9"
)

// A Filter file served as a BF key answers as the filter does, over the
// protocol, and survives a crash right after the load and a restart: the
// log carries it, and the next save writes it.
func TestLoadFileServesAFilter(t *testing.T) {
	ctx := context.Background()
	files := t.TempDir()
	f, err := ohbloom.NewWithConfig(ohbloom.Config{Capacity: 2000, FPR: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	keys := numbered("user:", 1000)
	for _, k := range keys {
		f.AddString(k.(string))
	}
	path := filepath.Join(files, "users.ohb")
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, rdb := startOn(t, dir, Config{})
	got, err := s.LoadFile("users", path, false)
	if err != nil || !got.Loaded || got.Replaced || got.Type != "BF" || got.Filter != "Filter" || got.Bytes != f.SizeBytes() {
		t.Fatalf("LoadFile: %+v %v", got, err)
	}
	crashed := crashCopy(t, dir) // as a kill -9 now would leave it

	found, err := rdb.BFMExists(ctx, "users", keys...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range found {
		if !ok {
			t.Fatalf("%s: absent from the loaded key", keys[i])
		}
	}
	if typ, _ := rdb.Type(ctx, "users").Result(); typ != "MBbloom--" {
		t.Fatalf("TYPE %q", typ)
	}
	// Not scaling: it takes adds up to its capacity, counting from the
	// filter's estimate of its keys.
	card, _ := rdb.BFCard(ctx, "users").Result()
	if card < 950 || card > 1050 {
		t.Fatalf("BF.CARD %d, want about 1000", card)
	}
	if added, err := rdb.BFAdd(ctx, "users", "new-user").Result(); err != nil || !added {
		t.Fatalf("BF.ADD below capacity: %v %v", added, err)
	}
	// BF.INFO's expansion rate is nil, as for NONSCALING keys.
	if c, err := rdb.BFInfoCapacity(ctx, "users").Result(); err != nil || c.Capacity != 2000 {
		t.Fatalf("BF.INFO CAPACITY %+v %v", c, err)
	}
	if x, err := rdb.Do(ctx, "BF.INFO", "users", "EXPANSION").Result(); err != nil || fmt.Sprint(x) != "map[Expansion rate:<nil>]" {
		t.Fatalf("BF.INFO EXPANSION %v %v", x, err)
	}

	for _, d := range []string{crashed, dir} {
		if d == dir {
			s.Shutdown(ctx)
		}
		_, again := startOn(t, d, Config{})
		found, err := again.BFMExists(ctx, "users", keys...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range found {
			if !ok {
				t.Fatalf("after a restart on %s: %s absent", d, keys[i])
			}
		}
	}
}

// An existing key is kept unless replace says otherwise; replaced, it
// holds the new file's filter, even of another type, and that too is
// what a restart finds.
func TestLoadFileReplaces(t *testing.T) {
	ctx := context.Background()
	files := t.TempDir()
	save := func(name string, keys []any) string {
		f, _ := ohbloom.NewWithConfig(ohbloom.Config{Capacity: 1000, FPR: 1e-6})
		for _, k := range keys {
			f.AddString(k.(string))
		}
		path := filepath.Join(files, name)
		if err := f.Save(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	oldKeys, newKeys := numbered("old:", 200), numbered("new:", 200)
	oldFile, newFile := save("old.ohb", oldKeys), save("new.ohb", newKeys)
	dir := t.TempDir()
	s, rdb := startOn(t, dir, Config{})
	if _, err := s.LoadFile("k", oldFile, false); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LoadFile("k", newFile, false); err != nil || got.Loaded {
		t.Fatalf("LoadFile without replace on an existing key: %+v %v", got, err)
	}
	if ok, _ := rdb.BFExists(ctx, "k", oldKeys[0]).Result(); !ok { // still the old
		t.Fatal("the kept key lost its keys")
	}
	if got, err := s.LoadFile("k", newFile, true); err != nil || !got.Loaded || !got.Replaced {
		t.Fatalf("LoadFile with replace: %+v %v", got, err)
	}
	wantOnly := func(rdb *redis.Client, what string) {
		t.Helper()
		inNew, err := rdb.BFMExists(ctx, "k", newKeys...).Result()
		if err != nil {
			t.Fatal(err)
		}
		inOld, _ := rdb.BFMExists(ctx, "k", oldKeys...).Result()
		for i := range newKeys {
			if !inNew[i] || inOld[i] { // p = 10^-6: no false positive among 200
				t.Fatalf("%s: %s present %v, %s present %v", what, newKeys[i], inNew[i], oldKeys[i], inOld[i])
			}
		}
	}
	wantOnly(rdb, "after the replace")
	_, again := startOn(t, crashCopy(t, dir), Config{})
	wantOnly(again, "after a crash")

	// A counting filter's file replaces a BF key with a CF key.
	c, _ := ohbloom.NewCountingWithConfig(ohbloom.Config{Capacity: 1000, FPR: 0.01})
	c.AddString("counted")
	cf := filepath.Join(files, "counting.ohb")
	if err := ohbloom.SaveFile(cf, c); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LoadFile("k", cf, true); err != nil || got.Type != "CF" || got.Filter != "CountingFilter" {
		t.Fatalf("LoadFile of a counting filter: %+v %v", got, err)
	}
	if ok, err := rdb.CFExists(ctx, "k", "counted").Result(); err != nil || !ok {
		t.Fatalf("CF.EXISTS after loading a counting filter: %v %v", ok, err)
	}
	if typ, _ := rdb.Type(ctx, "k").Result(); typ != "MBbloomCF" {
		t.Fatalf("TYPE %q", typ)
	}
	if ok, err := rdb.CFDel(ctx, "k", "counted").Result(); err != nil || !ok {
		t.Fatalf("CF.DEL: %v %v", ok, err)
	}
}

// A scalable filter's file is a BF key that grows.
func TestLoadFileScalable(t *testing.T) {
	ctx := context.Background()
	sf := ohbloom.NewScalable(100, 0.01)
	for _, k := range numbered("s", 500) {
		sf.AddString(k.(string))
	}
	path := filepath.Join(t.TempDir(), "scalable.ohb")
	if err := ohbloom.SaveFile(path, sf); err != nil {
		t.Fatal(err)
	}
	s, addr := start(t, Config{})
	rdb := client(t, addr)
	if got, err := s.LoadFile("grows", path, false); err != nil || got.Filter != "ScalableFilter" || got.Type != "BF" {
		t.Fatalf("%+v %v", got, err)
	}
	info, err := rdb.BFInfo(ctx, "grows").Result()
	if err != nil || info.ItemsInserted != int64(sf.Count()) || info.ExpansionRate == 0 || info.Filters != int64(sf.Stages()) {
		t.Fatalf("BF.INFO %+v %v", info, err)
	}
	found, _ := rdb.BFMExists(ctx, "grows", numbered("s", 500)...).Result()
	for i, ok := range found {
		if !ok {
			t.Fatalf("key %d absent", i)
		}
	}
}

// Bad files are refused, naming the file, and change nothing.
func TestLoadFileRefusesBadFiles(t *testing.T) {
	files := t.TempDir()
	f := ohbloom.New(1000, 0.01)
	good := filepath.Join(files, "good.ohb")
	f.Save(good)
	data, _ := os.ReadFile(good)
	write := func(name string, b []byte) string {
		p := filepath.Join(files, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	damaged := append([]byte(nil), data...)
	damaged[200] ^= 1
	fifo := filepath.Join(files, "fifo")
	if err := mkfifo(fifo); err != nil {
		os.Mkdir(fifo, 0o755) // not a regular file either, where there are no FIFOs
	}
	big := ohbloom.New(1_000_000, 0.01)
	bigFile := filepath.Join(files, "big.ohb")
	big.Save(bigFile)
	s, addr := start(t, Config{MaxFilterBytes: 1 << 20})
	rdb := client(t, addr)
	for _, c := range []struct{ path, want string }{
		{filepath.Join(files, "missing.ohb"), "no such file"},
		{write("garbage.ohb", []byte("keys, not a filter\n")), "not an ohbloom filter"},
		{write("damaged.ohb", damaged), "checksum mismatch"},
		{write("long.ohb", append(append([]byte(nil), data...), 0)), "bytes after the filter"},
		{write("short.ohb", data[:len(data)-1]), "truncated"},
		{fifo, "not a regular file"},
		{bigFile, "max-filter-bytes"},
	} {
		_, err := s.LoadFile("k", c.path, true)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), c.path) != 1 || strings.Contains(err.Error(), "ohbloom: ") {
			t.Errorf("LoadFile(%s): %v, want an error naming it once with %q", c.path, err, c.want)
		}
	}
	if n, _ := rdb.DBSize(context.Background()).Result(); n != 0 {
		t.Fatalf("%d keys after refused loads", n)
	}
	if _, err := s.LoadFile(strings.Repeat("k", maxKeyBytes+1), good, false); err == nil {
		t.Error("a key longer than the limit was loaded")
	}
}

// Replacing a key while clients use it: every answer comes from one
// filter or the other, both of which hold the key asked for (the race
// detector watches the rest).
func TestLoadFileReplaceUnderLoad(t *testing.T) {
	ctx := context.Background()
	files := t.TempDir()
	paths := make([]string, 2)
	for i := range paths {
		f := ohbloom.New(1000, 0.01)
		f.AddString("always")
		f.AddString(fmt.Sprint("only-", i))
		paths[i] = filepath.Join(files, fmt.Sprint(i, ".ohb"))
		if err := f.Save(paths[i]); err != nil {
			t.Fatal(err)
		}
	}
	s, rdb := startOn(t, t.TempDir(), Config{})
	if _, err := s.LoadFile("k", paths[0], false); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if ok, err := rdb.BFExists(ctx, "k", "always").Result(); err != nil || !ok {
				errs <- fmt.Errorf("BF.EXISTS during replaces: %v %v", ok, err)
				return
			}
			rdb.BFAdd(ctx, "k", "added")
		}
	}()
	for i := range 20 {
		if _, err := s.LoadFile("k", paths[i%2], true); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}
