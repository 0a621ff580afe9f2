package cli

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
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testCA is a throwaway certificate authority that issues certificates
// for 127.0.0.1, written as PEM files in dir.
type testCA struct {
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
	file string
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	ca := &testCA{dir: t.TempDir()}
	var der []byte
	ca.key, der = ca.sign(t, &x509.Certificate{Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, nil)
	ca.cert, _ = x509.ParseCertificate(der)
	ca.pool = x509.NewCertPool()
	ca.pool.AddCert(ca.cert)
	ca.file = ca.write(t, "ca.crt", "CERTIFICATE", der)
	return ca
}

var caSerial int64

// sign makes a key and a certificate of it from tmpl, signed by the CA
// (self-signed if parent is nil).
func (ca *testCA) sign(t *testing.T, tmpl *x509.Certificate, parent *x509.Certificate) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caSerial++
	tmpl.SerialNumber = big.NewInt(caSerial)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	signer := key
	if parent == nil {
		parent = tmpl
	} else {
		signer = ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	return key, der
}

func (ca *testCA) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(ca.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue writes name.crt and name.key, a certificate named name for a
// server on 127.0.0.1 or a client.
func (ca *testCA) issue(t *testing.T, name string, client bool) (certFile, keyFile string) {
	t.Helper()
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	key, der := ca.sign(t, &x509.Certificate{Subject: pkix.Name{CommonName: name}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}, ca.cert)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return ca.write(t, name+".crt", "CERTIFICATE", der), ca.write(t, name+".key", "EC PRIVATE KEY", keyDER)
}

// serve's TLS and Unix socket flags: a client with a certificate is
// served over TLS, the socket has its permissions, SIGHUP takes a new
// certificate written over the old one.
func TestServeTLSAndUnixSocket(t *testing.T) {
	ca := newTestCA(t)
	certFile, keyFile := ca.issue(t, "first", false)
	clientCert, clientKey := ca.issue(t, "client", true)
	pair, err := tls.LoadX509KeyPair(clientCert, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "ohbloom.sock")
	cmd, _, lines := startServe(t, "--requirepass", "pw",
		"--tls-port", "127.0.0.1:0", "--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", ca.file,
		"--unixsocket", sock, "--unixsocketperm", "700")
	_, tlsAddr, _ := strings.Cut(lines.waitFor(`msg="listening with TLS"`), "addr=")
	if line := lines.waitFor(`msg="listening on a Unix socket"`); !strings.HasSuffix(line, "path="+sock) {
		t.Fatalf("the socket's line: %q", line)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the socket file: %v %v", fi, err)
	}
	ctx := context.Background()
	clientTLS := &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{pair}}
	secure := redis.NewClient(&redis.Options{Addr: tlsAddr, Password: "pw", TLSConfig: clientTLS})
	defer secure.Close()
	if err := secure.BFAdd(ctx, "blocks", "a").Err(); err != nil {
		t.Fatalf("BF.ADD over TLS: %v", err)
	}
	local := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, Password: "pw"})
	defer local.Close()
	if ok, err := local.BFExists(ctx, "blocks", "a").Result(); err != nil || !ok {
		t.Fatalf("BF.EXISTS over the socket: %v %v", ok, err)
	}
	// Without a client certificate: refused (tls-auth-clients yes).
	bare := redis.NewClient(&redis.Options{Addr: tlsAddr, Password: "pw", TLSConfig: &tls.Config{RootCAs: ca.pool}, MaxRetries: -1})
	defer bare.Close()
	if err := bare.Ping(ctx).Err(); err == nil {
		t.Fatal("a client without a certificate was served")
	}

	served := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", tlsAddr, clientTLS)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "first" {
		t.Fatalf("served %q", cn)
	}
	second, secondKey := ca.issue(t, "second", false)
	for _, f := range [][2]string{{second, certFile}, {secondKey, keyFile}} {
		if err := os.Rename(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Process.Signal(syscall.SIGHUP)
	lines.waitFor("SIGHUP: reloaded the TLS certificate")
	if cn := served(); cn != "second" {
		t.Fatalf("after SIGHUP, served %q", cn)
	}
	// A client connected before is served still.
	if err := secure.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// A certificate that does not load: the one in use stays.
	os.WriteFile(certFile, []byte("not a certificate"), 0o600)
	cmd.Process.Signal(syscall.SIGHUP)
	lines.waitFor("SIGHUP: the TLS certificates in use stay")
	if cn := served(); cn != "second" {
		t.Fatalf("after a failed reload, served %q", cn)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	lines.rest()
	cmd.Wait()
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("the socket file after exit: %v", err)
	}
}

// redis-cli --tls --cacert ca.crt -p TLSPORT PING answers PONG, from a
// serve that serves TLS only.
func TestServeTLSWithRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-cli is not installed (.ci/redis.sh installs it)")
		}
		t.Skip("redis-cli is not installed")
	}
	if help, _ := exec.Command(cli, "--help").CombinedOutput(); !strings.Contains(string(help), "--tls") {
		t.Skip("this redis-cli is built without TLS")
	}
	ca := newTestCA(t)
	certFile, keyFile := ca.issue(t, "server", false)
	port := freePort(t)
	cmd := exec.Command(binary, "serve", "--addr", "", "--tls-port", port, "--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--tls-auth-clients", "no")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := &logLines{t: t, sc: bufio.NewScanner(stderr)}
	if line := lines.waitFor(`msg="listening with TLS"`); !strings.HasSuffix(line, "addr=127.0.0.1:"+port) {
		t.Fatalf("serve's TLS line: %q", line)
	}
	out, err := exec.Command(cli, "--tls", "--cacert", ca.file, "-p", port, "PING").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "PONG" {
		t.Fatalf("redis-cli --tls PING: %q %v", out, err)
	}
}

