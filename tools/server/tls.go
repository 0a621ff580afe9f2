package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TLS, with Redis's tls-* settings, on crypto/tls.
//
// A TLS connection is served by a goroutine of its own (conn_goroutine.go)
// rather than an event loop: crypto/tls reads and writes through a
// blocking net.Conn, and a handshake cannot be resumed once a read would
// block. docs/server.md ("TLS") has the CPU per command this costs beside
// redis-server's TLS.
//
// What a TLS client may hold is bounded as a plaintext client's is, and
// the handshake too:
//   - the handshake must finish within HandshakeTimeout (1 s by default),
//     or the connection is closed: a client that connects and says
//     nothing, a plaintext client on the TLS port (told so and closed at
//     its first bytes), a client without a certificate under
//     tls-auth-clients yes;
//   - a connection counts against max-clients from its accept, before
//     its handshake;
//   - each connection's TLS buffers (crypto/tls's record buffers, the
//     read buffer, the goroutine) are counted as tlsConnBytes in
//     max-buffered-bytes from its accept to its close, and while it has
//     not authenticated (under requirepass) in max-unauth-buffered-bytes
//     too: a crowd of handshakes takes no more than a crowd of
//     unauthenticated plaintext clients may.
//
// A TLS client on the plaintext port sends a handshake record, whose
// first byte (22) no command begins with: the parser refuses it at once
// (errTLSOnPlainPort) and the connection closes.
//
// Certificates are reloaded without a restart by CONFIG SET of any tls-*
// setting (all files are read again, as Redis does) or ReloadTLS (SIGHUP
// in ohbloom serve). A new configuration that fails to load leaves the
// old one in place, and the error says why. Connections already open keep
// the configuration they were accepted with.

// TLSConfig holds Redis's tls-* settings (Config.TLS). TLS is served when
// CertFile is set.
type TLSConfig struct {
	// CertFile and KeyFile are the server's certificate (with its chain)
	// and private key, PEM-encoded: tls-cert-file, tls-key-file.
	CertFile, KeyFile string
	// KeyFilePass decrypts a key file encrypted with the legacy PEM
	// encryption ("Proc-Type: 4,ENCRYPTED"): tls-key-file-pass. Keys
	// encrypted as PKCS#8 ("ENCRYPTED PRIVATE KEY") are not supported.
	KeyFilePass string
	// CACertFile and CACertDir hold the certificates of the authorities
	// client certificates are checked against: tls-ca-cert-file, and every
	// PEM file of tls-ca-cert-dir.
	CACertFile, CACertDir string
	// AuthClients is tls-auth-clients: "yes" (the default, as in Redis: a
	// client must present a certificate the CA vouches for), "optional"
	// (a certificate, if presented, must be valid) or "no".
	AuthClients string
	// Protocols is tls-protocols: "TLSv1.2", "TLSv1.3" or both, apart by
	// spaces; default both. Older versions are refused.
	Protocols string
	// Ciphers is tls-ciphers: the TLS 1.2 cipher suites allowed, apart by
	// colons, by their OpenSSL names (ECDHE-ECDSA-AES128-GCM-SHA256) or
	// IANA names (TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256), among those
	// crypto/tls deems secure; default crypto/tls's choice. (TLS 1.3's
	// suites, Redis's tls-ciphersuites, cannot be chosen with crypto/tls.)
	Ciphers string
	// HandshakeTimeout bounds a TLS handshake; default 1 s.
	HandshakeTimeout time.Duration
}

// DefaultTLSHandshakeTimeout is TLSConfig.HandshakeTimeout's default.
const DefaultTLSHandshakeTimeout = time.Second

// tlsConnBytes is what one TLS connection is counted for in
// max-buffered-bytes (and max-unauth-buffered-bytes before it
// authenticates), beyond its request and reply buffers: crypto/tls's
// input and output record buffers (up to a record, 16 KiB and its
// overhead, each), the 16 KiB the connection reads into, and its
// goroutine's stack.
const tlsConnBytes = 64 << 10

// tlsReadBytes is what one read of a TLS connection takes at most: a
// record's plaintext, which crypto/tls never exceeds in one Read.
const tlsReadBytes = 16 << 10

// maxPEMFileBytes bounds a certificate or key file read.
const maxPEMFileBytes = 16 << 20

