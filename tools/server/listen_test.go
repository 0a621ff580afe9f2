package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// freeAddr is a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// listenAndServe runs ListenAndServe of a server of c, which names a
// plaintext, a TLS and a Unix socket listener, until all three listen.
// stop shuts the server down and returns ListenAndServe's error; the
// test's cleanup calls it too.
func listenAndServe(t *testing.T, c Config) (s *Server, stop func() error) {
	t.Helper()
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe() }()
	stop = sync.OnceValue(func() error {
		if err := s.Shutdown(context.Background()); err != nil {
			return err
		}
		return <-done
	})
	t.Cleanup(func() { stop() })
	waitFor(t, "three listeners", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.listeners) == 3 && s.tls.addr.Load() != nil
	})
	return s, stop
}

func TestListenAndServe(t *testing.T) {
	p := newTestPKI(t)
	path := filepath.Join(t.TempDir(), "s.sock")
	tc := p.serverTLS()
	tc.AuthClients = "no"
	s, stop := listenAndServe(t, Config{Addr: freeAddr(t), TLSAddr: freeAddr(t), TLS: tc, UnixSocket: path})
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
	if err := stop(); err != nil {
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

// Every listener serves the same users and counts in the same statistics:
// a user allowed only reads gets NOPERM for BF.ADD over TLS and the Unix
// socket as over plaintext TCP, a client that has not authenticated gets
// NOAUTH on each; INFO names the three listeners and counts their clients,
// CONFIG GET port and Addr are the plaintext port's whichever listener
// started first, and CLIENT LIST shows the socket's clients as Redis does.
func TestListenersShareUsersAndStats(t *testing.T) {
	p := newTestPKI(t)
	path := filepath.Join(t.TempDir(), "s.sock")
	tc := p.serverTLS()
	tc.AuthClients = "no"
	s, _ := listenAndServe(t, Config{Addr: freeAddr(t), TLSAddr: freeAddr(t), TLS: tc, UnixSocket: path, Password: "pw",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := context.Background()
	admin := client(t, s.cfg.Addr, func(o *redis.Options) { o.Password = "pw" })
	if err := admin.Do(ctx, "ACL", "SETUSER", "reader", "on", ">rpw", "~*", "+@read").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.BFAdd(ctx, "blocks", "a").Err(); err != nil {
		t.Fatal(err)
	}
	listeners := map[string]func(*redis.Options){
		"tcp":  func(o *redis.Options) {},
		"tls":  func(o *redis.Options) { o.Addr, o.TLSConfig = s.cfg.TLSAddr, p.clientTLS(false) },
		"unix": func(o *redis.Options) { o.Network, o.Addr = "unix", path },
	}
	for name, opt := range listeners {
		anon := client(t, s.cfg.Addr, opt)
		wantErr(t, anon.BFExists(ctx, "blocks", "a").Err(), "NOAUTH")
		reader := client(t, s.cfg.Addr, opt, func(o *redis.Options) { o.Username, o.Password = "reader", "rpw" })
		if ok, err := reader.BFExists(ctx, "blocks", "a").Result(); err != nil || !ok {
			t.Fatalf("%s: the reader's BF.EXISTS: %v %v", name, ok, err)
		}
		wantErr(t, reader.BFAdd(ctx, "blocks", "b").Err(), "NOPERM User reader has no permissions to run the 'bf.add' command")
	}
	// One open connection on each listener besides the admin's.
	conns := map[string]*redis.Conn{}
	for name, opt := range listeners {
		conns[name] = client(t, s.cfg.Addr, opt, func(o *redis.Options) { o.Password = "pw" }).Conn()
		if err := conns[name].Ping(ctx).Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { conns[name].Close() })
	}
	if a := s.Addr(); a == nil || a.String() != s.cfg.Addr {
		t.Fatalf("Addr %v, want the plaintext port's %s", a, s.cfg.Addr)
	}
	_, tcpPort, _ := net.SplitHostPort(s.cfg.Addr)
	_, tlsPort, _ := net.SplitHostPort(s.cfg.TLSAddr)
	info, err := conns["tls"].Info(ctx, "server", "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tcp_port:" + tcpPort + "\r\n",
		"listener0:name=tcp,bind=127.0.0.1,port=" + tcpPort + "\r\n",
		"listener1:name=unix,bind=" + path + "\r\n",
		"listener2:name=tls,bind=127.0.0.1,port=" + tlsPort + "\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q:\n%s", want, info)
		}
	}
	// The admin's, and the three (the other clients may not be closed yet).
	_, fields := infoFields(t, info)
	if n, _ := strconv.Atoi(fields["Clients"]["connected_clients"]); n < 4 {
		t.Errorf("connected_clients:%s with four clients open", fields["Clients"]["connected_clients"])
	}
	got, err := conns["unix"].ConfigGet(ctx, "*port").Result()
	if err != nil || got["port"] != tcpPort || got["tls-port"] != tlsPort {
		t.Fatalf("CONFIG GET *port: %v %v", got, err)
	}
	line, err := conns["unix"].Do(ctx, "CLIENT", "INFO").Text()
	if err != nil || !strings.Contains(line, " addr="+path+":0 laddr="+path+":0 ") || !strings.Contains(line, " flags=U ") {
		t.Errorf("CLIENT INFO over the socket: %q %v", line, err)
	}
	list, err := conns["tcp"].ClientList(ctx).Result()
	if err != nil || !strings.Contains(list, "addr="+path+":0 laddr="+path+":0 ") {
		t.Fatalf("CLIENT LIST lacks the socket's client: %v %q", err, list)
	}
}

// The TLS and socket settings in a configuration file: tls-port on bind's
// host whichever comes first, the files, the socket and its permissions;
// served, shown by CONFIG GET, refused by CONFIG SET where they take a
// restart, and kept by CONFIG REWRITE.
func TestConfigFileTLSAndSocket(t *testing.T) {
	p := newTestPKI(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	path := filepath.Join(dir, "ohbloom.conf")
	text := fmt.Sprintf("tls-port 6380\nbind 10.1.2.3\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\n"+
		"tls-auth-clients optional\nunixsocket %s\nunixsocketperm 750\n", p.certFile, p.keyFile, p.caFile, sock)
	os.WriteFile(path, []byte(text), 0o600)
	var c Config
	if err := ReadConfigFile(path, &c); err != nil {
		t.Fatal(err)
	}
	if c.TLSAddr != "10.1.2.3:6380" || c.Addr != "10.1.2.3:6379" || c.TLS.CertFile != p.certFile || c.TLS.KeyFile != p.keyFile ||
		c.TLS.CACertFile != p.caFile || c.TLS.AuthClients != "optional" || c.UnixSocket != sock || c.UnixSocketPerm != 0o750 {
		t.Fatalf("read %+v", c)
	}
	for _, bad := range []struct{ text, err string }{
		{"unixsocketperm 999\n", "octal permissions, at most 777"},
		{"tls-port 70000\n", "argument must be between 0 and 65535 inclusive"},
	} {
		os.WriteFile(filepath.Join(dir, "bad.conf"), []byte(bad.text), 0o600)
		var c Config
		if err := ReadConfigFile(filepath.Join(dir, "bad.conf"), &c); err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("%q: %v, want %q", bad.text, err, bad.err)
		}
	}

	c.Addr, c.TLSAddr = "127.0.0.1:0", "127.0.0.1:0"
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, _ := listenAndServe(t, c)
	ctx := context.Background()
	rdb := client(t, sock, func(o *redis.Options) { o.Network = "unix" })
	got, err := rdb.ConfigGet(ctx, "*").Result()
	_, tlsPort, _ := net.SplitHostPort((*s.tls.addr.Load()).String())
	if err != nil || got["tls-port"] != tlsPort || got["tls-auth-clients"] != "optional" || got["unixsocket"] != sock ||
		got["unixsocketperm"] != "750" || got["tls-cert-file"] != p.certFile {
		t.Fatalf("CONFIG GET *: %v %v", got, err)
	}
	if _, ok := got["tls-key-file-pass"]; ok {
		t.Fatal("CONFIG GET * shows tls-key-file-pass")
	}
	for _, name := range []string{"tls-port", "unixsocket", "unixsocketperm"} {
		wantErr(t, rdb.ConfigSet(ctx, name, "1").Err(), "can't set immutable config")
	}
	// A tls-* setting and another in one CONFIG SET: all or none.
	wantErr(t, rdb.Do(ctx, "CONFIG", "SET", "maxmemory", "1mb", "tls-auth-clients", "maybe").Err(), "tls-auth-clients")
	if v, _ := rdb.ConfigGet(ctx, "maxmemory").Result(); v["maxmemory"] != "0" {
		t.Fatalf("maxmemory set by a CONFIG SET that failed: %v", v)
	}
	if err := rdb.Do(ctx, "CONFIG", "SET", "maxmemory", "1gb", "tls-auth-clients", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigRewrite(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{"tls-port " + tlsPort + "\n", "tls-auth-clients no\n", "unixsocket " + sock + "\n",
		"unixsocketperm 750\n", "tls-cert-file " + p.certFile + "\n", "maxmemory 1gb\n"} {
		if strings.Count(string(b), want) != 1 {
			t.Errorf("the rewritten file lacks %q once:\n%s", want, b)
		}
	}
}
