package server

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// startUnix runs a server on a Unix socket in a temporary directory.
func startUnix(t *testing.T, c Config) (*Server, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ohbloom.sock")
	c.UnixSocket = path
	s, _ := start(t, c)
	ln, err := ListenUnix(path, c.UnixSocketPerm)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	waitFor(t, "Serve of the socket to start", func() bool { return s.unixPath.Load() == path })
	return s, path
}

func TestUnixSocket(t *testing.T) {
	s, path := startUnix(t, Config{UnixSocketPerm: 0o700})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the socket file: %v", fi.Mode())
	}
	ctx := context.Background()
	rdb := client(t, path, func(o *redis.Options) { o.Network = "unix" })
	if err := rdb.BFAdd(ctx, "blocks", "a").Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := rdb.BFExists(ctx, "blocks", "a").Result(); err != nil || !ok {
		t.Fatalf("BF.EXISTS over the socket: %v %v", ok, err)
	}
	got, err := rdb.ConfigGet(ctx, "unixsocket*").Result()
	if err != nil || got["unixsocket"] != path || got["unixsocketperm"] != "700" {
		t.Fatalf("CONFIG GET unixsocket*: %v %v", got, err)
	}
	// A second server on the same path is refused: one listens there.
	if _, err := ListenUnix(path, 0); err == nil || !strings.Contains(err.Error(), "a server is listening on it") {
		t.Fatalf("a second ListenUnix on a live socket: %v", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the socket file after Shutdown: %v", err)
	}
}

func TestUnixSocketStaleAndForeignFiles(t *testing.T) {
	dir := t.TempDir()
	// A socket file nobody listens on, as a crash leaves it.
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(stale); err != nil {
		t.Fatalf("the stale socket file is not there to test with: %v", err)
	}
	ln, err = ListenUnix(stale, 0)
	if err != nil {
		t.Fatalf("a stale socket file was not replaced: %v", err)
	}
	ln.Close()

	// A file that is not a socket is never removed.
	regular := filepath.Join(dir, "data")
	os.WriteFile(regular, []byte("precious"), 0o600)
	if _, err := ListenUnix(regular, 0); err == nil || !strings.Contains(err.Error(), "not a socket is there; not removing it") {
		t.Fatalf("ListenUnix over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(regular); string(b) != "precious" {
		t.Fatalf("the regular file became %q", b)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(regular, link)
	if _, err := ListenUnix(link, 0); err == nil {
		t.Fatal("ListenUnix replaced a symbolic link")
	}
	if _, err := ListenUnix(filepath.Join(dir, "x.sock"), 0o1777); err == nil {
		t.Fatal("a permission with the sticky bit was taken")
	}
}

func TestListenAndServe(t *testing.T) {
	p := newTestPKI(t)
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	path := filepath.Join(t.TempDir(), "s.sock")
	tc := p.serverTLS()
	tc.AuthClients = "no"
	s, err := New(Config{Addr: free(), TLSAddr: free(), TLS: tc, UnixSocket: path})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe() }()
	waitFor(t, "three listeners", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.listeners) == 3
	})
	ctx := context.Background()
	for _, o := range []*redis.Options{
		{Addr: s.cfg.Addr},
		{Addr: s.cfg.TLSAddr, TLSConfig: p.clientTLS(false)},
		{Network: "unix", Addr: path},
	} {
		rdb := redis.NewClient(o)
		if err := rdb.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING at %s: %v", o.Addr, err)
		}
		rdb.Close()
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the socket file after Shutdown: %v", err)
	}
}

func TestRedisCLITLS(t *testing.T) {
	cli := redisCLI(t)
	if exec.Command(cli, "--help").Run(); !strings.Contains(func() string { b, _ := exec.Command(cli, "--help").CombinedOutput(); return string(b) }(), "--tls") {
		t.Skip("this redis-cli is built without TLS")
	}
	p := newTestPKI(t)
	_, _, tlsAddr := startTLS(t, p, Config{})
	_, port, _ := net.SplitHostPort(tlsAddr)
	run := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(cli, append([]string{"-h", "127.0.0.1", "-p", port, "--tls", "--cacert", p.caFile}, args...)...)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	cert := []string{"--cert", p.clientCert, "--key", p.clientKe}
	if got, err := run(append(cert, "PING")...); err != nil || got != "PONG" {
		t.Fatalf("redis-cli --tls PING: %q %v", got, err)
	}
	if got, err := run(append(cert, "BF.ADD", "blocks", "a")...); err != nil || got != "1" {
		t.Fatalf("redis-cli --tls BF.ADD: %q %v", got, err)
	}
	// Without a client certificate, under tls-auth-clients yes.
	if got, _ := run("PING"); got == "PONG" {
		t.Fatal("redis-cli without a certificate was served")
	} else {
		t.Logf("redis-cli without a certificate: %q", got)
	}
	// Plaintext on the TLS port: told so.
	out, _ := exec.Command(cli, "-h", "127.0.0.1", "-p", port, "PING").CombinedOutput()
	if !strings.Contains(string(out), "plaintext on a TLS port") {
		t.Fatalf("plaintext redis-cli on the TLS port: %q", out)
	}
}

func TestRedisCLIUnixSocket(t *testing.T) {
	cli := redisCLI(t)
	_, path := startUnix(t, Config{})
	out, err := exec.Command(cli, "-s", path, "BF.ADD", "blocks", "a").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Fatalf("redis-cli -s: %q %v", out, err)
	}
}

func TestRedisPyTLSAndUnixSocket(t *testing.T) {
	python := redisPy(t)
	p := newTestPKI(t)
	_, _, tlsAddr := startTLS(t, p, Config{Password: "pw"})
	host, port, _ := net.SplitHostPort(tlsAddr)
	check := func(args ...string) {
		t.Helper()
		out, err := exec.Command(python, append([]string{"testdata/redispy_tls.py", "pw"}, args...)...).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "ok" {
			t.Fatalf("redis-py %v: %v\n%s", args, err, out)
		}
	}
	check("tls", host, port, p.caFile, p.clientCert, p.clientKe)
	// Without a client certificate where one is optional.
	tc := p.serverTLS()
	tc.AuthClients = "optional"
	_, _, tlsAddr = startTLS(t, p, Config{Password: "pw", TLS: tc})
	host, port, _ = net.SplitHostPort(tlsAddr)
	check("tls", host, port, p.caFile)
	_, path := startUnix(t, Config{Password: "pw"})
	check("unix", path)
}