// tlsState is the server's TLS configuration, replaced whole on a reload.
type tlsState struct {
	mu       sync.Mutex // serialises reloads
	settings TLSConfig
	current  atomic.Pointer[tls.Config] // nil: no TLS
	// addr is the TLS listener's address, for CONFIG GET tls-port.
	addr atomic.Pointer[net.Addr]
	// handshakeTimeout is settings.HandshakeTimeout, which no reload
	// changes, read without the lock.
	handshakeTimeout time.Duration
}

// init loads c's settings, if TLS is configured.
func (t *tlsState) init(c TLSConfig) error {
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultTLSHandshakeTimeout
	}
	if c.HandshakeTimeout < 0 {
		return fmt.Errorf("server: TLS HandshakeTimeout %v is negative", c.HandshakeTimeout)
	}
	t.settings, t.handshakeTimeout = c, c.HandshakeTimeout
	if c == (TLSConfig{HandshakeTimeout: c.HandshakeTimeout}) {
		return nil
	}
	cfg, err := c.build()
	if err != nil {
		return fmt.Errorf("server: TLS: %w", err)
	}
	t.current.Store(cfg)
	return nil
}

// build reads the files c names and makes the configuration they give.
func (c TLSConfig) build() (*tls.Config, error) {
	if c.CertFile == "" || c.KeyFile == "" {
		return nil, errors.New("tls-cert-file and tls-key-file must both be set")
	}
	auth, err := parseAuthClients(c.AuthClients)
	if err != nil {
		return nil, err
	}
	minV, maxV, err := parseTLSProtocols(c.Protocols)
	if err != nil {
		return nil, err
	}
	suites, err := parseTLSCiphers(c.Ciphers)
	if err != nil {
		return nil, err
	}
	cert, err := loadKeyPair(c.CertFile, c.KeyFile, c.KeyFilePass)
	if err != nil {
		return nil, err
	}
	var pool *x509.CertPool
	if c.CACertFile != "" || c.CACertDir != "" {
		if pool, err = loadCAs(c.CACertFile, c.CACertDir); err != nil {
			return nil, err
		}
	} else if auth != tls.NoClientCert {
		// Redis's own check and words.
		return nil, errors.New("either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-auth-clients is enabled (yes or optional)")
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   auth,
		ClientCAs:    pool,
		MinVersion:   minV,
		MaxVersion:   maxV,
		CipherSuites: suites,
	}, nil
}

func parseAuthClients(s string) (tls.ClientAuthType, error) {
	switch strings.ToLower(s) {
	case "", "yes":
		return tls.RequireAndVerifyClientCert, nil
	case "optional":
		return tls.VerifyClientCertIfGiven, nil
	case "no":
		return tls.NoClientCert, nil
	}
	return 0, fmt.Errorf("tls-auth-clients %q: yes, no or optional", s)
}

