package server

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testPKI is a throwaway certificate authority made for one test, with a
// server certificate for 127.0.0.1 and localhost and a client
// certificate, written as PEM files to a temporary directory. Nothing of
// it outlives the test.
type testPKI struct {
	dir                  string
	caFile               string
	certFile, keyFile    string // the server's
	clientCert, clientKe string
	caPool               *x509.CertPool
	client               tls.Certificate
	caCert               *x509.Certificate
	caKey                *ecdsa.PrivateKey
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ohbloom test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.caCert, _ = x509.ParseCertificate(der)
	p.caKey = key
	p.caPool = x509.NewCertPool()
	p.caPool.AddCert(p.caCert)
	p.caFile = p.write(t, "ca.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	p.certFile, p.keyFile = p.issue(t, "server", false)
	p.clientCert, p.clientKe = p.issue(t, "client", true)
	if p.client, err = tls.LoadX509KeyPair(p.clientCert, p.clientKe); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *testPKI) write(t testing.TB, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var testSerial = big.NewInt(100)

// issue makes a certificate signed by the CA, for a server (127.0.0.1,
// localhost) or a client, named cn, and writes cn.crt and cn.key.
func (p *testPKI) issue(t testing.TB, cn string, client bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	testSerial.Add(testSerial, big.NewInt(1))
	tmpl := &x509.Certificate{
		SerialNumber: new(big.Int).Set(testSerial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, cn+".crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		p.write(t, cn+".key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}

// serverTLS is the TLS configuration of the PKI's server certificate,
// with client certificates required (Redis's default).
func (p *testPKI) serverTLS() TLSConfig {
	return TLSConfig{CertFile: p.certFile, KeyFile: p.keyFile, CACertFile: p.caFile}
}

// clientTLS is a client's configuration: it trusts the CA and, if
// withCert, presents the client certificate.
func (p *testPKI) clientTLS(withCert bool) *tls.Config {
	c := &tls.Config{RootCAs: p.caPool, ServerName: "localhost"}
	if withCert {
		c.Certificates = []tls.Certificate{p.client}
	}
	return c
}

// startTLS runs a server with a plaintext and a TLS listener on loopback
// ports; c.TLS is the PKI's unless set.
func startTLS(t *testing.T, p *testPKI, c Config) (s *Server, plainAddr, tlsAddr string) {
	t.Helper()
	if c.TLS == (TLSConfig{}) {
		c.TLS = p.serverTLS()
	}
	s, plainAddr = start(t, c)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeTLS(ln)
	waitFor(t, "ServeTLS to start", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.listeners) == 2 && s.loops != nil // the loops' goroutines have started
	})
	return s, plainAddr, ln.Addr().String()
}

// settled waits until the server holds no connection and no buffered
// byte, and runs no more goroutines than before (base).
func settled(t *testing.T, s *Server, base int) {
	t.Helper()
	waitFor(t, "the server to close every connection", func() bool { return s.clients.Load() == 0 })
	for deadline := time.Now().Add(30 * time.Second); runtime.NumGoroutine() > base; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("waited 30 s for the server's goroutines to end: %d, %d before; they are:\n%s",
				runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
	}
	if b, u := s.buffered.Load(), s.unauthBuffered.Load(); b != 0 || u != 0 {
		t.Fatalf("%d bytes (%d unauthenticated) still reserved with no connection open", b, u)
	}
}

func TestTLSWithGoRedis(t *testing.T) {
	p := newTestPKI(t)
	ctx := context.Background()
	for _, tc := range []struct {
		auth     string
		withCert bool
		ok       bool
	}{
		{"yes", true, true}, {"yes", false, false},
		{"optional", true, true}, {"optional", false, true},
		{"no", false, true},
	} {
		t.Run(tc.auth+map[bool]string{true: "/cert", false: "/no-cert"}[tc.withCert], func(t *testing.T) {
			cfg := p.serverTLS()
			cfg.AuthClients = tc.auth
			_, _, addr := startTLS(t, p, Config{TLS: cfg, Password: "pw"})
			rdb := client(t, addr, func(o *redis.Options) {
				o.TLSConfig = p.clientTLS(tc.withCert)
				o.Password = "pw"
			})
			err := rdb.BFAdd(ctx, "blocks", "a").Err()
			if !tc.ok {
				if err == nil {
					t.Fatal("a client without a certificate was served under tls-auth-clients yes")
				}
				t.Logf("refused as it should be: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := rdb.BFExists(ctx, "blocks", "a").Result(); err != nil || !ok {
				t.Fatalf("BF.EXISTS over TLS: %v %v", ok, err)
			}
			if ok, err := rdb.BFExists(ctx, "blocks", "b").Result(); err != nil || ok {
				t.Fatalf("BF.EXISTS of an absent item over TLS: %v %v", ok, err)
			}
		})
	}
}

// A connection that does not complete its handshake, or is no TLS client
// at all, or has no certificate where one is required, is closed, and
// leaves nothing behind: no connection counted, no byte reserved, no
// goroutine.
func TestTLSRefusalsLeaveNothing(t *testing.T) {
	p := newTestPKI(t)
	cfg := p.serverTLS()
	cfg.HandshakeTimeout = 200 * time.Millisecond
	s, _, tlsAddr := startTLS(t, p, Config{TLS: cfg, Password: "pw"})
	// The refusals that need no timer run on a server whose handshakes
	// may take an hour, far past the client's deadline: each must be
	// closed at the bytes that give it away, not when a timeout runs out.
	cfg.HandshakeTimeout = time.Hour
	prompt, plainAddr, promptAddr := startTLS(t, p, Config{TLS: cfg, Password: "pw"})
	// What the server said before it closed, read until EOF; a client
	// deadline far past the handshake's, so that a server that never
	// closes fails the test rather than hanging it.
	readAll := func(conn net.Conn) (string, error) {
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		b, err := io.ReadAll(conn)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the server did not close the connection (read %q)", b)
		}
		return string(b), err
	}

	t.Run("silent client", func(t *testing.T) {
		base := runtime.NumGoroutine() // this subtest's own included
		conn, err := net.Dial("tcp", tlsAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		got, _ := readAll(conn)
		t.Logf("closed after %v", time.Since(start))
		if got != "" {
			t.Fatalf("a silent client was sent %q", got)
		}
		settled(t, s, base)
	})
	t.Run("half a ClientHello", func(t *testing.T) {
		base := runtime.NumGoroutine() // this subtest's own included
		conn, err := net.Dial("tcp", tlsAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write(clientHello(t)[:40])
		start := time.Now()
		readAll(conn)
		t.Logf("closed after %v", time.Since(start))
		settled(t, s, base)
	})
	t.Run("plaintext client on the TLS port", func(t *testing.T) {
		base := runtime.NumGoroutine() // this subtest's own included
		conn, err := net.Dial("tcp", promptAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write([]byte("*1\r\n$4\r\nPING\r\n"))
		got, _ := readAll(conn)
		if got != plaintextOnTLSPort {
			t.Fatalf("a plaintext client on the TLS port was answered %q, want %q", got, plaintextOnTLSPort)
		}
		settled(t, prompt, base)
	})
	t.Run("TLS client on the plaintext port", func(t *testing.T) {
		base := runtime.NumGoroutine() // this subtest's own included
		raw, err := net.Dial("tcp", plainAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		raw.SetDeadline(time.Now().Add(20 * time.Second))
		err = tls.Client(raw, p.clientTLS(true)).Handshake()
		if err == nil {
			t.Fatal("a TLS handshake succeeded on the plaintext port")
		}
		t.Logf("the client's handshake failed: %v", err)
		if got, _ := readAll(raw); got != "" {
			t.Fatalf("after the refusal: %q", got)
		}
		settled(t, prompt, base)
	})
	t.Run("raw ClientHello on the plaintext port", func(t *testing.T) {
		base := runtime.NumGoroutine() // this subtest's own included
		conn, err := net.Dial("tcp", plainAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write(clientHello(t))
		got, _ := readAll(conn)
		if want := "-" + errTLSOnPlainPort.Error() + "\r\n"; got != want {
			t.Fatalf("a ClientHello on the plaintext port was answered %q, want %q", got, want)
		}
		settled(t, prompt, base)
	})
	t.Run("no client certificate", func(t *testing.T) {
		base := runtime.NumGoroutine() // this subtest's own included
		conn, err := tls.Dial("tcp", promptAddr, p.clientTLS(false))
		if err == nil {
			// Under TLS 1.3 the client learns of the refusal at its
			// first read.
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			conn.Write([]byte("PING\r\n"))
			_, err = bufio.NewReader(conn).ReadString('\n')
		}
		if err == nil {
			t.Fatal("served without a client certificate")
		}
		t.Logf("refused: %v", err)
		settled(t, prompt, base)
	})
	t.Run("a served client still is", func(t *testing.T) {
		base := runtime.NumGoroutine() // this subtest's own included
		conn, err := tls.Dial("tcp", promptAddr, p.clientTLS(true))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(20 * time.Second))
		conn.Write([]byte("AUTH pw\r\nPING\r\n"))
		r := bufio.NewReader(conn)
		for _, want := range []string{"+OK\r\n", "+PONG\r\n"} {
			if got, err := r.ReadString('\n'); got != want {
				t.Fatalf("%q %v, want %q", got, err, want)
			}
		}
		conn.Close()
		settled(t, prompt, base)
	})
}

// clientHello is the first flight of a real TLS client: a ClientHello.
func clientHello(t testing.TB) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go tls.Client(a, &tls.Config{InsecureSkipVerify: true}).Handshake()
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	head := make([]byte, 5)
	if _, err := io.ReadFull(b, head); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(head[3])<<8|int(head[4]))
	if _, err := io.ReadFull(b, body); err != nil {
		t.Fatal(err)
	}
	return append(head, body...)
}

// TLS connections take their share of max-unauth-buffered-bytes from
// their accept: a crowd of connections that never authenticate is
// refused past it, and the clients that do authenticate are served.
func TestTLSUnauthenticatedBudget(t *testing.T) {
	p := newTestPKI(t)
	cfg := p.serverTLS()
	cfg.AuthClients = "no"
	const room = 4 // connections the budget holds
	s, _, tlsAddr := startTLS(t, p, Config{TLS: cfg, Password: "pw", MaxUnauthBufferedBytes: minUnauthBufferedBytes})
	if int(minUnauthBufferedBytes/tlsConnBytes) < room {
		t.Fatalf("the budget holds %d TLS connections, fewer than the test's %d", minUnauthBufferedBytes/tlsConnBytes, room)
	}
	limit := int(minUnauthBufferedBytes / tlsConnBytes)
	var conns []*tls.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func() error {
		conn, err := tls.Dial("tcp", tlsAddr, p.clientTLS(false))
		if err == nil {
			conns = append(conns, conn)
		}
		return err
	}
	for range limit - 1 {
		if err := dial(); err != nil {
			t.Fatal(err)
		}
	}
	// One that authenticates takes its share out of the unauthenticated
	// total.
	conns[0].SetDeadline(time.Now().Add(20 * time.Second))
	conns[0].Write([]byte("AUTH pw\r\nPING\r\n"))
	r := bufio.NewReader(conns[0])
	for _, want := range []string{"+OK\r\n", "+PONG\r\n"} {
		if got, err := r.ReadString('\n'); got != want {
			t.Fatalf("%q %v, want %q", got, err, want)
		}
	}
	waitFor(t, "the authenticated client's share to leave the unauthenticated total", func() bool {
		return s.unauthBuffered.Load() == int64(limit-2)*tlsConnBytes
	})
	// Two more fit, and then the budget is spent: one more is closed at
	// its accept, before its handshake.
	for range 2 {
		if err := dial(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the connections to be counted", func() bool { return s.unauthBuffered.Load() == int64(limit)*tlsConnBytes })
	if err := dial(); err == nil {
		t.Fatal("a TLS connection past max-unauth-buffered-bytes completed its handshake")
	}
	// The authenticated client is served still.
	conns[0].Write([]byte("PING\r\n"))
	if got, err := r.ReadString('\n'); got != "+PONG\r\n" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestTLSReload(t *testing.T) {
	p := newTestPKI(t)
	s, _, tlsAddr := startTLS(t, p, Config{})
	ctx := context.Background()
	served := func() (string, error) {
		t.Helper()
		conn, err := tls.Dial("tcp", tlsAddr, p.clientTLS(true))
		if err != nil {
			return "", err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
	}
	if cn, err := served(); cn != "server" {
		t.Fatalf("served %q, %v; want the first certificate", cn, err)
	}
	rdb := client(t, tlsAddr, func(o *redis.Options) { o.TLSConfig = p.clientTLS(true) })

	// CONFIG SET of a new certificate and its key, at once.
	cert2, key2 := p.issue(t, "second", false)
	if err := rdb.ConfigSet(ctx, "tls-cert-file", cert2).Err(); err == nil {
		t.Fatal("a certificate without its key was taken")
	} else {
		wantErr(t, err, "ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - tls-cert-file "+cert2+" with tls-key-file")
	}
	if cn, err := served(); cn != "server" {
		t.Fatalf("after a failed CONFIG SET, served %q, %v; want the first certificate", cn, err)
	}
	if err := rdb.Do(ctx, "CONFIG", "SET", "tls-cert-file", cert2, "tls-key-file", key2).Err(); err != nil {
		t.Fatal(err)
	}
	if cn, err := served(); cn != "second" {
		t.Fatalf("after CONFIG SET, served %q, %v; want the second certificate", cn, err)
	}
	got, err := rdb.ConfigGet(ctx, "tls-*").Result()
	if err != nil || got["tls-cert-file"] != cert2 || got["tls-key-file"] != key2 || got["tls-auth-clients"] != "yes" ||
		got["tls-port"] != strings.Split(tlsAddr, ":")[1] {
		t.Fatalf("CONFIG GET tls-*: %v %v", got, err)
	}
	if _, ok := got["tls-key-file-pass"]; ok {
		t.Fatal("CONFIG GET shows tls-key-file-pass")
	}
	wantErr(t, rdb.ConfigSet(ctx, "tls-auth-clients", "maybe").Err(), "tls-auth-clients \"maybe\": yes, no or optional")
	wantErr(t, rdb.ConfigSet(ctx, "tls-protocols", "TLSv1.1").Err(), "TLS 1.2 is the least version")

	// The files changed on disk, reloaded (SIGHUP in ohbloom serve).
	third, thirdKey := p.issue(t, "third", false)
	for _, f := range [][2]string{{third, cert2}, {thirdKey, key2}} {
		b, _ := os.ReadFile(f[0])
		os.WriteFile(f[1], b, 0o600)
	}
	if err := s.ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	if cn, err := served(); cn != "third" {
		t.Fatalf("after ReloadTLS, served %q, %v; want the third certificate", cn, err)
	}
	// A bad file on disk: the reload fails, saying why, and the
	// certificate in use stays.
	os.WriteFile(cert2, []byte("not a certificate"), 0o600)
	err = s.ReloadTLS()
	wantErr(t, err, "the configuration in use stays")
	wantErr(t, err, cert2)
	if cn, err := served(); cn != "third" {
		t.Fatalf("after a failed reload, served %q, %v; want the third certificate still", cn, err)
	}
	// The client connected before every change is still served.
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestTLSSettings(t *testing.T) {
	p := newTestPKI(t)
	t.Run("invalid", func(t *testing.T) {
		for _, tc := range []struct {
			change func(*TLSConfig)
			want   string
		}{
			{func(c *TLSConfig) { c.KeyFile = "" }, "tls-cert-file and tls-key-file must both be set"},
			{func(c *TLSConfig) { c.CACertFile = "" }, "either tls-ca-cert-file or tls-ca-cert-dir must be specified"},
			{func(c *TLSConfig) { c.CACertFile = p.certFile + ".missing" }, "no such file"},
			{func(c *TLSConfig) { c.CACertFile = p.keyFile }, "no PEM certificate in it"},
			{func(c *TLSConfig) { c.KeyFile = p.clientKe }, "private key does not match public key"},
			{func(c *TLSConfig) { c.Protocols = "TLSv1" }, "TLS 1.2 is the least version"},
			{func(c *TLSConfig) { c.Protocols = "SSLv3" }, "unknown protocol"},
			{func(c *TLSConfig) { c.Ciphers = "HIGH:!aNULL" }, `"HIGH" is not a TLS 1.2 cipher suite served`},
			{func(c *TLSConfig) { c.Ciphers = "AES128-SHA" }, `"AES128-SHA" is not a TLS 1.2 cipher suite served`},
			{func(c *TLSConfig) { c.AuthClients = "sometimes" }, "yes, no or optional"},
			{func(c *TLSConfig) { c.HandshakeTimeout = -time.Second }, "negative"},
		} {
			c := p.serverTLS()
			tc.change(&c)
			_, err := New(Config{TLS: c})
			wantErr(t, err, tc.want)
		}
	})
	t.Run("protocols", func(t *testing.T) {
		c := p.serverTLS()
		c.Protocols = "TLSv1.3"
		_, _, addr := startTLS(t, p, Config{TLS: c})
		old := p.clientTLS(true)
		old.MaxVersion = tls.VersionTLS12
		if conn, err := tls.Dial("tcp", addr, old); err == nil {
			conn.Close()
			t.Fatal("a TLS 1.2 client was served under tls-protocols TLSv1.3")
		}
		conn, err := tls.Dial("tcp", addr, p.clientTLS(true))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if v := conn.ConnectionState().Version; v != tls.VersionTLS13 {
			t.Fatalf("version %x", v)
		}
	})
	t.Run("ciphers", func(t *testing.T) {
		c := p.serverTLS()
		c.Ciphers = "ECDHE-ECDSA-CHACHA20-POLY1305"
		_, _, addr := startTLS(t, p, Config{TLS: c})
		cc := p.clientTLS(true)
		cc.MaxVersion = tls.VersionTLS12
		conn, err := tls.Dial("tcp", addr, cc)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if got := conn.ConnectionState().CipherSuite; got != tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 {
			t.Fatalf("negotiated %s", tls.CipherSuiteName(got))
		}
		cc = p.clientTLS(true)
		cc.MaxVersion = tls.VersionTLS12
		cc.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}
		if conn, err := tls.Dial("tcp", addr, cc); err == nil {
			conn.Close()
			t.Fatal("a suite left out of tls-ciphers was negotiated")
		}
	})
	t.Run("CA directory", func(t *testing.T) {
		dir := t.TempDir()
		b, _ := os.ReadFile(p.caFile)
		os.WriteFile(filepath.Join(dir, "ca.pem"), b, 0o600)
		os.WriteFile(filepath.Join(dir, "README"), []byte("the CAs we trust\n"), 0o600)
		c := p.serverTLS()
		c.CACertFile, c.CACertDir = "", dir
		_, _, addr := startTLS(t, p, Config{TLS: c})
		conn, err := tls.Dial("tcp", addr, p.clientTLS(true))
		if err == nil {
			conn.Write([]byte("PING\r\n"))
			_, err = bufio.NewReader(conn).ReadString('\n')
			conn.Close()
		}
		if err != nil {
			t.Fatalf("a client the directory's CA vouches for: %v", err)
		}
		c.CACertDir = t.TempDir()
		_, err = New(Config{TLS: c})
		wantErr(t, err, "no PEM certificate in it")
	})
	t.Run("encrypted key", func(t *testing.T) {
		b, _ := os.ReadFile(p.keyFile)
		block, _ := pem.Decode(b)
		enc, err := x509.EncryptPEMBlock(rand.Reader, block.Type, block.Bytes, []byte("sesame"), x509.PEMCipherAES256)
		if err != nil {
			t.Fatal(err)
		}
		c := p.serverTLS()
		c.KeyFile = p.write(t, "encrypted.key", pem.EncodeToMemory(enc))
		_, err = New(Config{TLS: c})
		wantErr(t, err, "is encrypted: set tls-key-file-pass")
		c.KeyFilePass = "wrong"
		_, err = New(Config{TLS: c})
		wantErr(t, err, "decrypting with tls-key-file-pass")
		c.KeyFilePass = "sesame"
		_, _, addr := startTLS(t, p, Config{TLS: c})
		conn, err := tls.Dial("tcp", addr, p.clientTLS(true))
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
		c.KeyFile = p.write(t, "pkcs8.key", pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1}}))
		_, err = New(Config{TLS: c})
		wantErr(t, err, "PKCS#8-encrypted key is not supported")
	})
	t.Run("ServeTLS without TLS", func(t *testing.T) {
		s, _ := start(t, Config{})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		wantErr(t, s.ServeTLS(ln), "without a TLS configuration")
		rdb := client(t, s.Addr().String())
		wantErr(t, rdb.ConfigSet(context.Background(), "tls-cert-file", p.certFile).Err(), "TLS is not enabled")
	})
}
