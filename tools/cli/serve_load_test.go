package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

// build → serve --load → every built key answers 1 from BF.MEXISTS; a
// rebuilt file replaces the key on SIGHUP, without a restart.
func TestServeLoadsWhatBuildWrote(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	keysFile := filepath.Join(dir, "keys.txt")
	os.WriteFile(keysFile, []byte(keyLines("user:", 20_000)), 0o644)
	users := filepath.Join(dir, "users.ohb")
	if _, errOut, code := run(t, "", "build", "-o", users, "--keys", keysFile, "-n", "30000"); code != 0 {
		t.Fatal(errOut)
	}
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	for _, withDir := range []bool{false, true} {
		args := []string{"--load", "users=" + users}
		if withDir {
			args = append(args, "--dir", data)
		}
		cmd, addr, lines := startServe(t, args...)
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		keys := make([]any, 20_000)
		for i := range keys {
			keys[i] = fmt.Sprint("user:", i)
		}
		found, err := rdb.BFMExists(ctx, "users", keys...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range found {
			if !ok {
				t.Fatalf("--dir %v: %s, built into users.ohb, answers 0", withDir, keys[i])
			}
		}
		if !strings.Contains(lines.all.String(), "msg=loaded key=users") {
			t.Errorf("no log line of the load:\n%s", lines.all.String())
		}
		// Room was left with -n: the stream's adds go in.
		if added, err := rdb.BFAdd(ctx, "users", "streamed").Result(); err != nil || !added {
			t.Fatalf("BF.ADD to the loaded key: %v %v", added, err)
		}
		rdb.Close()
		cmd.Process.Signal(syscall.SIGTERM)
		said := lines.rest()
		cmd.Wait()
		if withDir != strings.Contains(said, `msg="saved, bye"`) {
			t.Errorf("--dir %v, and serve says: %s", withDir, said)
		}
	}

	// Restarted on the directory: the key there is kept, with its add.
	cmd, addr, lines := startServe(t, "--load", "users="+users, "--dir", data)
	if !strings.Contains(lines.all.String(), `msg="kept the key the data directory holds`) {
		t.Fatalf("no log line of the key kept:\n%s", lines.all.String())
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if ok, _ := rdb.BFExists(ctx, "users", "streamed").Result(); !ok {
		t.Fatal("the add made before the restart is gone")
	}
	// SIGHUP with the file unchanged keeps the key.
	cmd.Process.Signal(syscall.SIGHUP)
	lines.waitFor("the file is unchanged")
	if ok, _ := rdb.BFExists(ctx, "users", "streamed").Result(); !ok {
		t.Fatal("SIGHUP of an unchanged file replaced the key")
	}
	// A rebuilt file (renamed over the old, as build writes it) replaces
	// the key on SIGHUP.
	os.WriteFile(keysFile, []byte(keyLines("member:", 5_000)), 0o644)
	if _, errOut, code := run(t, "", "build", "-o", users, "--keys", keysFile, "-p", "0.000001"); code != 0 {
		t.Fatal(errOut)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	lines.waitFor(`msg="replaced the key with the file's filter" key=users`)
	for _, c := range []struct {
		key  string
		want bool
	}{{"member:0", true}, {"member:4999", true}, {"user:0", false}, {"streamed", false}} {
		if ok, err := rdb.BFExists(ctx, "users", c.key).Result(); err != nil || ok != c.want {
			t.Errorf("after SIGHUP, %s: %v %v, want %v", c.key, ok, err, c.want)
		}
	}
	// A damaged file leaves the key as it was.
	os.WriteFile(users, []byte("not a filter"), 0o644)
	cmd.Process.Signal(syscall.SIGHUP)
	lines.waitFor(`level=ERROR msg="SIGHUP: the key keeps its filter" key=users`)
	if ok, _ := rdb.BFExists(ctx, "users", "member:1").Result(); !ok {
		t.Fatal("a failed reload changed the key")
	}
}

// serve refuses a --dir that does not exist, naming it, and creates
// nothing; its bad --load flags are refused too.
func TestServeRefuses(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nonexistent", "x")
	_, errOut, code := run(t, "", "serve", "--addr", "127.0.0.1:0", "--dir", missing)
	if code != ExitFailure || strings.Count(errOut, missing) != 1 || !strings.Contains(errOut, "no such file or directory") {
		t.Fatalf("serve --dir %s: exit %d, %q", missing, code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "nonexistent")); !os.IsNotExist(err) {
		t.Fatalf("serve created a directory: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("user:1\nuser:2\n"), 0o644)
	if _, errOut, code := run(t, "", "serve", "--addr", "127.0.0.1:0", "--dir", file); code != ExitFailure || !strings.Contains(errOut, "is not a directory") {
		t.Fatalf("serve --dir FILE: exit %d, %q", code, errOut)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--load", "users"}, ExitUsage, "want NAME=FILE"},
		{[]string{"--load", "=x.ohb"}, ExitUsage, "want NAME=FILE"},
		{[]string{"--load", "a=x.ohb", "--load", "a=y.ohb"}, ExitUsage, `key "a" is loaded twice`},
		{[]string{"--load", "a=" + filepath.Join(dir, "missing.ohb")}, ExitFailure, "missing.ohb: no such file"},
		{[]string{"--load", "a=" + file}, ExitFailure, "not an ohbloom filter"},
	} {
		_, errOut, code := run(t, "", append([]string{"serve", "--addr", "127.0.0.1:0"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("serve %s: exit %d, want %d with %q: %q", strings.Join(c.args, " "), code, c.code, c.want, errOut)
		}
	}
}

// Without --dir, serve logs in the one format and says nothing of saving.
func TestServeWithoutDirSavesNothing(t *testing.T) {
	cmd, _, lines := startServe(t)
	cmd.Process.Signal(syscall.SIGTERM)
	said := lines.rest()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err, said)
	}
	if strings.Contains(said, "saving") || strings.Contains(said, "saved,") || !strings.Contains(said, "nothing is saved") {
		t.Fatalf("serve without --dir said: %s", said)
	}
	if !strings.Contains(said, "no data directory") {
		t.Fatalf("serve without --dir did not say it keeps nothing: %s", said)
	}
}