// parseTLSProtocols reads tls-protocols. crypto/tls takes a range of
// versions, and TLS 1.2 is the least served, so the choices are 1.2, 1.3
// or both.
func parseTLSProtocols(s string) (minV, maxV uint16, err error) {
	if strings.TrimSpace(s) == "" {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	for _, p := range strings.Fields(s) {
		var v uint16
		switch strings.ToLower(p) {
		case "tlsv1.2":
			v = tls.VersionTLS12
		case "tlsv1.3":
			v = tls.VersionTLS13
		case "tlsv1", "tlsv1.1":
			return 0, 0, fmt.Errorf("tls-protocols %q: %s is not served; TLS 1.2 is the least version", s, p)
		default:
			return 0, 0, fmt.Errorf("tls-protocols %q: unknown protocol %q (TLSv1.2, TLSv1.3)", s, p)
		}
		if minV == 0 || v < minV {
			minV = v
		}
		maxV = max(maxV, v)
	}
	return minV, maxV, nil
}

// openSSLCipherNames maps OpenSSL's names of the TLS 1.2 suites crypto/tls
// deems secure to the suites.
var openSSLCipherNames = map[string]uint16{
	"ECDHE-ECDSA-AES128-GCM-SHA256": tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-RSA-AES128-GCM-SHA256":   tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-ECDSA-AES256-GCM-SHA384": tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-RSA-AES256-GCM-SHA384":   tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-ECDSA-CHACHA20-POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-RSA-CHACHA20-POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-ECDSA-AES128-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	"ECDHE-RSA-AES128-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	"ECDHE-ECDSA-AES256-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	"ECDHE-RSA-AES256-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
}

// parseTLSCiphers reads tls-ciphers: names of TLS 1.2 suites, apart by
// colons. OpenSSL's cipher-list language (HIGH, !aNULL, @STRENGTH) is not
// understood: a name must be one suite's.
func parseTLSCiphers(s string) ([]uint16, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []uint16
	for _, name := range strings.Split(s, ":") {
		name = strings.TrimSpace(name)
		id, ok := openSSLCipherNames[strings.ToUpper(name)]
		if !ok {
			for _, cs := range tls.CipherSuites() {
				if strings.EqualFold(cs.Name, name) && slices.Contains(cs.SupportedVersions, tls.VersionTLS12) {
					id, ok = cs.ID, true
				}
			}
		}
		if !ok {
			known := slices.Sorted(func(yield func(string) bool) {
				for n := range openSSLCipherNames {
					if !yield(n) {
						return
					}
				}
			})
			return nil, fmt.Errorf("tls-ciphers %q: %q is not a TLS 1.2 cipher suite served (one of %s, or its IANA name)", s, name, strings.Join(known, " "))
		}
		out = append(out, id)
	}
	return out, nil
}

// readPEMFile reads a certificate or key file, bounded.
func readPEMFile(what, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEMFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if len(b) > maxPEMFileBytes {
		return nil, fmt.Errorf("%s %s: larger than %d bytes", what, path, maxPEMFileBytes)
	}
	return b, nil
}

// loadKeyPair reads the certificate and key, decrypting a legacy-encrypted
// PEM key with pass.
func loadKeyPair(certFile, keyFile, pass string) (tls.Certificate, error) {
	certPEM, err := readPEMFile("tls-cert-file", certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := readPEMFile("tls-key-file", keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	decrypted := false
	if block, _ := pem.Decode(keyPEM); block != nil {
		switch {
		case block.Type == "ENCRYPTED PRIVATE KEY":
			return tls.Certificate{}, fmt.Errorf("tls-key-file %s: a PKCS#8-encrypted key is not supported; decrypt it, or encrypt it with the legacy PEM encryption (openssl ec -aes256 -traditional)", keyFile)
		case x509.IsEncryptedPEMBlock(block): // deprecated for its weak cipher; still what Redis users may hold
			if pass == "" {
				return tls.Certificate{}, fmt.Errorf("tls-key-file %s is encrypted: set tls-key-file-pass", keyFile)
			}
			der, err := x509.DecryptPEMBlock(block, []byte(pass))
			if err != nil {
				return tls.Certificate{}, fmt.Errorf("tls-key-file %s: decrypting with tls-key-file-pass: %w", keyFile, err)
			}
			keyPEM = pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: der})
			decrypted = true
		}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil && decrypted {
		// The legacy encryption checks only the padding, so about one
		// wrong password in 256 decrypts without an error, to garbage.
		return tls.Certificate{}, fmt.Errorf("tls-key-file %s: decrypting with tls-key-file-pass gave no key for tls-cert-file %s (a wrong password?): %w", keyFile, certFile, err)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls-cert-file %s with tls-key-file %s: %w", certFile, keyFile, err)
	}
	if cert.Leaf != nil && time.Now().After(cert.Leaf.NotAfter) {
		return tls.Certificate{}, fmt.Errorf("tls-cert-file %s expired on %s", certFile, cert.Leaf.NotAfter.UTC().Format(time.DateOnly))
	}
	return cert, nil
}

// loadCAs reads the authorities of tls-ca-cert-file and every file of
// tls-ca-cert-dir that holds PEM certificates (others, such as OpenSSL's
// hash links to them, or a README, are passed over, as OpenSSL does).
func loadCAs(file, dir string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if file != "" {
		b, err := readPEMFile("tls-ca-cert-file", file)
		if err != nil {
			return nil, err
		}
		if n, err := addPEMCerts(pool, b); err != nil || n == 0 {
			return nil, fmt.Errorf("tls-ca-cert-file %s: %w", file, cmpErr(err, "no PEM certificate in it"))
		}
	}
	if dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("tls-ca-cert-dir: %w", err)
		}
		total := 0
		for _, e := range entries {
			if !e.Type().IsRegular() && e.Type()&os.ModeSymlink == 0 {
				continue
			}
			path := filepath.Join(dir, e.Name())
			b, err := readPEMFile("tls-ca-cert-dir", path)
			if err != nil {
				return nil, err
			}
			n, err := addPEMCerts(pool, b)
			if err != nil {
				return nil, fmt.Errorf("tls-ca-cert-dir: %s: %w", path, err)
			}
			total += n
		}
		if total == 0 {
			return nil, fmt.Errorf("tls-ca-cert-dir %s: no PEM certificate in it", dir)
		}
	}
	return pool, nil
}

