package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// ListenUnix listens on a Unix socket at path, as Redis's unixsocket, with
// permissions perm (unixsocketperm) if not 0: they are set after the
// socket is made, as Redis does, so for that instant the umask rules. The
// socket file is removed when the listener closes (Shutdown closes it).
//
// A socket file left at path by a server that crashed is replaced; one a
// live server listens on is an error, as is any file at path that is not
// a socket, which is never removed.
func ListenUnix(path string, perm os.FileMode) (net.Listener, error) {
	if perm&^os.ModePerm != 0 {
		return nil, fmt.Errorf("unixsocketperm %o: not a permission (at most 777)", perm)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if perm != 0 {
		if err := os.Chmod(path, perm); err != nil {
			ln.Close()
			return nil, fmt.Errorf("unixsocketperm: %w", err)
		}
	}
	return ln, nil
}

// staleDialTimeout bounds the probe of a socket file found at the path: a
// live server answers a connect at once, even a busy one (the kernel
// queues it).
const staleDialTimeout = time.Second

// removeStaleSocket removes a socket file at path that nobody listens on.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unixsocket: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("unixsocket %s: a file that is not a socket is there; not removing it", path)
	}
	conn, err := net.DialTimeout("unix", path, staleDialTimeout)
	if err == nil {
		conn.Close()
		return fmt.Errorf("unixsocket %s: a server is listening on it", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("unixsocket %s: probing the socket file left there: %w", path, err)
	}
	// Nobody listens: left by a server that did not shut down.
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unixsocket %s: removing the stale socket file: %w", path, err)
	}
	return nil
}

// atomicString is a string read and written by several goroutines.
type atomicString struct{ p atomic.Pointer[string] }

func (a *atomicString) Store(s string) { a.p.Store(&s) }

func (a *atomicString) Load() string {
	if p := a.p.Load(); p != nil {
		return *p
	}
	return ""
}
