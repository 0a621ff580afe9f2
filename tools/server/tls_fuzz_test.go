package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

// FuzzTLSFirstBytes sends arbitrary first bytes to the TLS port and to
// the plaintext port, split at random into writes, then ends its side.
// The server must close each connection (a handshake that fails, a
// plaintext client on the TLS port, a ClientHello on the plaintext one)
// at once when the client's side ends, and keep nothing of it: no
// connection counted, no byte of the budget reserved.
func FuzzTLSFirstBytes(f *testing.F) {
	hello := clientHello(f)
	for _, seed := range [][]byte{
		hello, hello[:5], hello[:len(hello)/2], {}, []byte("PING\r\n"), []byte("*1\r\n$4\r\nPING\r\n"),
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), {0x16, 0x03, 0x01, 0xff, 0xff}, {0x16, 0x03, 0x03, 0x00, 0x00},
		{0x80, 0x2e, 0x01, 0x00, 0x02}, {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28},
		append([]byte("AUTH pw\r\n"), hello...),
	} {
		f.Add(seed, uint64(len(seed)))
	}
	p := newTestPKI(f)
	cfg := p.serverTLS()
	cfg.AuthClients = "optional"
	// Far past the client's deadline: a connection must be closed because
	// its bytes are not a handshake or its side ended, never because the
	// handshake's time ran out, which would hide a stall.
	cfg.HandshakeTimeout = time.Hour
	s, err := New(Config{Password: "pw", TLS: cfg, MaxRequestBytes: 4096, MaxBufferedBytes: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	secure, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go s.Serve(plain)
	go s.ServeTLS(secure)
	f.Cleanup(func() { s.Shutdown(context.Background()) })
	f.Fuzz(func(t *testing.T, data []byte, splits uint64) {
		for _, addr := range []string{secure.Addr().String(), plain.Addr().String()} {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			done := make(chan error, 1)
			go func() {
				_, err := io.Copy(io.Discard, conn) // until the server closes
				done <- err
			}()
			for rest, sp := data, splits; len(rest) > 0; {
				sp = sp*6364136223846793005 + 1442695040888963407
				n := min(len(rest), 1+int(sp>>58))
				if _, err := conn.Write(rest[:n]); err != nil {
					break // the server closed it
				}
				rest = rest[n:]
			}
			conn.(*net.TCPConn).CloseWrite()
			var ne net.Error
			if err := <-done; errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the server did not close the connection to %s after %q", addr, data)
			}
			conn.Close()
			waitFor(t, "the server to close the connection", func() bool { return s.clients.Load() == 0 })
			if b, u := s.buffered.Load(), s.unauthBuffered.Load(); b != 0 || u != 0 {
				t.Fatalf("%d bytes (%d unauthenticated) still reserved after %q", b, u, data)
			}
		}
	})
}