func cmpErr(err error, otherwise string) error {
	if err != nil {
		return err
	}
	return errors.New(otherwise)
}

// addPEMCerts adds the CERTIFICATE blocks of b to pool: a block that does
// not parse is an error, not passed over.
func addPEMCerts(pool *x509.CertPool, b []byte) (int, error) {
	n := 0
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return n, nil
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return n, err
		}
		pool.AddCert(cert)
		n++
	}
}

// ReloadTLS reads the certificate, key and CA files again, as SIGHUP does
// in ohbloom serve. If they do not load, the configuration in use stays,
// and the error says why. New connections get the new configuration.
func (s *Server) ReloadTLS() error {
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	if s.tls.current.Load() == nil {
		return errors.New("server: TLS is not configured")
	}
	cfg, err := s.tls.settings.build()
	if err != nil {
		return fmt.Errorf("server: reloading TLS (the configuration in use stays): %w", err)
	}
	s.tls.current.Store(cfg)
	return nil
}

// The tls-* settings and the Unix socket's are in the settings registry
// (config.go): read from a configuration file, shown by CONFIG GET (not
// tls-key-file-pass, a secret), and the tls-* files and choices changed
// by CONFIG SET, together (prepareTLS).

// tlsFields are the tls-* settings CONFIG SET may change, and their
// fields of TLSConfig.
var tlsFields = map[string]func(*TLSConfig) *string{
	"tls-cert-file":     func(t *TLSConfig) *string { return &t.CertFile },
	"tls-key-file":      func(t *TLSConfig) *string { return &t.KeyFile },
	"tls-key-file-pass": func(t *TLSConfig) *string { return &t.KeyFilePass },
	"tls-ca-cert-file":  func(t *TLSConfig) *string { return &t.CACertFile },
	"tls-ca-cert-dir":   func(t *TLSConfig) *string { return &t.CACertDir },
	"tls-auth-clients":  func(t *TLSConfig) *string { return &t.AuthClients },
	"tls-protocols":     func(t *TLSConfig) *string { return &t.Protocols },
	"tls-ciphers":       func(t *TLSConfig) *string { return &t.Ciphers },
}

func init() {
	for name, field := range tlsFields {
		p := &configParam{name: name, tls: true, secret: name == "tls-key-file-pass",
			load: func(c *Config, v string) error { *field(&c.TLS) = v; return nil },
			get: func(s *Server) string {
				s.tls.mu.Lock()
				defer s.tls.mu.Unlock()
				return *field(&s.tls.settings)
			}}
		switch name {
		case "tls-auth-clients":
			p.def = "yes"
			p.get = func(s *Server) string {
				s.tls.mu.Lock()
				defer s.tls.mu.Unlock()
				if v := strings.ToLower(s.tls.settings.AuthClients); v != "" {
					return v
				}
				return "yes"
			}
		case "tls-protocols":
			p.def = "TLSv1.2 TLSv1.3"
			p.get = func(s *Server) string {
				s.tls.mu.Lock()
				defer s.tls.mu.Unlock()
				if v := s.tls.settings.Protocols; strings.TrimSpace(v) != "" {
					return v
				}
				return "TLSv1.2 TLSv1.3"
			}
		}
		registerConfig(p)
	}
	// tls-port is on bind's host (port's), and shows the listener's port
	// once served. Not derived, unlike port: CONFIG REWRITE writes it, or
	// a file written with tls-cert-file would not start without it.
	registerConfig(&configParam{name: "tls-port", def: "0",
		load: func(c *Config, v string) error {
			n, err := parseBounded(v, 0, 65535)
			if err != nil || n == 0 {
				c.TLSAddr = ""
				return err
			}
			host, _, _ := splitHostPort(c.addr())
			c.TLSAddr = joinHostPort(host, int(n))
			return nil
		},
		get: func(s *Server) string {
			if _, port := listenerHostPort(s.tls.addr.Load()); port > 0 {
				return strconv.Itoa(port)
			}
			if _, port, err := splitHostPort(s.cfg.TLSAddr); err == nil {
				return strconv.Itoa(port)
			}
			return "0"
		}})
	registerConfig(&configParam{name: "unixsocket", def: "",
		load: func(c *Config, v string) error { c.UnixSocket = v; return nil },
		get: func(s *Server) string {
			if p := s.unixPath.Load(); p != "" {
				return p
			}
			return s.cfg.UnixSocket
		}})
	registerConfig(&configParam{name: "unixsocketperm", def: "0",
		load: func(c *Config, v string) error {
			n, err := strconv.ParseUint(v, 8, 32)
			if err != nil || n > 0o777 {
				return errors.New("argument must be octal permissions, at most 777")
			}
			c.UnixSocketPerm = os.FileMode(n)
			return nil
		},
		get: func(s *Server) string { return strconv.FormatUint(uint64(s.cfg.UnixSocketPerm), 8) }})
}