// freePort is a loopback port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

func TestServeTLSUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-port", "6380"}, "--tls-port needs --tls-cert-file"},
		{[]string{"--tls-cert-file", "a.crt", "--tls-key-file", "a.key"}, "serve nothing without --tls-port"},
		{[]string{"--tls-port", "70000", "--tls-cert-file", "a.crt"}, "not a port"},
		{[]string{"--tls-port", "x", "--tls-cert-file", "a.crt"}, "a port or an address"},
		{[]string{"--addr", ""}, "nothing to serve on"},
		{[]string{"--unixsocket", "s.sock", "--unixsocketperm", "999"}, "octal permissions"},
		{[]string{"--unixsocket", "s.sock", "--unixsocketperm", "1777"}, "at most 777"},
		{[]string{"--unixsocketperm", "700"}, "--unixsocketperm without --unixsocket"},
	} {
		if _, errOut, code := run(t, "", append([]string{"serve"}, tc.args...)...); code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("serve %q: code %d, %q; want %q", tc.args, code, errOut, tc.want)
		}
	}
	// Files that do not load: refused at start, saying which.
	if _, errOut, code := run(t, "", "serve", "--addr", "127.0.0.1:0", "--tls-port", "127.0.0.1:0",
		"--tls-cert-file", "/nonexistent.crt", "--tls-key-file", "/nonexistent.key", "--tls-auth-clients", "no"); code != ExitFailure || !strings.Contains(errOut, "/nonexistent.crt") {
		t.Errorf("serve with a missing certificate: code %d, %q", code, errOut)
	}
}

// The TLS and socket settings from a configuration file, under Redis's
// names, with flags given over them.
func TestServeConfigFileTLS(t *testing.T) {
	ca := newTestCA(t)
	certFile, keyFile := ca.issue(t, "server", false)
	port := freePort(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "ohbloom.sock")
	conf := filepath.Join(dir, "ohbloom.conf")
	os.WriteFile(conf, []byte("tls-port "+port+"\ntls-cert-file "+certFile+"\ntls-key-file "+keyFile+
		"\ntls-auth-clients no\nunixsocket "+sock+"\nunixsocketperm 750\n"), 0o600)
	_, _, lines := startServe(t, "--config", conf, "--unixsocketperm", "700")
	if line := lines.waitFor(`msg="listening with TLS"`); !strings.HasSuffix(line, "addr=127.0.0.1:"+port) {
		t.Fatalf("serve's TLS line: %q", line)
	}
	lines.waitFor(`msg="listening on a Unix socket"`)
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the socket file, --unixsocketperm 700 over the file's 750: %v %v", fi, err)
	}
	ctx := context.Background()
	secure := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, TLSConfig: &tls.Config{RootCAs: ca.pool}})
	defer secure.Close()
	got, err := secure.ConfigGet(ctx, "tls-auth-clients").Result()
	if err != nil || got["tls-auth-clients"] != "no" {
		t.Fatalf("CONFIG GET tls-auth-clients over TLS: %v %v", got, err)
	}
}