// prepareTLS is CONFIG SET of tls-* settings, changed together as Redis's
// multi-parameter CONFIG SET does (a new certificate and its key at
// once): every file is read again, and if the new configuration does not
// load, the one in use stays and nothing is changed. It returns what puts
// the new configuration in use, or the setting the error concerns, for
// Redis's "CONFIG SET failed (possibly related to argument '...')".
func (s *Server) prepareTLS(changes [][2]string) (apply func(), name string, err error) {
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	if s.tls.current.Load() == nil {
		return nil, changes[0][0], errors.New("TLS is not enabled: start the server with tls-port and tls-cert-file")
	}
	next := s.tls.settings
	for _, kv := range changes {
		*tlsFields[kv[0]](&next) = kv[1]
	}
	cfg, err := next.build()
	if err != nil {
		s.cfg.Logger.Warn("CONFIG SET of TLS failed; the configuration in use stays", "err", err)
		return nil, changes[0][0], err
	}
	return func() {
		s.tls.mu.Lock()
		s.tls.settings = next
		s.tls.current.Store(cfg)
		s.tls.mu.Unlock()
	}, "", nil
}

// errTLSOnPlainPort refuses a TLS handshake on a plaintext listener; the
// client's TLS library reports the reply as not TLS, and the connection
// closes.
var errTLSOnPlainPort = errors.New("ERR Protocol error: a TLS handshake on a plaintext port")

// tlsRecordHandshake is the first byte of a TLS handshake record.
const tlsRecordHandshake = 0x16

// plaintextOnTLSPort is what a client whose first bytes are not TLS is
// told on the TLS port, in plaintext, before the connection closes.
const plaintextOnTLSPort = "-ERR Protocol error: plaintext on a TLS port\r\n"

// serveTLSConn runs the handshake of a connection accepted on a TLS
// listener, within the handshake timeout, and then serves it on the
// goroutine that ran it.
func (s *Server) serveTLSConn(ls *loops, raw net.Conn, c *connection) {
	cfg := s.tls.current.Load()
	g, ok := ls.conns.register(s, raw, c, tlsReadBytes)
	if !ok {
		return
	}
	if !c.reserve(tlsConnBytes) {
		s.logOutput.log(s.cfg.Logger, "a TLS connection would exceed max-buffered-bytes (or max-unauth-buffered-bytes); closed it", "remote", c.addr)
		ls.conns.end(s, g, c)
		return
	}
	g.fixed = tlsConnBytes
	raw.SetDeadline(time.Now().Add(s.tls.handshakeTimeout))
	tc := tls.Server(raw, cfg)
	if err := tc.HandshakeContext(context.Background()); err != nil {
		var rhe tls.RecordHeaderError
		if errors.As(err, &rhe) && rhe.Conn != nil {
			// Not TLS at all: most likely a plaintext Redis client, which
			// can read why.
			rhe.Conn.Write([]byte(plaintextOnTLSPort))
		}
		s.cfg.Logger.Debug("TLS handshake failed", "remote", c.addr, "err", err)
		ls.conns.end(s, g, c)
		return
	}
	raw.SetDeadline(time.Time{})
	ls.conns.run(s, g, c, tc)
}
